//! One worker's loop: keep up to `qd` ops in flight on its own engine,
//! submitting `batch_submit` ops per call and waiting for `batch_complete`
//! completions when the queue is full. Completions may come back in any
//! order; each is matched to its op by tag (= buffer slot).
//!
//! Latency of an op is measured from just before the `submit` call that
//! hands it to the engine until just after the `reap` call that returns its
//! completion. This loop is hand-written for that reason: no allocation, two
//! clock reads per submit/reap round, not per op.

use super::clock::OpClock;
use super::control::{Shared, Watch};
use super::extras::Extras;
use super::intervals::{Part, Sampler};
use super::lat::{Runs, Timing, UNTIMED};
use super::plan::Plan;
use super::split::Splitter;
use crate::error::BenchError;
use crate::metrics::new_histogram;
use crate::spec::OpMix;
use hdrhistogram::Histogram;
use iolab::buf::BufId;
use iolab::engine::{Done, Engine, FileId, Op, OpKind};
use iolab::pattern::Pattern;
use iolab::usage::Usage;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

/// What a worker tells the collector.
pub(super) enum Msg {
    /// An interval closed.
    Interval(Part),
    /// The worker ended (None: it never ran, its engine failed).
    Done(Option<Box<WorkerOut>>),
}

/// What a worker hands back.
pub(super) struct WorkerOut {
    /// Latency of the measured ops.
    pub hist: Histogram<u64>,
    /// Measured ops, reads, writes, bytes.
    pub ops: u64,
    /// Of `ops`, reads.
    pub reads: u64,
    /// Of `ops`, writes.
    pub writes: u64,
    /// Bytes moved by `ops`.
    pub bytes: u64,
    /// Ops that failed (or came back short, or did not verify).
    pub errors: u64,
    /// Time of the last completion.
    pub end: Instant,
    /// Start of the measured phase (after ramp).
    pub measure_start: Instant,
    /// CPU of this worker's SQPOLL kernel thread in the measured phase, ns.
    pub sqpoll_ns: Option<u64>,
    /// Waits its engine met by spinning on the CQ ring (SQPOLL).
    pub spin_waits: u64,
    /// Process usage when the measured phase began (runs on the calling
    /// thread with a ramp take it here; threaded runs, in the collector).
    pub usage_at_start: Option<Usage>,
    /// This worker thread's own CPU and its rings' kernel threads'.
    pub cpu: crate::cpu::WorkerCpuOut,
    /// What memory the engine's buffers got.
    pub mem: iolab::mem::Backing,
    /// Latency by direction and slat/clat, when asked.
    pub split: Option<crate::metrics::LatSplit>,
    /// Latency of each fsync/fdatasync, when the spec asks for them.
    pub syncs: Option<Histogram<u64>>,
    /// Of `bytes`, those read.
    pub read_bytes: u64,
    /// Trims: their latencies, count and bytes.
    pub trims: Option<(Histogram<u64>, u64, u64)>,
    /// How deep the queue was.
    pub depths: crate::depths::Depths,
    /// The depth a latency target settled on.
    pub latency_depth: Option<u32>,
    /// Every measured I/O, when the spec logs them.
    pub oplog: Option<Vec<crate::oplog::OpRecord>>,
}

/// Does one worker's share of the run and reports how it went.
pub(super) fn work(
    sh: &Shared,
    stop: &AtomicBool,
    plan: Plan,
    eng: Box<dyn Engine>,
    clock: OpClock,
    tx: &Sender<Msg>,
) -> WorkerOut {
    let mut w = Worker::new(sh, stop, plan, eng, clock);
    loop {
        let budget_left = w.budget_left();
        w.check_stop();
        if !w.stopping {
            w.issue();
        }
        if !w.combined {
            match w.wait(budget_left) {
                Wait::Finished => break,
                Wait::Again => continue,
                Wait::Reaped => {}
            }
        }
        w.combined = false;
        if w.done.is_empty() {
            continue;
        }
        let t = w.clock.now_ns();
        w.complete(t);
        w.iv.tick(t, |p| {
            let _ = tx.send(Msg::Interval(p));
        });
    }
    w.finish()
}

enum Wait {
    /// Nothing in flight and nothing more to do.
    Finished,
    /// Nothing in flight yet: go round again.
    Again,
    /// `done` holds what `reap` returned.
    Reaped,
}

/// Counts of the measured ops (reads are the ops that are not writes,
/// their bytes those that writes did not move).
struct Tally {
    hist: Histogram<u64>,
    ops: u64,
    writes: u64,
    bytes: u64,
    write_bytes: u64,
}

struct Worker<'a> {
    sh: &'a Shared,
    stop: &'a AtomicBool,
    watch: &'a Watch,
    plan: Plan,
    eng: Box<dyn Engine>,
    clock: OpClock,
    batch: usize,
    bc: usize,
    bs: u32,
    verify: bool,
    /// `write_once`: which buffer slots already hold their fill.
    filled: Option<Vec<bool>>,
    ramp_end: u64,
    deadline: Option<u64>,
    free: Vec<u32>,
    /// Each slot's op's start, ns ([`UNTIMED`]: not timed).
    started: Vec<u64>,
    /// Which ops are timed (`--lat`).
    timing: Timing,
    /// How ops are issued and counted.
    mode: Mode,
    /// Each slot's op: offset, kind, and which of the plan's files.
    meta: Vec<(u64, OpKind, u32)>,
    /// The file the next op goes to (round robin over the plan's files).
    next_file: usize,
    pending: Vec<Op>,
    done: Vec<Done>,
    inflight: usize,
    issued: u64,
    tally: Tally,
    errors: u64,
    iv: Sampler,
    measuring: bool,
    end: u64,
    stopping: bool,
    combined: bool,
    sqpoll0: Option<u64>,
    usage_at_start: Option<Usage>,
    cpu: crate::cpu::WorkerCpu,
    /// fio's extras: pacing, files and sizes per op, trims, depth
    /// counts, the per-op log (each costs nothing when not asked for).
    x: Extras,
    /// Mixed jobs and timed submits only (fio's per-direction, slat, clat).
    split: Option<Box<Splitter>>,
    /// fsync/fdatasync every N writes, when asked.
    syncer: Option<super::sync::Syncer>,
}

/// How a worker issues and counts its ops, fixed for the run.
#[derive(Clone, Copy)]
struct Mode {
    /// Percentage of reads.
    read_pct: u64,
    /// A buffered cold run: each new pass over a file starts evicted.
    evict_each_pass: bool,
    /// One file, only reads of one size, no eviction per pass, no trims:
    /// each op needs only an offset.
    simple: bool,
    /// Ops are issued one at a time, each checked (paced runs, syncs,
    /// trims).
    one_by_one: bool,
    /// A completion of `bs` bytes is all there is to check (no verify, no
    /// varying sizes).
    plain_check: bool,
    /// `--op-timeout`: the collector watches the ops in flight.
    watching: bool,
}

impl Mode {
    fn of(spec: &crate::spec::WorkloadSpec, files: usize, x: &Extras, verify: bool) -> Mode {
        let read_pct = match spec.op {
            OpMix::Read => 100,
            OpMix::Write => 0,
            OpMix::Rw { read_pct } => read_pct as u64,
        };
        let evict_each_pass = spec.cache == crate::spec::CacheMode::Cold && !spec.direct;
        Mode {
            read_pct,
            evict_each_pass,
            simple: read_pct == 100
                && !evict_each_pass
                && files == 1
                && x.pick.is_none()
                && x.lens.is_empty()
                && x.trims.is_none(),
            one_by_one: x.gate.is_some() || spec.sync_every.is_some() || x.trims.is_some(),
            plain_check: !verify && x.lens.is_empty(),
            watching: spec.op_timeout_ns.is_some(),
        }
    }
}

impl Tally {
    fn new() -> Tally {
        Tally {
            hist: new_histogram(),
            ops: 0,
            writes: 0,
            bytes: 0,
            write_bytes: 0,
        }
    }
}

impl<'a> Worker<'a> {
    // Long on purpose: one struct literal, a field a line; what needs
    // working out is in the constructors it calls.
    fn new(
        sh: &'a Shared,
        stop: &'a AtomicBool,
        plan: Plan,
        eng: Box<dyn Engine>,
        clock: OpClock,
    ) -> Self {
        let spec = &sh.spec;
        let qd = spec.qd as usize;
        let watch = &sh.watches[plan.worker as usize];
        watch.set_base(clock.base);
        let measuring = spec.ramp_ns == 0;
        let paths = plan.files.iter().map(|f| f.path.as_path());
        let syncer = super::sync::Syncer::of(spec.sync_every, paths).unwrap_or_else(|e| {
            sh.fail(e);
            None
        });
        let x = Extras::new(sh, &plan);
        let verify = spec.verify && eng.caps().fills_buffer;
        Worker {
            sh,
            stop,
            watch,
            timing: Timing::of(spec.lat, spec.seed ^ plan.worker as u64),
            mode: Mode::of(spec, plan.files.len(), &x, verify),
            verify,
            filled: spec.write_once.then(|| vec![false; qd.max(1)]),
            plan,
            eng,
            clock,
            batch: spec.batch_submit as usize,
            bc: spec.batch_complete.max(1) as usize,
            bs: spec.bs as u32,
            ramp_end: spec.ramp_ns,
            deadline: spec.stop.time_ns.map(|t| spec.ramp_ns + t),
            free: (0..qd as u32).rev().collect(),
            started: vec![UNTIMED; qd],
            meta: vec![(0, OpKind::Read, 0); qd],
            next_file: 0,
            pending: Vec::with_capacity(spec.batch_submit as usize),
            done: Vec::with_capacity(qd),
            inflight: 0,
            issued: 0,
            tally: Tally::new(),
            errors: 0,
            iv: Sampler::new(spec.interval_ns, spec.ramp_ns),
            measuring,
            end: 0,
            stopping: false,
            combined: false,
            // The SQPOLL thread names itself when it first runs, which may
            // be after this point: then it has used (almost) nothing yet.
            sqpoll0: (measuring && spec.engine_opts.uring.sqpoll)
                .then(|| iolab::usage::sqpoll_cpu_ns().unwrap_or(0)),
            usage_at_start: None,
            cpu: crate::cpu::WorkerCpu::start(spec.engine == iolab::engine::EngineKind::Uring),
            x,
            split: Splitter::of(spec),
            syncer,
        }
    }

    /// Whether the budget allows another op. The ramp is not measured, so
    /// ops issued during it do not count against the budget.
    #[inline]
    fn budget_left(&self) -> bool {
        !self.measuring || self.plan.budget.is_none_or(|b| self.issued < b)
    }

    /// Stops on Ctrl-C, on another worker's fatal error, or at the deadline.
    /// The deadline is checked against the last completion time: a third
    /// clock read per op would cost more than the null engine's whole op.
    #[inline]
    fn check_stop(&mut self) {
        if !self.stopping
            && (self.stop.load(Ordering::Relaxed)
                || self.sh.abort.load(Ordering::Relaxed)
                || self.deadline.is_some_and(|d| self.end >= d))
        {
            self.stopping = true;
        }
    }

    /// Fills the next batch and hands it to the engine when it is full, the
    /// queue is full, or the budget is spent.
    fn issue(&mut self) {
        if self.mode.one_by_one {
            self.fill_one_by_one();
        } else {
            self.fill();
        }
        let exhausted = !self.budget_left();
        let full = self.free.is_empty();
        // A paced worker hands over what it has when the next op must wait.
        let held = self.x.gate.as_ref().is_some_and(|g| g.held());
        if self.pending.is_empty()
            || !(self.pending.len() >= self.batch || full || exhausted || held)
        {
            return;
        }
        // A run that times nothing and watches nothing reads no clock here.
        let t = if self.mode.watching || !matches!(self.timing, Timing::Off) {
            let t = self.clock.now_ns();
            self.stamp(t);
            t
        } else {
            0
        };
        // When the runner will wait right after submitting (queue full, or
        // no more work), one combined call lets io_uring submit and wait in
        // a single io_uring_enter.
        // A timed submit (slat) needs the submit call on its own.
        let timed = self.split.as_ref().is_some_and(|s| s.timed());
        let res = if (full || exhausted) && !timed {
            let min = self.bc.min(self.inflight + self.pending.len());
            self.done.clear();
            self.combined = true;
            self.eng
                .submit_and_reap(&self.pending, min, &mut self.done)
                .map(|(n, _)| n)
        } else {
            self.eng.submit(&self.pending)
        };
        match res {
            Ok(n) => {
                if timed {
                    let t1 = self.clock.now_ns();
                    let s = self.split.as_mut().expect("timed");
                    s.submitted(&self.pending[..n], t, t1);
                }
                self.inflight += n;
                self.x.depths.submitted(n, self.inflight);
                self.pending.drain(..n);
            }
            Err(e) => {
                self.sh.fail(e.into());
                self.stopping = true;
                self.combined = false;
            }
        }
    }

    /// Queues as many ops as the batch, the free slots and the budget
    /// allow, counted once rather than tested per op.
    #[inline]
    fn fill(&mut self) {
        let mut n = self.batch.saturating_sub(self.pending.len());
        n = n.min(self.free.len());
        if let (true, Some(b)) = (self.measuring, self.plan.budget) {
            n = n.min(b.saturating_sub(self.issued) as usize);
        }
        if self.mode.simple {
            self.fill_simple(n);
            return;
        }
        for _ in 0..n {
            let Some(slot) = self.free.pop() else { break };
            self.queue_op(slot);
        }
    }

    /// [`Worker::fill`] for a run of reads of one file: each op needs a
    /// slot and an offset, nothing else.
    #[inline]
    fn fill_simple(&mut self, n: usize) {
        for _ in 0..n {
            let Some(slot) = self.free.pop() else { break };
            let off = self.plan.files[0].gen.next_offset();
            self.push_op(slot, off, OpKind::Read, 0, self.bs);
        }
    }

    /// Queues ops one by one, each when the gate releases it and after the
    /// sync due before it; a trim (made at once) ends the fill, so the
    /// clock and the stop flag are looked at again.
    fn fill_one_by_one(&mut self) {
        while self.pending.len() < self.batch && self.budget_left() {
            if !self.released() {
                break;
            }
            let Some(slot) = self.free.pop() else { break };
            if let Some(Err(e)) = self.syncer.as_mut().map(|s| s.sync_if_due()) {
                self.errors += 1;
                if self.sh.op_error(e) {
                    self.stopping = true;
                    self.free.push(slot);
                    break;
                }
            }
            if !self.queue_op(slot) {
                break;
            }
        }
    }

    /// Paced runs: whether the next op may be issued now. Unpaced runs:
    /// always, with no clock read.
    #[inline]
    fn released(&mut self) -> bool {
        let Some(g) = self.x.gate.as_mut() else {
            return true;
        };
        let now = self.clock.now_ns();
        if g.released(now, self.inflight + self.pending.len()) {
            return true;
        }
        // Nothing completes while the worker thinks: the deadline is
        // reached by the clock, not by a completion.
        if self.deadline.is_some_and(|d| now >= d) {
            self.end = self.end.max(now);
        }
        false
    }

    /// Marks the pending ops handed over at `t` ns: their start for the
    /// timed ones, and for the watch of `--op-timeout`.
    #[inline]
    fn stamp(&mut self, t: u64) {
        match &mut self.timing {
            Timing::All => {
                for op in &self.pending {
                    self.started[op.tag as usize] = t;
                }
            }
            Timing::Sampled(p) => {
                for op in &self.pending {
                    self.started[op.tag as usize] = if p.take() { t } else { UNTIMED };
                }
            }
            Timing::Off => {}
        }
        if self.mode.watching {
            for op in &self.pending {
                self.watch.start(op, t);
            }
        }
    }

    /// Paced runs: waits towards the next release when nothing else is to
    /// be done.
    fn wait_for_release(&self) {
        if let Some(g) = &self.x.gate {
            g.wait(self.clock.now_ns(), self.inflight);
        }
    }

    /// The next op's file: each in turn, or as the file service says.
    #[inline]
    fn next_file(&mut self) -> usize {
        if let Some(p) = self.x.pick.as_mut() {
            return p.file();
        }
        let k = self.next_file;
        self.next_file = if k + 1 == self.plan.files.len() {
            0
        } else {
            k + 1
        };
        k
    }

    /// The next offset in file `k`.
    #[inline]
    fn next_offset(&mut self, k: usize) -> u64 {
        let file = &mut self.plan.files[k];
        let off = file.gen.next_offset();
        if self.mode.evict_each_pass && file.gen.pass() != file.pass_seen {
            file.pass_seen = file.gen.pass();
            // Cold means every pass reads from the device: fio reopens its
            // files for each pass and, with invalidate=1, drops their clean
            // pages again (no sync: a write run gets none it did not ask
            // for). Best effort, as fio's: an error leaves it cached.
            let _ = iolab::cache::drop_clean(&file.path);
        }
        off
    }

    /// The length of an op at `off` in direction `dir` (0 read, 1 write,
    /// 2 trim): `bs`, or drawn from the spec's sizes and kept inside the
    /// region (a sequential one then skips the blocks it covers).
    #[inline]
    fn len_at(&mut self, k: usize, off: u64, dir: usize) -> u32 {
        let Some(l) = self.x.pick.as_mut().and_then(|p| p.len(dir)) else {
            return self.bs;
        };
        let bs = self.bs as u64;
        let room = self.sh.spec.file_end().saturating_sub(off).max(bs);
        let len = l.min(room);
        if matches!(self.sh.spec.pattern, crate::spec::AccessPattern::Seq) {
            for _ in 1..len.div_ceil(bs) {
                self.plan.files[k].gen.next_offset();
            }
        }
        len as u32
    }

    /// Picks the next op's file, offset, kind and length and queues it in
    /// `slot`; a trim is made at once (its slot stays free) and returns
    /// false, so the caller looks at the clock and the stop flag again.
    #[inline]
    fn queue_op(&mut self, slot: u32) -> bool {
        let again = self.x.trims.as_mut().and_then(|t| t.take_write());
        let (k, off) = match again {
            Some(at) => at,
            None => {
                let k = self.next_file();
                (k, self.next_offset(k))
            }
        };
        let rp = self.mode.read_pct;
        let kind = if rp == 100 || (rp > 0 && self.plan.files[k].gen.coin() < rp) {
            OpKind::Read
        } else {
            OpKind::Write
        };
        let trim = self.x.trims.is_some() && again.is_none();
        let dir = if trim {
            2
        } else {
            (kind != OpKind::Read) as usize
        };
        let len = self.len_at(k, off, dir);
        if trim {
            self.trim(slot, k, off, len);
            return false;
        }
        if kind == OpKind::Write {
            // With write_once a slot is filled at its first write only (a
            // read into it later leaves other bytes there: any data will do).
            let fresh = match &mut self.filled {
                Some(f) => !std::mem::replace(&mut f[slot as usize], true),
                None => true,
            };
            if fresh {
                let p = self.plan.files[k].pattern.unwrap_or(Pattern::new(0));
                let buf = &mut self.eng.buf_mut(BufId(slot))[..len as usize];
                self.sh.spec.content.fill(buf, off, p);
            }
        }
        if let Some(l) = self.x.lens.get_mut(slot as usize) {
            *l = len;
        }
        self.push_op(slot, off, kind, k as u32, len);
        if let Some(g) = self.x.gate.as_mut() {
            g.issued(len as u64, self.inflight + self.pending.len());
        }
        true
    }

    /// Adds the op in `slot` to the pending batch.
    #[inline]
    fn push_op(&mut self, slot: u32, off: u64, kind: OpKind, file: u32, len: u32) {
        self.meta[slot as usize] = (off, kind, file);
        self.pending.push(Op {
            tag: slot as u64,
            kind,
            file: FileId(file),
            offset: off,
            len,
            buf: BufId(slot),
        });
        self.issued += 1;
    }

    /// Trims `len` bytes at `off` of file `k` now, on this thread; `slot`
    /// goes back to the free ones.
    fn trim(&mut self, slot: u32, k: usize, off: u64, len: u32) {
        self.free.push(slot);
        self.issued += 1;
        let t = self.x.trims.as_mut().expect("a trimming worker");
        let r = t.trim(k, off, len as u64);
        self.end = self.clock.now_ns();
        if !self.measuring && self.end >= self.ramp_end {
            self.start_measuring();
        }
        if let Err(e) = r {
            self.errors += 1;
            if self.sh.op_error(e) {
                self.stopping = true;
            }
        }
    }

    /// Waits for completions (or says the worker is finished).
    fn wait(&mut self, budget_left: bool) -> Wait {
        if self.inflight == 0 {
            if self.stopping || (!budget_left && self.pending.is_empty()) {
                return Wait::Finished;
            }
            self.wait_for_release();
            return Wait::Again;
        }
        if !self.stopping {
            self.wait_for_release();
        }
        let min = if self.stopping || self.free.is_empty() || !self.budget_left() {
            self.bc.min(self.inflight)
        } else {
            0
        };
        // A paced worker may have to wait for more (a pause, a rate's
        // sleep, iodepth_low).
        let min = self
            .x
            .gate
            .as_ref()
            .map_or(min, |g| min.max(g.must_reap(self.inflight)));
        self.done.clear();
        if let Err(e) = self.eng.reap(min, &mut self.done) {
            self.sh.fail(e.into());
            return Wait::Finished;
        }
        Wait::Reaped
    }

    /// The ramp is over: what it did is forgotten, and the baselines of the
    /// measured phase (SQPOLL CPU, process usage) are taken now.
    fn start_measuring(&mut self) {
        self.measuring = true;
        self.cpu.restart();
        self.tally.hist.reset();
        let t = &mut self.tally;
        (t.ops, t.writes, t.bytes, t.write_bytes) = (0, 0, 0, 0);
        if let Some(s) = self.split.as_mut() {
            s.hists.reset();
        }
        if let Some(s) = self.syncer.as_mut() {
            s.hist.reset();
        }
        if let Some(t) = self.x.trims.as_mut() {
            t.reset();
        }
        if let Some(l) = self.x.oplog.as_mut() {
            l.clear();
        }
        self.x.depths = Default::default();
        self.iv.clear();
        // Ops already handed out complete in the measured phase and count.
        self.issued = (self.inflight + self.pending.len()) as u64;
        if self.sh.spec.engine_opts.uring.sqpoll {
            self.sqpoll0 = Some(iolab::usage::sqpoll_cpu_ns().unwrap_or(0));
        }
        self.usage_at_start = Some(Usage::now());
    }

    /// Accounts for the completions in `done`, reaped at `t` ns.
    fn complete(&mut self, t: u64) {
        self.end = t;
        self.x.completed(t, &self.done, &self.started);
        if !self.measuring && t >= self.ramp_end {
            self.start_measuring();
        }
        let (mut ops, mut bytes) = (0u64, 0u64);
        let timed = !matches!(self.timing, Timing::Off);
        let mut runs = Runs::default();
        for i in 0..self.done.len() {
            let d = self.done[i];
            let slot = d.tag as usize;
            self.free.push(slot as u32);
            let n = match self.check(&d) {
                Ok(n) => n,
                Err(e) => {
                    self.errors += 1;
                    if self.sh.op_error(e) {
                        self.stopping = true;
                    }
                    continue;
                }
            };
            ops += 1;
            bytes += n as u64;
            if !self.mode.simple {
                self.count_write(slot, n);
            }
            if timed {
                let started = self.started[slot];
                if started != UNTIMED {
                    let lat = t.saturating_sub(started).max(1);
                    runs.add(lat, &mut self.tally.hist, &mut self.iv);
                    if let Some(s) = self.split.as_mut() {
                        s.completed(slot, self.meta[slot].1, t, lat);
                    }
                    if self.x.oplog.is_some() {
                        self.log_op(slot, t, lat, n);
                    }
                }
            }
        }
        self.inflight -= self.done.len();
        if self.mode.watching {
            for d in &self.done {
                self.watch.end(d.tag as usize);
            }
        }
        runs.flush(&mut self.tally.hist, &mut self.iv);
        self.tally.ops += ops;
        self.tally.bytes += bytes;
        self.iv.count(ops, bytes);
    }

    /// Counts the op in `slot` if it wrote `n` bytes (and the sync it may
    /// make due).
    #[inline]
    fn count_write(&mut self, slot: usize, n: u32) {
        if self.meta[slot].1 == OpKind::Write {
            self.tally.writes += 1;
            self.tally.write_bytes += n as u64;
            if let Some(s) = self.syncer.as_mut() {
                s.wrote(self.meta[slot].2 as usize);
            }
        }
    }

    /// Logs the op in `slot`, completed at `t` after `lat` ns, `n` bytes.
    fn log_op(&mut self, slot: usize, t: u64, lat: u64, n: u32) {
        let (offset, kind, _) = self.meta[slot];
        let slat_ns = self.split.as_ref().map_or(0, |s| s.slat_of(slot));
        if let Some(l) = self.x.oplog.as_mut() {
            l.push(crate::oplog::OpRecord {
                t_ns: t.saturating_sub(self.ramp_end),
                lat_ns: lat,
                slat_ns,
                dir: (kind != OpKind::Read) as u8,
                len: n,
                offset,
            });
        }
    }

    /// The bytes a completion moved, or why it does not count.
    #[inline]
    fn check(&self, d: &Done) -> Result<u32, BenchError> {
        match d.res {
            Ok(n) if n == self.bs && self.mode.plain_check => Ok(n),
            _ => self.check_closely(d),
        }
    }

    /// [`Worker::check`] for a completion that failed, came back short or
    /// must be verified.
    #[cold]
    #[inline(never)]
    fn check_closely(&self, d: &Done) -> Result<u32, BenchError> {
        let (off, kind, k) = self.meta[d.tag as usize];
        let file = &self.plan.files[k as usize];
        let kname = if kind == OpKind::Read {
            "read"
        } else {
            "write"
        };
        let len = self.x.lens.get(d.tag as usize).copied().unwrap_or(self.bs);
        let path = &file.path;
        let n = d.res.map_err(|errno| BenchError::OpFailed {
            kind: kname,
            path: path.clone(),
            offset: off,
            len,
            errno,
        })?;
        if n < len {
            return Err(BenchError::Short {
                kind: kname,
                path: path.clone(),
                offset: off,
                len,
                got: n,
            });
        }
        if self.verify && kind == OpKind::Read {
            if let Some(p) = file.pattern {
                let buf = &self.eng.buf(BufId(d.tag as u32))[..n as usize];
                p.verify(buf, off).map_err(|m| {
                    BenchError::Io(iolab::Error::Verify {
                        path: path.clone(),
                        offset: m.offset,
                        expected: m.expected,
                        got: m.got,
                    })
                })?;
            }
        }
        Ok(n)
    }

    /// Waits for what is still in flight and hands back the counts.
    fn finish(mut self) -> WorkerOut {
        // Ops still pending were never handed to the engine: nothing to wait for.
        if self.inflight > 0 {
            let _ = self.eng.reap(self.inflight, &mut self.done);
        }
        if !self.measuring {
            // Ended inside the ramp: nothing was measured.
            self.tally.hist.reset();
            if let Some(s) = self.split.as_mut() {
                s.hists.reset();
            }
            let t = &mut self.tally;
            (t.ops, t.writes, t.bytes, t.write_bytes) = (0, 0, 0, 0);
        }
        // Read before the engine (and so its SQPOLL thread) goes away.
        let sqpoll_ns = self
            .sqpoll0
            .and_then(|b0| iolab::usage::sqpoll_cpu_ns().map(|b| b.saturating_sub(b0)));
        let base = self.clock.base;
        WorkerOut {
            cpu: self.cpu.finish(),
            mem: self.eng.pool().backing(),
            sqpoll_ns,
            spin_waits: self.eng.stats().spin_waits,
            hist: self.tally.hist,
            ops: self.tally.ops,
            reads: self.tally.ops - self.tally.writes,
            writes: self.tally.writes,
            bytes: self.tally.bytes,
            errors: self.errors,
            end: base + Duration::from_nanos(self.end),
            measure_start: base + Duration::from_nanos(self.ramp_end),
            usage_at_start: self.usage_at_start,
            split: self.split.map(|s| s.hists),
            syncs: self.syncer.map(|s| s.hist),
            read_bytes: self.tally.bytes - self.tally.write_bytes,
            trims: self.x.trims.map(|t| (t.hist, t.ops, t.bytes)),
            depths: self.x.depths,
            latency_depth: self.x.gate.as_ref().and_then(|g| g.depth()),
            oplog: self.x.oplog,
        }
    }
}
