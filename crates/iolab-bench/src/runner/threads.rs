//! Where workers run: on the calling thread (`--threads 0` or 1), or each on its
//! own thread with the calling thread as collector. The collector merges
//! interval samples, takes the CPU baseline when the ramp ends, passes
//! Ctrl-C on, and watches for ops that never complete (`--op-timeout`).
//!
//! Worker threads own what they use (`Arc`), so a worker stuck in the
//! kernel can be left behind: the run ends without it, and the process
//! exit takes it down.

use super::control::{timeout_error, EngineFactory, RunControl, Shared};
use super::intervals::Merger;
use super::plan::Plan;
use super::worker::{work, Msg, WorkerOut};
use crate::error::Result;
use iolab::engine::{Engine, EngineConfig, EngineFile, EngineOpts};
use iolab::file::OpenSpec;
use iolab::usage::Usage;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// How often the collector looks at the stop flag and the watch, at most.
const TICK: Duration = Duration::from_millis(100);

/// How long the collector waits for workers once the run must end (an op
/// timed out, or Ctrl-C) before it leaves the rest behind.
const GRACE: Duration = Duration::from_secs(1);

/// What the workers did.
pub(super) struct Collected {
    /// The workers that reported back.
    pub outs: Vec<WorkerOut>,
    /// Process usage over the measured phase.
    pub usage: Usage,
    /// Merged interval samples.
    pub merger: Merger,
}

/// Opens the plan's files and builds its engine.
fn build_engine(
    sh: &Shared,
    plan: &Plan,
    factory: &dyn EngineFactory,
) -> iolab::Result<Box<dyn Engine>> {
    let spec = &sh.spec;
    let mut files = Vec::with_capacity(plan.files.len());
    for pf in &plan.files {
        let f = &sh.prep.files[pf.idx];
        // A run without files (the null engine's) holds /dev/null open in
        // their place: its engine never touches them.
        let path = if spec.no_files {
            std::path::Path::new("/dev/null")
        } else {
            f.path.as_path()
        };
        let sync = match spec.open_sync {
            None => iolab::file::SyncOpen::None,
            Some(crate::spec::OpenSync::Sync) => iolab::file::SyncOpen::Sync,
            Some(crate::spec::OpenSync::Dsync) => iolab::file::SyncOpen::Dsync,
        };
        let file = iolab::file::open_with(
            path,
            OpenSpec {
                direct: spec.direct && !spec.no_files,
                write: spec.op.writes(),
            },
            sync,
        )?;
        if !spec.no_files {
            iolab::cache::advise(&file, spec.pattern.hint())?;
            if spec.noatime {
                iolab::kernel::fs::set_noatime(&file, &f.path)?;
            }
        }
        files.push(EngineFile {
            path: f.path.clone(),
            file,
            len: f.len,
        });
    }
    let cfg = EngineConfig {
        files,
        qd: spec.qd,
        max_len: spec.max_len() as usize,
        mem_align: sh
            .prep
            .align
            .map(|a| a.mem)
            .unwrap_or_else(iolab::usage::page_size),
        direct: spec.direct,
        opts: EngineOpts {
            access: spec.pattern.hint(),
            ..spec.engine_opts
        },
    };
    factory.build(spec, plan.worker, cfg)
}

/// Lets the calling thread run only on the CPUs `spec.cpus` gives
/// `worker` (fio's `cpus_allowed`), before its engine's buffers are
/// allocated; returns the CPUs it could use before (None: not pinned).
fn pin(spec: &crate::spec::WorkloadSpec, worker: u32) -> iolab::Result<Option<Vec<usize>>> {
    let Some(p) = &spec.cpus else {
        return Ok(None);
    };
    let before = iolab::primitives::allowed_cpus()?;
    iolab::primitives::pin_to_cpus(&p.of_worker(worker))?;
    Ok(Some(before))
}

/// The one worker runs on the calling thread, pinned for the run only.
pub(super) fn inline(
    sh: &Shared,
    ctl: &RunControl,
    plan: Plan,
    factory: &dyn EngineFactory,
) -> Result<Collected> {
    let before = pin(&sh.spec, plan.worker)?;
    let out = run_inline(sh, ctl, plan, factory);
    if let Some(cpus) = before {
        iolab::primitives::pin_to_cpus(&cpus)?;
    }
    out
}

/// [`inline`]'s run, between pinning and unpinning.
fn run_inline(
    sh: &Shared,
    ctl: &RunControl,
    plan: Plan,
    factory: &dyn EngineFactory,
) -> Result<Collected> {
    let eng = build_engine(sh, &plan, factory)?;
    if let Some(f) = ctl.before_start {
        f();
    }
    let (tx, rx) = mpsc::channel();
    let u0 = Usage::now();
    let out = work(sh, ctl.stop, plan, eng, sh.start.clock(), &tx);
    let usage = Usage::now().since(&out.usage_at_start.unwrap_or(u0));
    drop(tx);
    let mut merger = Merger::new(1, sh.spec.interval_ns.unwrap_or(1));
    for m in rx.try_iter() {
        if let Msg::Interval(p) = m {
            merger.add(p, ctl.on_interval);
        }
    }
    Ok(Collected {
        outs: vec![out],
        usage,
        merger,
    })
}

/// Each worker on its own thread; the calling thread collects.
pub(super) fn spawned(
    sh: Arc<Shared>,
    ctl: &RunControl,
    plans: Vec<Plan>,
    factory: Arc<dyn EngineFactory>,
) -> Collected {
    let n = plans.len();
    let (tx, rx) = mpsc::channel::<Msg>();
    let barrier = Arc::new(Barrier::new(n + 1));
    let two_step = ctl.before_start.is_some();
    for plan in plans {
        let (sh, tx, barrier, factory) = (sh.clone(), tx.clone(), barrier.clone(), factory.clone());
        std::thread::spawn(move || {
            let eng = pin(&sh.spec, plan.worker).and_then(|_| build_engine(&sh, &plan, &*factory));
            barrier.wait();
            if two_step {
                barrier.wait();
            }
            // Not this thread's own zero: with many more threads than CPUs
            // the barrier releases them over seconds, and each timing its
            // own second stretched a 1 s run to 8 s (256 threads).
            let clock = sh.start.clock();
            let out = match eng {
                Ok(e) if !sh.abort.load(Ordering::Relaxed) => {
                    Some(Box::new(work(&sh, &sh.stop, plan, e, clock, &tx)))
                }
                Ok(_) => None,
                Err(e) => {
                    sh.fail(e.into());
                    None
                }
            };
            let _ = tx.send(Msg::Done(out));
        });
    }
    drop(tx);
    // Engines are built (or failed) once everyone passes the barrier.
    barrier.wait();
    if let Some(f) = ctl.before_start {
        // Every engine is built: meet the other ranks, then release the
        // workers (they wait at the barrier a second time).
        f();
        barrier.wait();
    }
    collect(&sh, ctl, &rx, n)
}

/// The collector's loop: until every worker is done, or the run must end
/// and the grace time for the rest has passed.
fn collect(sh: &Shared, ctl: &RunControl, rx: &mpsc::Receiver<Msg>, n: usize) -> Collected {
    let spec = &sh.spec;
    let mut merger = Merger::new(n, spec.interval_ns.unwrap_or(1));
    let ramp_end = sh.start.clock().base + Duration::from_nanos(spec.ramp_ns);
    let mut u0 = sh.start.usage();
    let mut ramp_pending = spec.ramp_ns > 0;
    let tick = spec.op_timeout_ns.map_or(TICK, |t| {
        TICK.min(Duration::from_nanos(t / 4).max(Duration::from_millis(1)))
    });
    let mut ending: Option<Instant> = None;
    let mut outs = Vec::new();
    let mut finished = 0;
    while finished < n {
        let timeout = if ramp_pending {
            ramp_end.saturating_duration_since(Instant::now()).min(tick)
        } else {
            tick
        };
        match rx.recv_timeout(timeout) {
            Ok(Msg::Interval(p)) => merger.add(p, ctl.on_interval),
            Ok(Msg::Done(o)) => {
                finished += 1;
                outs.extend(o.map(|b| *b));
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        if ramp_pending && Instant::now() >= ramp_end {
            u0 = Usage::now();
            ramp_pending = false;
        }
        if ctl.stop.load(Ordering::Relaxed) {
            sh.stop.store(true, Ordering::Relaxed);
        }
        if let Some(limit) = spec.op_timeout_ns {
            watch(sh, limit);
        }
        if sh.stop.load(Ordering::Relaxed) || sh.abort.load(Ordering::Relaxed) {
            let since = *ending.get_or_insert_with(Instant::now);
            if since.elapsed() > GRACE {
                break;
            }
        }
    }
    Collected {
        outs,
        usage: Usage::now().since(&u0),
        merger,
    }
}

/// Ends the run with an error naming the first op in flight longer than
/// `limit` ns.
fn watch(sh: &Shared, limit: u64) {
    if sh.abort.load(Ordering::Relaxed) {
        return;
    }
    for (w, watch) in sh.watches.iter().enumerate() {
        if let Some(o) = watch.overdue(limit) {
            let idx = sh.spec.files_of(w as u32).start + o.file as usize;
            let path = sh.prep.files[idx].path.clone();
            sh.fail(timeout_error(path, sh.spec.bs as u32, limit, &o));
            return;
        }
    }
}
