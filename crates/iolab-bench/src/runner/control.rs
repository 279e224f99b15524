//! What the caller hands the runner (the engine factory, the stop flag),
//! and the state every worker of one run shares: the stop and abort flags, the
//! error policy (`--continue-on-error`), and the watch the collector keeps
//! on ops in flight (`--op-timeout`).

use crate::error::BenchError;
use crate::prepare::Prepared;
use crate::record::IntervalSample;
use crate::spec::WorkloadSpec;
use iolab::engine::{self, Engine, EngineConfig};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

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
        // The per-op copy into GPU memory is the caller's factory's work
        // (the benchmark has no GPU code): never measure without it.
        if let Some(n) = spec.copy_to_gpu {
            return Err(iolab::Error::Unsupported {
                feature: format!("--mem cuda:{n}"),
                why: "this measurement has no copy into GPU memory (only `iolab bench` makes one)"
                    .into(),
            });
        }
        engine::build(spec.engine, cfg)
    }
}

/// What a running measurement listens to and reports to.
pub struct RunControl<'a> {
    /// Set (by Ctrl-C) to stop early; what was measured is kept.
    pub stop: &'a AtomicBool,
    /// Called live with each interval's merged sample (`--interval`).
    pub on_interval: Option<&'a (dyn Fn(&IntervalSample) + Sync)>,
    /// Called on the calling thread once every worker's engine is built
    /// (files open, buffers faulted in) and just before they start: the
    /// ranks of a multi-rank run meet here, so set-up never staggers their
    /// windows (IOR starts its timers right after a barrier).
    pub before_start: Option<&'a dyn Fn()>,
}

impl<'a> RunControl<'a> {
    /// Stops on `stop`, with no live intervals and no start hook (what
    /// most callers want).
    pub fn new(stop: &'a AtomicBool) -> Self {
        RunControl {
            stop,
            on_interval: None,
            before_start: None,
        }
    }
}

/// How many errors a record keeps word for word (the rest are counted).
pub const FIRST_ERRORS_KEPT: usize = 10;

/// What the workers of one run share (owned, so a worker stuck in the kernel
/// can be left behind when the run ends without it).
pub(super) struct Shared {
    /// The run.
    pub spec: WorkloadSpec,
    /// Its files.
    pub prep: Prepared,
    /// Stop early (copied from the caller's flag by the collector).
    pub stop: AtomicBool,
    /// A fatal error happened: everyone stops.
    pub abort: AtomicBool,
    /// One watch per worker (slots are empty without `--op-timeout`).
    pub watches: Vec<Watch>,
    /// When the run started, for every worker alike.
    pub start: super::clock::StartMark,
    first_error: Mutex<Option<BenchError>>,
    first_errors: Mutex<Vec<String>>,
}

impl Shared {
    /// Shared state for `workers` workers.
    pub fn new(spec: &WorkloadSpec, prep: &Prepared, workers: usize) -> Self {
        let slots = if spec.op_timeout_ns.is_some() {
            spec.qd as usize
        } else {
            0
        };
        Shared {
            spec: spec.clone(),
            prep: prep.clone(),
            stop: AtomicBool::new(false),
            abort: AtomicBool::new(false),
            watches: (0..workers).map(|_| Watch::new(slots)).collect(),
            start: Default::default(),
            first_error: Mutex::new(None),
            first_errors: Mutex::new(Vec::new()),
        }
    }

    /// A fatal error: the first one is kept and every worker stops.
    pub fn fail(&self, e: BenchError) {
        self.log(&e);
        let mut g = self.first_error.lock().unwrap_or_else(|p| p.into_inner());
        if g.is_none() {
            *g = Some(e);
        }
        self.abort.store(true, Ordering::Relaxed);
    }

    /// An op failed. With `--continue-on-error` it is logged and the run goes
    /// on; otherwise it ends the run. Returns true when the worker must stop.
    pub fn op_error(&self, e: BenchError) -> bool {
        if self.spec.continue_on_error {
            self.log(&e);
            false
        } else {
            self.fail(e);
            true
        }
    }

    fn log(&self, e: &BenchError) {
        let mut v = self.first_errors.lock().unwrap_or_else(|p| p.into_inner());
        if v.len() < FIRST_ERRORS_KEPT {
            v.push(e.to_string());
        }
    }

    /// The fatal error, if any (taken).
    pub fn take_error(&self) -> Option<BenchError> {
        self.first_error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }

    /// The first errors, word for word.
    pub fn first_errors(&self) -> Vec<String> {
        self.first_errors
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// One op in flight as the watchdog sees it.
#[derive(Default)]
struct SlotWatch {
    /// Start, ns on the worker's clock + 1 (0: the slot is idle).
    started: AtomicU64,
    offset: AtomicU64,
    write: AtomicBool,
    /// Which of the worker's files.
    file: AtomicU32,
}

/// What a worker publishes about its ops in flight, so that the collector can
/// notice an op that never completes (`--op-timeout`): a worker blocked in
/// the kernel cannot notice it itself.
pub(super) struct Watch {
    base: OnceLock<Instant>,
    slots: Box<[SlotWatch]>,
}

/// An op that has been in flight longer than the limit.
pub(super) struct Overdue {
    /// How long so far, ns.
    pub waited_ns: u64,
    /// Its offset.
    pub offset: u64,
    /// A write (else a read).
    pub write: bool,
    /// Which of the worker's files (its engine's file index).
    pub file: u32,
}

impl Watch {
    fn new(slots: usize) -> Self {
        Watch {
            base: OnceLock::new(),
            slots: (0..slots).map(|_| SlotWatch::default()).collect(),
        }
    }

    /// The worker's clock starts at `base`.
    pub fn set_base(&self, base: Instant) {
        let _ = self.base.set(base);
    }

    /// Op `op` handed to the engine at `t` ns. A no-op without
    /// `--op-timeout` (no slots).
    #[inline]
    pub fn start(&self, op: &iolab::engine::Op, t: u64) {
        if let Some(s) = self.slots.get(op.tag as usize) {
            let write = op.kind == iolab::engine::OpKind::Write;
            s.offset.store(op.offset, Ordering::Relaxed);
            s.file.store(op.file.0, Ordering::Relaxed);
            s.write.store(write, Ordering::Relaxed);
            s.started.store(t + 1, Ordering::Release);
        }
    }

    /// Op in `slot` completed.
    #[inline]
    pub fn end(&self, slot: usize) {
        if let Some(s) = self.slots.get(slot) {
            s.started.store(0, Ordering::Release);
        }
    }

    /// The oldest op in flight, if it has waited more than `limit_ns`.
    pub fn overdue(&self, limit_ns: u64) -> Option<Overdue> {
        let now = self.base.get()?.elapsed().as_nanos() as u64;
        let (i, started) = self
            .slots
            .iter()
            .enumerate()
            .map(|(i, s)| (i, s.started.load(Ordering::Acquire)))
            .filter(|&(_, t)| t != 0)
            .min_by_key(|&(_, t)| t)?;
        let s = &self.slots[i];
        let waited_ns = now.saturating_sub(started - 1);
        (waited_ns > limit_ns).then(|| Overdue {
            waited_ns,
            offset: s.offset.load(Ordering::Relaxed),
            write: s.write.load(Ordering::Relaxed),
            file: s.file.load(Ordering::Relaxed),
        })
    }
}

/// The error for an op that did not complete in time.
pub(super) fn timeout_error(path: PathBuf, len: u32, limit_ns: u64, o: &Overdue) -> BenchError {
    BenchError::OpTimeout {
        kind: if o.write { "write" } else { "read" },
        path,
        offset: o.offset,
        len,
        limit_ms: limit_ns / 1_000_000,
        waited_ms: o.waited_ns / 1_000_000,
    }
}
