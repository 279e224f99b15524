//! What every system measurement shares: its error type, the scale and
//! configuration of a run, the timing loop that finds how many repeats fill
//! the scale's target time, and small helpers.

use iolab_bench::stats::Stats;
use std::hint::black_box;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// What can go wrong in a system measurement.
#[derive(Debug, thiserror::Error)]
pub enum SysError {
    /// A kernel call through the iolab layer failed.
    #[error(transparent)]
    Iolab(#[from] iolab::Error),
    /// A standard-library I/O call failed; `what` says which step.
    #[error("{what}: {source}")]
    Io {
        /// The step.
        what: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// This machine cannot run the measurement (it is skipped).
    #[error("{0}")]
    Unsupported(String),
    /// No measurement or group has this name.
    #[error("unknown measurement '{0}'")]
    Unknown(String),
    /// The user asked to stop.
    #[error("cancelled")]
    Cancelled,
}

/// Result of this module.
pub type Result<T, E = SysError> = std::result::Result<T, E>;

/// Wraps an I/O error with the step that failed. The step's text becomes a
/// `String` only on error, so hot loops pay nothing for it.
pub(crate) fn io_err<S: Into<String>>(what: S) -> impl FnOnce(std::io::Error) -> SysError {
    move |source| SysError::Io {
        what: what.into(),
        source,
    }
}

/// How big the experiments are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// Tiny: for tests (seconds for everything, debug build).
    Smoke,
    /// `--quick`: under 45 s for everything.
    Quick,
    /// The default: under 3 minutes for everything.
    Full,
}

impl Scale {
    /// Name as recorded (`smoke`, `quick`, `full`).
    pub fn name(self) -> &'static str {
        match self {
            Scale::Smoke => "smoke",
            Scale::Quick => "quick",
            Scale::Full => "full",
        }
    }

    /// Picks by scale.
    pub fn pick<T>(self, smoke: T, quick: T, full: T) -> T {
        match self {
            Scale::Smoke => smoke,
            Scale::Quick => quick,
            Scale::Full => full,
        }
    }

    /// Wall time one repeat of a cheap operation aims for, ns.
    fn target_ns(self) -> u64 {
        self.pick(2_000_000, 15_000_000, 60_000_000)
    }
}

/// How to run.
#[derive(Debug)]
pub struct Config<'a> {
    /// Experiment size.
    pub scale: Scale,
    /// Repeats per measurement (at least 1).
    pub repeat: usize,
    /// Directory under which a temporary directory for files is made.
    pub dir: PathBuf,
    /// Set (e.g. by Ctrl-C) to stop as soon as possible.
    pub stop: &'a AtomicBool,
}

impl Config<'_> {
    pub(crate) fn check_stop(&self) -> Result<()> {
        if self.stop.load(Ordering::Relaxed) {
            Err(SysError::Cancelled)
        } else {
            Ok(())
        }
    }

    pub(crate) fn reps(&self) -> usize {
        self.repeat.max(1)
    }

    /// Times `f`, returning ns per call. Finds a count that takes about the
    /// scale's target time (at most `max_ops`), then runs it once timed.
    pub(crate) fn per_op(&self, max_ops: u64, f: &mut dyn FnMut() -> Result<()>) -> Result<f64> {
        let target = self.scale.target_ns();
        let mut n = 1u64;
        loop {
            self.check_stop()?;
            let t = Instant::now();
            for _ in 0..n {
                f()?;
            }
            let dt = t.elapsed().as_nanos() as u64;
            if dt >= target / 8 || n >= max_ops {
                // Scale up to the target from this pilot run, then measure.
                let per = dt.max(1) as f64 / n as f64;
                let m = ((target as f64 / per) as u64).clamp(1, max_ops.max(1));
                let t = Instant::now();
                for _ in 0..m {
                    f()?;
                }
                return Ok(t.elapsed().as_nanos() as f64 / m as f64);
            }
            n = (n * 4).min(max_ops);
        }
    }

    /// Repeats `per_op` and returns the statistics across repeats.
    pub(crate) fn repeat_per_op(
        &self,
        max_ops: u64,
        f: &mut dyn FnMut() -> Result<()>,
    ) -> Result<Stats> {
        let mut v = Vec::with_capacity(self.reps());
        for _ in 0..self.reps() {
            v.push(self.per_op(max_ops, f)?);
        }
        Ok(Stats::of(&v))
    }

    /// Repeats `f` (which returns one value) and returns the statistics.
    pub(crate) fn repeat_values(&self, f: &mut dyn FnMut() -> Result<f64>) -> Result<Stats> {
        let mut v = Vec::with_capacity(self.reps());
        for _ in 0..self.reps() {
            self.check_stop()?;
            v.push(f()?);
        }
        Ok(Stats::of(&v))
    }
}

/// Keeps a value alive and opaque to the optimiser.
#[inline]
pub(crate) fn keep<T>(x: T) -> T {
    black_box(x)
}

/// A temporary directory under `cfg.dir`, removed on drop.
pub(crate) fn temp_dir(cfg: &Config<'_>) -> Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix(".iolab-sys-")
        .tempdir_in(&cfg.dir)
        .map_err(io_err(format!(
            "create a temporary directory in {}",
            cfg.dir.display()
        )))
}

/// A `/proc/meminfo` field, bytes.
pub fn meminfo_bytes(field: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/meminfo").ok()?;
    s.lines()
        .find(|l| l.starts_with(field) && l[field.len()..].starts_with(':'))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<u64>().ok())
        .map(|kb| kb * 1024)
}
