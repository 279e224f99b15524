//! Runner tests on real files: every engine returns the pattern's bytes, the
//! runner respects the queue depth, shuffle visits each block once, writes
//! keep the file verifiable, and corruption is caught with its offset.

use iolab::buf::BufPool;
use iolab::engine::{self, Caps, Done, Engine, EngineConfig, EngineKind, Op};
mod common;

use common::prep;
use iolab_bench::prepare::{set_cache, Prepared};
use iolab_bench::runner::{run_once, EngineFactory, RealEngines, RunControl};
use iolab_bench::spec::{AccessPattern, CacheMode, OpMix, WorkloadSpec};
use iolab_bench::BenchError;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

const SIZE: u64 = 2 << 20;

fn spec(file: &Path, engine: EngineKind) -> WorkloadSpec {
    WorkloadSpec {
        engine,
        file: file.to_path_buf(),
        file_size: SIZE,
        seed: 5,
        verify: true,
        ..WorkloadSpec::default()
    }
}

fn run(
    s: &WorkloadSpec,
    p: &Prepared,
    f: Arc<dyn EngineFactory>,
) -> Result<iolab_bench::record::RunMetrics, BenchError> {
    let stop = AtomicBool::new(false);
    let ctl = RunControl::new(&stop);
    let res = set_cache(s, p, s.file_size).unwrap();
    run_once(s, p, s.file_size, res, f, &ctl)
}

/// O_DIRECT works in `dir` (not on tmpfs); says so when it does not.
fn direct_ok(dir: &Path) -> bool {
    let ok = iolab::file::fs_type(dir) != Some("tmpfs");
    if !ok {
        iolab::testing::unmet("O_DIRECT is refused on tmpfs: direct variants not run");
    }
    ok
}

#[test]
fn every_engine_reads_the_pattern_for_every_order_size_and_cache_mode() {
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("data");
    let base = spec(&file, EngineKind::Pread);
    let p = prep(&base);
    let mut runs = 0;
    for engine in EngineKind::ALL {
        if engine == EngineKind::Null {
            continue;
        }
        for pattern in [
            AccessPattern::Seq,
            AccessPattern::Rand,
            AccessPattern::Shuffle,
        ] {
            for bs in [4096u64, 65536, 1 << 20] {
                for (direct, qd) in [
                    (false, 1),
                    (true, 1),
                    (false, 8),
                    (true, 8),
                    (false, 64),
                    (true, 64),
                ] {
                    if direct && (!engine.supports_direct() || !direct_ok(d.path())) {
                        continue;
                    }
                    if engine.is_sync() && qd > 1 {
                        continue;
                    }
                    let mut s = spec(&file, engine);
                    s.pattern = pattern;
                    s.bs = bs;
                    s.direct = direct;
                    s.qd = qd;
                    s.batch_submit = qd.min(4);
                    s.cache = [CacheMode::Cold, CacheMode::Warm, CacheMode::AsIs][runs % 3];
                    let p = Prepared {
                        align: if direct {
                            Some(iolab::file::dio_alignment(&file).unwrap())
                        } else {
                            None
                        },
                        ..p.clone()
                    };
                    let m = run(&s, &p, RealEngines::shared())
                        .unwrap_or_else(|e| panic!("{engine} {pattern} {bs} direct={direct}: {e}"));
                    assert_eq!(m.bytes, SIZE, "{engine} {pattern} {bs} direct={direct}");
                    match s.cache {
                        CacheMode::Cold => assert!(m.resident_before < 0.01, "{m:?}"),
                        CacheMode::Warm => assert!(m.resident_before > 0.99, "{m:?}"),
                        CacheMode::AsIs => {}
                    }
                    assert_eq!(m.ops, SIZE / bs);
                    let o = m.latency.ordered();
                    assert!(o.windows(2).all(|w| w[0] <= w[1]), "{:?}", m.latency);
                    runs += 1;
                }
            }
        }
    }
    assert!(runs >= 6 * 3 * 3, "only {runs} runs");
}

#[test]
fn multithreaded_shared_and_per_thread_files_verify() {
    let d = tempfile::tempdir().unwrap();
    for per_thread in [false, true] {
        let mut s = spec(&d.path().join(format!("f{per_thread}")), EngineKind::Uring);
        s.threads = 2;
        s.qd = 16;
        s.batch_submit = 4;
        s.file_per_thread = per_thread;
        s.pattern = AccessPattern::Shuffle;
        let p = prep(&s);
        let m = run(&s, &p, RealEngines::shared()).unwrap();
        assert_eq!(m.bytes, s.data_bytes());
    }
}

#[test]
fn threads_zero_runs_on_the_calling_thread() {
    let d = tempfile::tempdir().unwrap();
    let mut s = spec(&d.path().join("f"), EngineKind::Pread);
    s.threads = 0;
    let p = prep(&s);
    let m = run(&s, &p, RealEngines::shared()).unwrap();
    assert_eq!(m.bytes, SIZE);
}

#[test]
fn corruption_is_caught_with_file_and_offset() {
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("f");
    let s = spec(&file, EngineKind::Pread);
    let p = prep(&s);
    {
        use std::os::unix::fs::FileExt;
        let f = std::fs::OpenOptions::new().write(true).open(&file).unwrap();
        let mut b = [0u8; 1];
        f.read_at(&mut b, 0).ok();
        f.write_at(&[0xAB ^ iolab::pattern::Pattern::new(0).byte(0)], 100_003)
            .unwrap();
    }
    let e = run(&s, &p, RealEngines::shared()).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("100003") && msg.contains(&file.display().to_string()),
        "{msg}"
    );
    assert_eq!(e.exit_code(), 1);
}

#[test]
fn writes_keep_the_file_verifiable() {
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("f");
    for engine in [EngineKind::Pread, EngineKind::Read, EngineKind::Uring] {
        let mut s = spec(&file, engine);
        s.op = OpMix::Rw { read_pct: 50 };
        s.pattern = AccessPattern::Rand;
        s.qd = if engine.is_sync() { 1 } else { 8 };
        let p = prep(&s);
        let m = run(&s, &p, RealEngines::shared()).unwrap();
        assert!(m.read_ops > 0 && m.write_ops > 0, "{engine}: {m:?}");
        // A full verified read afterwards still sees the pattern.
        let r = spec(&file, EngineKind::Pread);
        run(&r, &prep(&r), RealEngines::shared()).unwrap();
    }
}

/// Wraps an engine and counts ops in flight, remembering the maximum and
/// every (worker, file, offset) submitted.
struct Counting {
    inner: Box<dyn Engine>,
    worker: u32,
    inflight: usize,
    max: Arc<AtomicUsize>,
    offsets: Arc<Mutex<Vec<(u32, u32, u64)>>>,
    qd: usize,
}

impl Engine for Counting {
    fn name(&self) -> &'static str {
        "counting"
    }
    fn caps(&self) -> Caps {
        self.inner.caps()
    }
    fn submit(&mut self, ops: &[Op]) -> iolab::Result<usize> {
        let n = self.inner.submit(ops)?;
        self.inflight += n;
        assert!(
            self.inflight <= self.qd,
            "{} in flight > qd {}",
            self.inflight,
            self.qd
        );
        self.max.fetch_max(self.inflight, Ordering::Relaxed);
        self.offsets
            .lock()
            .unwrap()
            .extend(ops[..n].iter().map(|o| (self.worker, o.file.0, o.offset)));
        Ok(n)
    }
    fn reap(&mut self, min: usize, out: &mut Vec<Done>) -> iolab::Result<usize> {
        assert!(
            min <= self.inflight,
            "asked to wait for {min} with {} in flight",
            self.inflight
        );
        let before = out.len();
        let n = self.inner.reap(min, out)?;
        // Hand completions back in reverse order: the runner must match tags.
        out[before..].reverse();
        self.inflight -= n;
        Ok(n)
    }
    fn pool(&self) -> &BufPool {
        self.inner.pool()
    }
    fn pool_mut(&mut self) -> &mut BufPool {
        self.inner.pool_mut()
    }
}

struct CountingFactory {
    kind: EngineKind,
    max: Arc<AtomicUsize>,
    offsets: Arc<Mutex<Vec<(u32, u32, u64)>>>,
}

impl EngineFactory for CountingFactory {
    fn build(
        &self,
        spec: &WorkloadSpec,
        worker: u32,
        cfg: EngineConfig,
    ) -> iolab::Result<Box<dyn Engine>> {
        let qd = cfg.qd as usize;
        Ok(Box::new(Counting {
            inner: engine::build(self.kind, cfg)?,
            worker,
            inflight: 0,
            max: self.max.clone(),
            offsets: self.offsets.clone(),
            qd: qd.max(spec.qd as usize),
        }))
    }
}

#[test]
fn runner_never_exceeds_queue_depth_and_fills_it() {
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("f");
    for (kind, qd, batch) in [
        (EngineKind::Uring, 8, 3),
        (EngineKind::Null, 16, 16),
        (EngineKind::Uring, 1, 1),
    ] {
        let mut s = spec(&file, kind);
        s.qd = qd;
        s.batch_submit = batch;
        s.threads = 2;
        s.pattern = AccessPattern::Rand;
        s.verify = kind != EngineKind::Null;
        let p = prep(&s);
        let f = Arc::new(CountingFactory {
            kind,
            max: Arc::new(AtomicUsize::new(0)),
            offsets: Default::default(),
        });
        let m = run(&s, &p, f.clone()).unwrap();
        assert_eq!(m.ops, SIZE / 4096);
        let max = f.max.load(Ordering::Relaxed);
        // Never more than qd in flight, and the queue was filled.
        assert_eq!(max, qd as usize, "{kind}: max in flight {max}, qd {qd}");
    }
}

/// Runs `s` (its files made first) on the null engine, counted: the
/// metrics and every (worker, file, offset) submitted.
fn run_null_counted(s: &WorkloadSpec) -> (iolab_bench::record::RunMetrics, Vec<(u32, u32, u64)>) {
    let p = prep(s);
    let f = Arc::new(CountingFactory {
        kind: EngineKind::Null,
        max: Arc::new(AtomicUsize::new(0)),
        offsets: Default::default(),
    });
    let m = run(s, &p, f.clone()).unwrap();
    let ops = f.offsets.lock().unwrap().clone();
    (m, ops)
}

#[test]
fn shuffle_visits_every_block_exactly_once() {
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("f");
    for threads in [1, 3] {
        let mut s = spec(&file, EngineKind::Null);
        s.pattern = AccessPattern::Shuffle;
        s.threads = threads;
        s.qd = 4;
        s.verify = false;
        let (_, ops) = run_null_counted(&s);
        let mut offs: Vec<u64> = ops.iter().map(|o| o.2).collect();
        let in_order = offs.windows(2).filter(|w| w[1] == w[0] + 4096).count();
        offs.sort_unstable();
        let all: Vec<u64> = (0..SIZE / 4096).map(|b| b * 4096).collect();
        assert_eq!(offs, all, "threads {threads}");
        assert!(
            in_order < offs.len() / 10,
            "shuffle looks sequential: {in_order}"
        );
    }
}

#[test]
fn ops_go_round_a_worker_s_files_and_read_each_block_of_each_once() {
    let d = tempfile::tempdir().unwrap();
    // Three shared files, two threads each taking a slice of each; then
    // two files per thread.
    for (more, nrfiles, per_thread) in [(2, 1, false), (0, 2, true)] {
        let mut s = spec(&d.path().join(format!("f{more}")), EngineKind::Null);
        s.more_files = (1..=more).map(|i| d.path().join(format!("g{i}"))).collect();
        s.nrfiles = nrfiles;
        s.file_per_thread = per_thread;
        s.pattern = AccessPattern::Shuffle;
        s.threads = 2;
        s.verify = false;
        let (m, ops) = run_null_counted(&s);
        let files_per_worker = s.files_of(0).len() as u32;
        assert_eq!(m.ops, SIZE / 4096 * s.files().len() as u64);
        // Each engine's ops: file 0, 1, .. in turn.
        let mut per_file = vec![Vec::new(); files_per_worker as usize];
        for (_, k, off) in &ops {
            per_file[*k as usize].push(*off);
        }
        let want_each = m.ops as usize / files_per_worker as usize;
        for (k, offs) in per_file.iter_mut().enumerate() {
            assert_eq!(offs.len(), want_each, "file {k}");
            offs.sort_unstable();
            offs.dedup();
        }
        if per_thread {
            // Each thread's file k holds every block once; two threads.
            assert!(per_file.iter().all(|o| o.len() as u64 == SIZE / 4096));
        } else {
            // Both threads' slices of a shared file: every block once.
            let all: Vec<u64> = (0..SIZE / 4096).map(|b| b * 4096).collect();
            assert!(per_file.iter().all(|o| *o == all), "more {more}");
        }
        // Each worker's ops go to its files 0, 1, .. in turn.
        for w in 0..2 {
            let turns: Vec<u32> = ops.iter().filter(|o| o.0 == w).map(|o| o.1).collect();
            let want: Vec<u32> = (0..turns.len() as u32)
                .map(|i| i % files_per_worker)
                .collect();
            assert_eq!(turns, want, "worker {w}");
        }
    }
}

#[test]
fn time_limit_and_intervals() {
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("f");
    let mut s = spec(&file, EngineKind::Pread);
    s.stop.time_ns = Some(600_000_000);
    s.interval_ns = Some(100_000_000);
    s.pattern = AccessPattern::Rand;
    s.cache = CacheMode::Warm;
    s.verify = false;
    let p = prep(&s);
    let m = run(&s, &p, RealEngines::shared()).unwrap();
    assert!(
        m.duration_ns >= 590_000_000 && m.duration_ns < 2_000_000_000,
        "{}",
        m.duration_ns
    );
    assert!(m.resident_before > 0.99);
    assert!(m.intervals.len() >= 4, "{:?}", m.intervals);
    assert!(m
        .intervals
        .iter()
        .all(|i| i.iops > 0.0 && i.p50_ns <= i.p99_ns));
}

#[test]
fn sqpoll_thread_cpu_is_found_and_reported() {
    let d = tempfile::tempdir().unwrap();
    let mut s = spec(&d.path().join("f"), EngineKind::Uring);
    s.qd = 8;
    s.engine_opts.uring.sqpoll = true;
    s.engine_opts.uring.sqpoll_idle_ms = Some(50);
    s.stop.time_ns = Some(300_000_000);
    s.pattern = AccessPattern::Rand;
    s.cache = CacheMode::Warm;
    let p = prep(&s);
    let m = match run(&s, &p, RealEngines::shared()) {
        Ok(m) => m,
        Err(e) if e.exit_code() == 2 => {
            iolab::testing::unmet(&format!("SQPOLL unavailable here: {e}"));
            return;
        }
        Err(e) => panic!("{e}"),
    };
    let pct = m.cpu.sqpoll_pct.expect("SQPOLL CPU reported");
    assert!(pct > 0.0 && pct <= 100.0 * 2.0, "{pct}");
    assert!(m.cpu.sys_pct + m.cpu.user_pct >= pct * 0.5, "{:?}", m.cpu);
}

/// Bytes this thread has had fetched from storage (`read_bytes` of
/// `/proc/thread-self/io`: page-cache misses, not copies).
fn storage_read_bytes() -> u64 {
    let s = std::fs::read_to_string("/proc/thread-self/io").unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix("read_bytes: "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap()
}

#[test]
fn a_cold_buffered_run_reads_every_pass_from_the_device() {
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("data");
    let s = WorkloadSpec {
        cache: CacheMode::Cold,
        bs: 128 << 10,
        threads: 0,
        verify: true,
        stop: iolab_bench::spec::StopRule {
            ops: Some(5 * SIZE / (128 << 10)),
            ..Default::default()
        },
        ..spec(&file, EngineKind::Pread)
    };
    let p = prep(&s);
    let before = storage_read_bytes();
    let m = run(&s, &p, Arc::new(RealEngines)).unwrap();
    let fetched = storage_read_bytes() - before;
    assert_eq!(m.bytes, 5 * SIZE);
    // Five passes, each begun evicted (as fio's invalidate=1 does when it
    // reopens a file for the next pass): all but read-ahead's overshoot of
    // the bytes come from the device, not one pass and four from the cache.
    assert!(
        fetched >= 4 * SIZE,
        "fetched {fetched} for {} read",
        m.bytes
    );
}
