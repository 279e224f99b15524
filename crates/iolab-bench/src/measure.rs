//! The one measurement loop. Every command that measures with the runner
//! (`bench`, `bench --vs fio`, `iolab fio`, the lab, each MPI rank) comes
//! through here, so a run is measured the same way whoever asks:
//!
//! for each repeat: the caller's set-up for the run ([`Hooks::before`]) →
//! the spec's cache state (or the one the caller set) → the device's
//! counters → [`crate::runner::run_once`] → the device's counters again →
//! the caller's look at the run ([`Hooks::after`]).
//!
//! A run that fails part-way keeps what it measured: it is the last run of
//! [`Measured::runs`] and its error is [`Measured::error`]; the repeats
//! stop there. Ctrl-C stops the repeats too, keeping every finished run.
//! At least one run is always made, so a measurement that returns `Ok` has
//! one.

use crate::error::{BenchError, Result};
use crate::prepare::{self, Prepared};
use crate::record::{IntervalSample, RunMetrics};
use crate::runner::{run_once, EngineFactory, RealEngines, RunControl};
use crate::spec::WorkloadSpec;
use std::any::Any;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The cache state before each run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Cache {
    /// Set the spec's cache state (`cold`, `warm`, `as-is`) before every run.
    Set,
    /// The caller set it already; this is the resident fraction it found.
    Given(f64),
}

/// What the caller does around each run. Both steps are optional.
pub trait Hooks {
    /// Before a run, ahead of its cache state: whatever it returns is held
    /// until the run ends (a CPU binding to give back, a process to stop).
    fn before(&mut self) -> Result<Option<Box<dyn Any>>> {
        Ok(None)
    }
    /// After a run, with what it measured (progress, warnings).
    fn after(&mut self, _run: &RunMetrics) {}
}

/// No hooks.
pub struct NoHooks;
impl Hooks for NoHooks {}

/// How to measure one prepared configuration.
pub struct Measure<'a> {
    /// Set (by Ctrl-C) to stop: the run in progress ends early and no
    /// further repeat starts.
    pub stop: &'a AtomicBool,
    /// Runs to make (at least one).
    pub repeat: u32,
    /// The cache state before each run.
    pub cache: Cache,
    /// Called live with each interval's sample (`--interval` shown live).
    pub on_interval: Option<&'a (dyn Fn(&IntervalSample) + Sync)>,
    /// Called once every worker is ready, just before they start (the
    /// ranks of a multi-rank run meet there).
    pub before_start: Option<&'a dyn Fn()>,
    /// Builds each worker's engine (tests substitute their own).
    pub engines: Arc<dyn EngineFactory>,
}

impl<'a> Measure<'a> {
    /// `repeat` runs with the real engines, the spec's cache state set
    /// before each, nothing shown live.
    pub fn new(stop: &'a AtomicBool, repeat: u32) -> Self {
        Measure {
            stop,
            repeat,
            cache: Cache::Set,
            on_interval: None,
            before_start: None,
            engines: RealEngines::shared(),
        }
    }
}

/// What [`runs`] measured.
#[derive(Debug, Default)]
pub struct Measured {
    /// Every run made, the failed one last (with what it measured).
    pub runs: Vec<RunMetrics>,
    /// Why the repeats stopped early, if a run failed.
    pub error: Option<BenchError>,
}

impl Measured {
    /// Ends the repeats on `e`: an error of the whole measurement when no
    /// run was made, else the reason the runs made stopped.
    fn fail(mut self, e: BenchError) -> Result<Measured> {
        if self.runs.is_empty() {
            return Err(e);
        }
        self.error = Some(e);
        Ok(self)
    }

    /// The runs, or the error if a run failed.
    pub fn complete(self) -> Result<Vec<RunMetrics>> {
        match self.error {
            Some(e) => Err(e),
            None => Ok(self.runs),
        }
    }

    /// The one run of a single-run measurement (the last, if several), or
    /// the error if it failed.
    pub fn one(self) -> Result<RunMetrics> {
        let mut runs = self.complete()?;
        Ok(runs.pop().expect("a measurement makes at least one run"))
    }
}

/// Measures `spec` on the prepared files, `m.repeat` times (see the module
/// documentation for the steps). An error before anything was measured
/// (the cache state cannot be set, the first run fails before its first op)
/// comes back as `Err`; any later one is [`Measured::error`], next to the
/// runs made.
pub fn runs(
    spec: &WorkloadSpec,
    prep: &Prepared,
    m: &Measure<'_>,
    hooks: &mut dyn Hooks,
) -> Result<Measured> {
    let mut out = Measured::default();
    for i in 0..m.repeat.max(1) {
        // The first run always starts (one interrupted before it began
        // returns at once, marked interrupted); later ones only if not
        // stopped.
        if i > 0 && m.stop.load(Ordering::Relaxed) {
            break;
        }
        let _held = match hooks.before() {
            Ok(h) => h,
            Err(e) => return out.fail(e),
        };
        let resident = match m.cache {
            Cache::Set => match prepare::set_cache(spec, prep, spec.file_size) {
                Ok(r) => r,
                Err(e) => return out.fail(e),
            },
            Cache::Given(r) => r,
        };
        let ctl = RunControl {
            stop: m.stop,
            on_interval: m.on_interval,
            before_start: m.before_start,
        };
        let dev = crate::devstat::Snapshot::of_file(&prep.files[0].path);
        let (mut run, error) = match run_once(
            spec,
            prep,
            spec.file_size,
            resident,
            m.engines.clone(),
            &ctl,
        ) {
            Ok(run) => (run, None),
            Err(BenchError::Partial { metrics, error }) => (*metrics, Some(*error)),
            Err(e) => return out.fail(e),
        };
        run.device = Some(dev.finish());
        hooks.after(&run);
        out.runs.push(run);
        if error.is_some() {
            out.error = error;
            break;
        }
    }
    Ok(out)
}
