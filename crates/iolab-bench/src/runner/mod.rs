//! The runner: `threads` workers, each keeping up to `qd` ops in flight on
//! its own engine. The core owns batching, timing and accounting; an engine
//! only does ops (fio's split).
//!
//! - [`plan`]: which file, offsets and op budget each worker gets;
//! - [`worker`]: the hot loop of one worker (submit, reap, account);
//! - [`intervals`]: `--interval` samples, cut per worker and merged;
//! - [`threads`]: where workers run, and the collector that watches them;
//! - [`control`]: what workers share (stop, errors, the `--op-timeout` watch);
//! - [`merge`]: the workers' counts merged into one [`RunMetrics`];
//! - [`clock`]: the hot loop's clock.
//!
//! A run that meets an error still hands back what it measured:
//! [`BenchError::Partial`] carries the metrics next to the error.

mod clock;
mod control;
mod intervals;
mod merge;
mod plan;
mod threads;
mod worker;

pub use control::FIRST_ERRORS_KEPT;

use crate::error::{BenchError, Result};
use crate::prepare::Prepared;
use crate::record::{IntervalSample, RunMetrics};
use crate::spec::WorkloadSpec;
use control::Shared;
use iolab::engine::{self, Engine, EngineConfig};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Builds the engine of each worker. The default builds the real engines;
/// tests substitute engines that count or misbehave.
pub trait EngineFactory: Send + Sync {
    /// The engine for `worker`.
    fn build(
        &self,
        spec: &WorkloadSpec,
        worker: u32,
        cfg: EngineConfig,
    ) -> iolab::Result<Box<dyn Engine>>;
}

/// Builds `spec.engine` with [`iolab::engine::build`].
pub struct RealEngines;

impl RealEngines {
    /// The real engines, as the runner takes a factory.
    pub fn shared() -> Arc<dyn EngineFactory> {
        Arc::new(RealEngines)
    }
}

impl EngineFactory for RealEngines {
    fn build(
        &self,
        spec: &WorkloadSpec,
        _worker: u32,
        cfg: EngineConfig,
    ) -> iolab::Result<Box<dyn Engine>> {
        engine::build(spec.engine, cfg)
    }
}

/// What a running measurement listens to and reports to.
pub struct RunControl<'a> {
    /// Set (by Ctrl-C) to stop early; what was measured is kept.
    pub stop: &'a AtomicBool,
    /// Called live with each interval's merged sample (`--interval`).
    pub on_interval: Option<&'a (dyn Fn(&IntervalSample) + Sync)>,
}

/// Runs `spec` once on prepared files; `size` is the bytes of each file in use.
///
/// An error during the run (an op failed without `--continue-on-error`, an
/// op outlived `--op-timeout`) comes back as [`BenchError::Partial`] with
/// what was measured until then.
pub fn run_once(
    spec: &WorkloadSpec,
    prep: &Prepared,
    size: u64,
    resident_before: f64,
    factory: Arc<dyn EngineFactory>,
    ctl: &RunControl,
) -> Result<RunMetrics> {
    crate::prepare::validate(spec)?;
    let plans = plan::plans(spec, prep, size)?;
    let cache_before = crate::residency::Snapshot::take(prep, size)?;
    // Outside the measured window.
    clock::calibrate();
    let sh = Arc::new(Shared::new(spec, prep, plans.len()));
    // A watched run needs a collector thread apart from the worker.
    let collected = if spec.threads == 0 && spec.op_timeout_ns.is_none() {
        let plan = plans.into_iter().next().expect("one plan");
        threads::inline(&sh, ctl, plan, &*factory)?
    } else {
        threads::spawned(sh.clone(), ctl, plans, factory)
    };
    let ran = !collected.outs.is_empty();
    let mut m = merge::metrics(collected, resident_before, sh.first_errors());
    m.interrupted = ctl.stop.load(Ordering::Relaxed);
    let cache = crate::residency::check(spec, prep, size, &cache_before, m.ops)?;
    m.resident_after = cache.resident_after;
    m.residency = cache.files;
    m.cache_held = cache.held;
    let Some(e) = sh.take_error() else {
        return Ok(m);
    };
    if matches!(e, BenchError::OpTimeout { .. }) {
        m.errors += 1;
    }
    if !ran {
        return Err(e);
    }
    Err(BenchError::Partial {
        metrics: Box::new(m),
        error: Box::new(e),
    })
}
