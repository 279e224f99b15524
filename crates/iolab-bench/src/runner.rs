//! The runner: `threads` workers, each keeping up to `qd` ops in flight on
//! its own engine, submitting `batch_submit` ops per call and waiting for
//! `batch_complete` completions when the queue is full. Completions may come
//! back in any order; each is matched to its op by tag (= buffer slot).
//!
//! Latency of an op is measured from just before the `submit` call that
//! hands it to the engine until just after the `reap` call that returns its
//! completion. The hot loop below is hand-written for that reason: no
//! allocation, two clock reads per submit/reap round, not per op.

use crate::error::{BenchError, Result};
use crate::metrics::{new_histogram, CpuUsage, LatencySummary};
use crate::offsets::OffsetGen;
use crate::prepare::Prepared;
use crate::record::{IntervalSample, RunMetrics};
use crate::spec::{AccessPattern, OpMix, WorkloadSpec};
use hdrhistogram::Histogram;
use iolab::buf::BufId;
use iolab::engine::{self, Done, Engine, EngineConfig, EngineFile, EngineOpts, FileId, Op, OpKind};
use iolab::file::OpenSpec;
use iolab::os::Usage;
use iolab::pattern::Pattern;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

/// Builds the engine of each worker. The default builds the real engines;
/// tests substitute engines that count or misbehave.
pub trait EngineFactory: Sync {
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

/// The hot loop's clock: nanoseconds since its creation.
struct OpClock {
    clock: quanta::Clock,
    base_raw: u64,
    base: Instant,
}

impl OpClock {
    fn new() -> Self {
        let clock = quanta::Clock::new();
        let base_raw = clock.raw();
        OpClock {
            base: Instant::now(),
            base_raw,
            clock,
        }
    }

    #[inline(always)]
    fn now_ns(&self) -> u64 {
        self.clock.delta_as_nanos(self.base_raw, self.clock.raw())
    }
}

/// One interval of one worker.
struct IntervalPart {
    idx: u64,
    ops: u64,
    bytes: u64,
    hist: Histogram<u64>,
}

enum Msg {
    Interval(IntervalPart),
    Done,
}

/// What a worker hands back.
struct WorkerOut {
    hist: Histogram<u64>,
    ops: u64,
    reads: u64,
    writes: u64,
    bytes: u64,
    /// Time of the last completion.
    end: Instant,
    /// Start of the measured phase (after ramp).
    measure_start: Instant,
    /// CPU of this worker's SQPOLL kernel thread during the run, ns.
    sqpoll_ns: Option<u64>,
}

/// The work one worker does.
struct Plan {
    worker: u32,
    file_idx: usize,
    path: PathBuf,
    gen: OffsetGen,
    budget: Option<u64>,
    pattern: Option<Pattern>,
}

fn plans(spec: &WorkloadSpec, prep: &Prepared, size: u64) -> Result<Vec<Plan>> {
    let w = spec.workers() as u64;
    let blocks = size / spec.bs;
    let total_ops = match (spec.stop.ops, spec.stop.bytes, spec.stop.time_ns) {
        (Some(o), _, _) => Some(o),
        (None, Some(b), _) => Some(b.div_ceil(spec.bs)),
        (None, None, Some(_)) => None,
        // No limit at all: the data once.
        (None, None, None) => Some(blocks * prep.files.len() as u64),
    };
    let mut v = Vec::new();
    for t in 0..w {
        let (file_idx, first, count) = if spec.file_per_thread {
            (t as usize, 0, blocks)
        } else if spec.pattern == AccessPattern::Rand {
            (0, 0, blocks)
        } else {
            let a = t * blocks / w;
            let b = (t + 1) * blocks / w;
            (0, a, b - a)
        };
        if count == 0 {
            return Err(BenchError::Usage(format!(
                "--threads {w}: more threads than {} blocks of --bs {} to share",
                blocks, spec.bs
            )));
        }
        let one_pass = spec.stop == crate::spec::StopRule::default();
        let budget = if one_pass && spec.pattern != AccessPattern::Rand && !spec.file_per_thread {
            // One pass: each worker exactly its own slice.
            Some(count)
        } else {
            total_ops.map(|o| o / w + u64::from(t < o % w))
        };
        let seed = spec.seed ^ (t + 1).wrapping_mul(0xD6E8_FEB8_6659_FD93);
        v.push(Plan {
            worker: t as u32,
            file_idx,
            path: prep.files[file_idx].path.clone(),
            gen: OffsetGen::new(spec.pattern, first, count, spec.bs, seed),
            budget,
            pattern: prep.files[file_idx].pattern,
        });
    }
    Ok(v)
}

/// Shared state of one run, read by all workers.
struct Shared<'a> {
    spec: &'a WorkloadSpec,
    ctl: &'a RunControl<'a>,
    abort: AtomicBool,
    first_error: Mutex<Option<BenchError>>,
}

impl Shared<'_> {
    fn fail(&self, e: BenchError) {
        let mut g = self.first_error.lock().unwrap_or_else(|p| p.into_inner());
        if g.is_none() {
            *g = Some(e);
        }
        self.abort.store(true, Ordering::Relaxed);
    }
}

fn build_engine(
    spec: &WorkloadSpec,
    prep: &Prepared,
    plan: &Plan,
    factory: &dyn EngineFactory,
) -> iolab::Result<Box<dyn Engine>> {
    let f = &prep.files[plan.file_idx];
    let file = iolab::file::open(
        &f.path,
        OpenSpec {
            direct: spec.direct,
            write: spec.op.writes(),
        },
    )?;
    let cfg = EngineConfig {
        files: vec![EngineFile {
            path: f.path.clone(),
            file,
            len: f.len,
        }],
        qd: spec.qd,
        max_len: spec.bs as usize,
        mem_align: prep
            .align
            .map(|a| a.mem)
            .unwrap_or_else(iolab::os::page_size),
        direct: spec.direct,
        opts: EngineOpts {
            access: spec.pattern.hint(),
            ..spec.engine_opts
        },
    };
    factory.build(spec, plan.worker, cfg)
}

/// The hot loop of one worker.
fn work(
    sh: &Shared,
    mut plan: Plan,
    mut eng: Box<dyn Engine>,
    tx: &mpsc::Sender<Msg>,
) -> WorkerOut {
    let spec = sh.spec;
    let qd = spec.qd as usize;
    let batch = spec.batch_submit as usize;
    let bc = spec.batch_complete.max(1) as usize;
    let bs = spec.bs as u32;
    let verify = spec.verify && eng.caps().fills_buffer;
    let read_pct = match spec.op {
        OpMix::Read => 100,
        OpMix::Write => 0,
        OpMix::Rw { read_pct } => read_pct as u64,
    };
    let mut free: Vec<u32> = (0..qd as u32).rev().collect();
    let mut started = vec![0u64; qd];
    let mut meta: Vec<(u64, OpKind)> = vec![(0, OpKind::Read); qd];
    let mut pending: Vec<Op> = Vec::with_capacity(batch);
    let mut done: Vec<Done> = Vec::with_capacity(qd);
    let mut inflight = 0usize;
    let mut issued = 0u64;

    let mut hist = new_histogram();
    let (mut ops, mut reads, mut writes, mut bytes) = (0u64, 0u64, 0u64, 0u64);
    // Per-op time stamps are ns since `t_begin` from the TSC where it is
    // invariant (quanta), else clock_gettime: two reads per submit/reap round.
    let clock = OpClock::new();
    // The SQPOLL thread names itself when it first runs, which may be after
    // this point: then it has used (almost) nothing yet, so start from 0.
    let sqpoll = sh.spec.engine_opts.uring.sqpoll;
    let sqpoll0 = if sqpoll {
        iolab::os::sqpoll_cpu_ns().unwrap_or(0)
    } else {
        0
    };
    let t_begin = clock.base;
    let ramp_end = spec.ramp_ns;
    let mut measuring = spec.ramp_ns == 0;
    let deadline = spec.stop.time_ns.map(|t| ramp_end + t);
    let interval = spec.interval_ns;
    let mut iv_next = interval.map(|i| ramp_end + i);
    let mut iv_idx = 0u64;
    let mut iv_hist = interval.map(|_| new_histogram());
    let (mut iv_ops, mut iv_bytes) = (0u64, 0u64);
    let mut end = 0u64;
    let mut stopping = false;
    let mut combined = false;

    loop {
        let budget_left = plan.budget.is_none_or(|b| issued < b);
        // The deadline is checked against the last completion time: a third
        // clock read per op would cost more than the null engine's whole op.
        if !stopping
            && (sh.ctl.stop.load(Ordering::Relaxed)
                || sh.abort.load(Ordering::Relaxed)
                || deadline.is_some_and(|d| end >= d))
        {
            stopping = true;
        }
        if !stopping {
            while pending.len() < batch && plan.budget.is_none_or(|b| issued < b) {
                let Some(slot) = free.pop() else { break };
                let off = plan.gen.next_offset();
                let kind = if read_pct == 100 || (read_pct > 0 && plan.gen.coin() < read_pct) {
                    OpKind::Read
                } else {
                    OpKind::Write
                };
                if kind == OpKind::Write {
                    let p = plan.pattern.unwrap_or(Pattern::new(0));
                    p.fill(&mut eng.buf_mut(BufId(slot))[..bs as usize], off);
                }
                meta[slot as usize] = (off, kind);
                pending.push(Op {
                    tag: slot as u64,
                    kind,
                    file: FileId(0),
                    offset: off,
                    len: bs,
                    buf: BufId(slot),
                });
                issued += 1;
            }
            let exhausted = plan.budget.is_some_and(|b| issued >= b);
            if !pending.is_empty() && (pending.len() >= batch || free.is_empty() || exhausted) {
                let t = clock.now_ns();
                for op in &pending {
                    started[op.tag as usize] = t;
                }
                // When the runner will wait right after submitting (queue
                // full, or no more work), one combined call lets io_uring
                // submit and wait in a single io_uring_enter.
                let res = if free.is_empty() || exhausted {
                    let min = bc.min(inflight + pending.len());
                    done.clear();
                    combined = true;
                    eng.submit_and_reap(&pending, min, &mut done)
                        .map(|(n, _)| n)
                } else {
                    eng.submit(&pending)
                };
                match res {
                    Ok(n) => {
                        inflight += n;
                        pending.drain(..n);
                    }
                    Err(e) => {
                        sh.fail(e.into());
                        stopping = true;
                        combined = false;
                    }
                }
            }
        }
        if !combined {
            if inflight == 0 {
                if stopping || (!budget_left && pending.is_empty()) {
                    break;
                }
                continue;
            }
            let min = if stopping || free.is_empty() || plan.budget.is_some_and(|b| issued >= b) {
                bc.min(inflight)
            } else {
                0
            };
            done.clear();
            if let Err(e) = eng.reap(min, &mut done) {
                sh.fail(e.into());
                break;
            }
        }
        combined = false;
        if done.is_empty() {
            continue;
        }
        let t = clock.now_ns();
        end = t;
        if !measuring && t >= ramp_end {
            measuring = true;
            hist.reset();
            (ops, reads, writes, bytes) = (0, 0, 0, 0);
        }
        for d in &done {
            let slot = d.tag as usize;
            inflight -= 1;
            free.push(slot as u32);
            let (off, kind) = meta[slot];
            let kname = if kind == OpKind::Read {
                "read"
            } else {
                "write"
            };
            let n = match d.res {
                Ok(n) => n,
                Err(errno) => {
                    sh.fail(BenchError::OpFailed {
                        kind: kname,
                        path: plan.path.clone(),
                        offset: off,
                        len: bs,
                        errno,
                    });
                    stopping = true;
                    continue;
                }
            };
            if n < bs {
                sh.fail(BenchError::Short {
                    kind: kname,
                    path: plan.path.clone(),
                    offset: off,
                    len: bs,
                    got: n,
                });
                stopping = true;
                continue;
            }
            if verify && kind == OpKind::Read {
                if let Some(p) = plan.pattern {
                    if let Err(m) = p.verify(&eng.buf(BufId(slot as u32))[..n as usize], off) {
                        sh.fail(BenchError::Io(iolab::Error::Verify {
                            path: plan.path.clone(),
                            offset: m.offset,
                            expected: m.expected,
                            got: m.got,
                        }));
                        stopping = true;
                        continue;
                    }
                }
            }
            let lat = t.saturating_sub(started[slot]);
            hist.saturating_record(lat.max(1));
            ops += 1;
            bytes += n as u64;
            if kind == OpKind::Read {
                reads += 1;
            } else {
                writes += 1;
            }
            if let Some(h) = iv_hist.as_mut() {
                h.saturating_record(lat.max(1));
                iv_ops += 1;
                iv_bytes += n as u64;
            }
        }
        if let (Some(next), Some(step)) = (iv_next, interval) {
            if t >= next {
                let mut next = next;
                while t >= next {
                    let h = iv_hist.as_mut().expect("interval histogram");
                    let part = IntervalPart {
                        idx: iv_idx,
                        ops: iv_ops,
                        bytes: iv_bytes,
                        hist: h.clone(),
                    };
                    let _ = tx.send(Msg::Interval(part));
                    h.reset();
                    (iv_ops, iv_bytes) = (0, 0);
                    iv_idx += 1;
                    next += step;
                }
                iv_next = Some(next);
            }
        }
    }
    // Ops still pending were never handed to the engine: nothing to wait for.
    if inflight > 0 {
        let _ = eng.reap(inflight, &mut done);
    }
    // Read before the engine (and so its SQPOLL thread) goes away.
    let sqpoll_ns = if sqpoll {
        iolab::os::sqpoll_cpu_ns().map(|b| b.saturating_sub(sqpoll0))
    } else {
        None
    };
    WorkerOut {
        sqpoll_ns,
        hist,
        ops,
        reads,
        writes,
        bytes,
        end: t_begin + Duration::from_nanos(end),
        measure_start: t_begin + Duration::from_nanos(ramp_end),
    }
}

/// Merges interval parts into samples, once every worker has reported.
struct IntervalMerger {
    workers: usize,
    step_ns: u64,
    parts: std::collections::BTreeMap<u64, (usize, u64, u64, Histogram<u64>)>,
    out: Vec<IntervalSample>,
}

impl IntervalMerger {
    fn add(&mut self, p: IntervalPart, on: Option<&(dyn Fn(&IntervalSample) + Sync)>) {
        let e = self
            .parts
            .entry(p.idx)
            .or_insert_with(|| (0, 0, 0, new_histogram()));
        e.0 += 1;
        e.1 += p.ops;
        e.2 += p.bytes;
        let _ = e.3.add(&p.hist);
        if e.0 == self.workers {
            let (_, ops, bytes, h) = self.parts.remove(&p.idx).expect("present");
            let s = self.sample(p.idx, ops, bytes, &h);
            if let Some(f) = on {
                f(&s);
            }
            self.out.push(s);
        }
    }

    fn sample(&self, idx: u64, ops: u64, bytes: u64, h: &Histogram<u64>) -> IntervalSample {
        let secs = self.step_ns as f64 / 1e9;
        let l = LatencySummary::of(h);
        IntervalSample {
            t_ms: (idx + 1) * self.step_ns / 1_000_000,
            mib_per_s: bytes as f64 / secs / (1 << 20) as f64,
            iops: ops as f64 / secs,
            p50_ns: l.p50_ns,
            p99_ns: l.p99_ns,
            mean_ns: l.mean_ns,
        }
    }

    /// Intervals some worker never closed (it ended first) are dropped:
    /// they would understate the rate.
    fn finish(mut self) -> Vec<IntervalSample> {
        self.out.sort_by_key(|s| s.t_ms);
        self.out
    }
}

/// Runs `spec` once on prepared files; `size` is the bytes of each file in use.
pub fn run_once(
    spec: &WorkloadSpec,
    prep: &Prepared,
    size: u64,
    resident_before: f64,
    factory: &dyn EngineFactory,
    ctl: &RunControl,
) -> Result<RunMetrics> {
    crate::prepare::validate(spec)?;
    let plans = plans(spec, prep, size)?;
    let sh = Shared {
        spec,
        ctl,
        abort: AtomicBool::new(false),
        first_error: Mutex::new(None),
    };
    let (tx, rx) = mpsc::channel::<Msg>();
    let mut merger = IntervalMerger {
        workers: plans.len(),
        step_ns: spec.interval_ns.unwrap_or(1),
        parts: Default::default(),
        out: Vec::new(),
    };
    let (outs, usage) = if spec.threads == 0 {
        // The calling thread does the work itself.
        let plan = plans.into_iter().next().expect("one plan");
        let eng = build_engine(spec, prep, &plan, factory)?;
        let u0 = Usage::now();
        let out = work(&sh, plan, eng, &tx);
        drop(tx);
        for m in rx.try_iter() {
            if let Msg::Interval(p) = m {
                merger.add(p, ctl.on_interval);
            }
        }
        (vec![out], Usage::now().since(&u0))
    } else {
        let barrier = Barrier::new(plans.len() + 1);
        std::thread::scope(|s| -> Result<_> {
            let mut handles = Vec::new();
            for plan in plans {
                let tx = tx.clone();
                let (sh, barrier) = (&sh, &barrier);
                handles.push(s.spawn(move || {
                    let eng = build_engine(spec, prep, &plan, factory);
                    barrier.wait();
                    let out = match eng {
                        Ok(e) if !sh.abort.load(Ordering::Relaxed) => Some(work(sh, plan, e, &tx)),
                        Ok(_) => None,
                        Err(e) => {
                            sh.fail(e.into());
                            None
                        }
                    };
                    let _ = tx.send(Msg::Done);
                    out
                }));
            }
            drop(tx);
            // Engines are built (or failed) once everyone passes the barrier.
            barrier.wait();
            let t0 = Instant::now();
            let mut u0 = Usage::now();
            let mut ramp_pending = spec.ramp_ns > 0;
            let ramp_end = t0 + Duration::from_nanos(spec.ramp_ns);
            let mut finished = 0;
            while finished < handles.len() {
                let timeout = if ramp_pending {
                    ramp_end.saturating_duration_since(Instant::now())
                } else {
                    Duration::from_millis(200)
                };
                match rx.recv_timeout(timeout) {
                    Ok(Msg::Interval(p)) => merger.add(p, ctl.on_interval),
                    Ok(Msg::Done) => finished += 1,
                    Err(mpsc::RecvTimeoutError::Timeout) => {}
                    Err(mpsc::RecvTimeoutError::Disconnected) => break,
                }
                if ramp_pending && Instant::now() >= ramp_end {
                    u0 = Usage::now();
                    ramp_pending = false;
                }
            }
            let usage = Usage::now().since(&u0);
            let outs: Vec<WorkerOut> = handles
                .into_iter()
                .filter_map(|h| h.join().unwrap_or(None))
                .collect();
            Ok((outs, usage))
        })?
    };
    if let Some(e) = sh
        .first_error
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
    {
        return Err(e);
    }
    let mut hist = new_histogram();
    let (mut ops, mut reads, mut writes, mut bytes) = (0, 0, 0, 0);
    let sqpoll_ns = outs.iter().filter_map(|o| o.sqpoll_ns).reduce(|a, b| a + b);
    let mut start: Option<Instant> = None;
    let mut end: Option<Instant> = None;
    for o in &outs {
        let _ = hist.add(&o.hist);
        ops += o.ops;
        reads += o.reads;
        writes += o.writes;
        bytes += o.bytes;
        start = Some(start.map_or(o.measure_start, |s: Instant| s.min(o.measure_start)));
        end = Some(end.map_or(o.end, |e: Instant| e.max(o.end)));
    }
    let duration_ns = match (start, end) {
        (Some(s), Some(e)) => e.saturating_duration_since(s).as_nanos() as u64,
        _ => 0,
    };
    let secs = duration_ns.max(1) as f64 / 1e9;
    Ok(RunMetrics {
        duration_ns,
        bytes,
        ops,
        read_ops: reads,
        write_ops: writes,
        errors: 0,
        mib_per_s: bytes as f64 / secs / (1 << 20) as f64,
        iops: ops as f64 / secs,
        latency: LatencySummary::of(&hist),
        latency_hist: Some(hist),
        cpu: CpuUsage::from_usage(&usage, duration_ns, ops, sqpoll_ns),
        resident_before,
        intervals: merger.finish(),
        interrupted: ctl.stop.load(Ordering::Relaxed),
    })
}
