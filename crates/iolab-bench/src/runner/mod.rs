//! The runner: `threads` workers, each keeping up to `qd` ops in flight on
//! its own engine. The core owns batching, timing and accounting; an engine
//! only does ops (fio's split).
//!
//! - `plan`: which file, offsets and op budget each worker gets;
//! - `worker`: the hot loop of one worker (submit, reap, account);
//! - `intervals`: `--interval` samples, cut per worker and merged;
//! - `threads`: where workers run, and the collector that watches them;
//! - `control`: what workers share (stop, errors, the `--op-timeout` watch);
//! - `merge`: the workers' counts merged into one [`RunMetrics`];
//! - `clock`: the hot loop's clock;
//! - `split`: per-direction latency and slat/clat, only when asked;
//! - `gate`: what else holds an op back (fio's thinktime, rates,
//!   iodepth_low, flow, latency target), only when asked;
//! - `pick`: each op's file and length when they vary;
//! - `trim`: trims (hole punching), only for trim workloads;
//! - `lat`: which ops are timed (`--lat`) and their recording in runs.
//!
//! A run that meets an error still hands back what it measured:
//! [`BenchError::Partial`] carries the metrics next to the error.

mod clock;
mod control;
mod extras;
mod gate;
mod intervals;
mod lat;
mod merge;
mod pick;
mod plan;
mod split;
mod sync;
mod threads;
mod trim;
mod worker;

pub use control::{EngineFactory, RealEngines, RunControl, FIRST_ERRORS_KEPT};

use crate::error::{BenchError, Result};
use crate::prepare::Prepared;
use crate::record::RunMetrics;
use crate::spec::WorkloadSpec;
use control::Shared;
use std::sync::atomic::Ordering;
use std::sync::Arc;

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
    let cache_before = crate::residency::Snapshot::of_run(spec, prep, size)?;
    // Outside the measured window.
    clock::calibrate();
    // No --cpus: a run that sleeps on the device goes next to its
    // completion interrupts (crate::placement says why).
    let placed = prep
        .files
        .first()
        .and_then(|f| crate::placement::place(spec, &f.path));
    let placed_spec;
    let spec = match &placed {
        Some(p) => {
            placed_spec = WorkloadSpec {
                cpus: Some(p.pin.clone()),
                ..spec.clone()
            };
            &placed_spec
        }
        None => spec,
    };
    let sh = Arc::new(Shared::new(spec, prep, plans.len()));
    // One worker runs on the calling thread, so a single-threaded run is a
    // single-threaded process (the kernel skips a file reference per call
    // there). A watched run, or one whose intervals are shown live, needs a
    // collector thread apart from the worker.
    let collected =
        if spec.threads <= 1 && spec.op_timeout_ns.is_none() && ctl.on_interval.is_none() {
            let plan = plans.into_iter().next().expect("one plan");
            threads::inline(&sh, ctl, plan, &*factory)?
        } else {
            threads::spawned(sh.clone(), ctl, plans, factory)
        };
    let ran = !collected.outs.is_empty();
    let mut m = merge::metrics(collected, resident_before, sh.first_errors());
    m.interrupted = ctl.stop.load(Ordering::Relaxed);
    m.placement = placed.map(|p| p.why);
    let cache = crate::residency::check(spec, prep, size, &cache_before, m.ops)?;
    m.resident_after = cache.resident_after;
    m.residency = cache.files;
    m.cache_held = cache.held;
    outcome(m, sh.take_error(), ran)
}

/// The run's result: its metrics, or its error with what was measured
/// until then (none when no worker ran).
fn outcome(mut m: RunMetrics, error: Option<BenchError>, ran: bool) -> Result<RunMetrics> {
    let Some(e) = error else {
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
