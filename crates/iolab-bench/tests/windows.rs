//! The measured window and error accounting, checked with an engine whose
//! timing is known: every op takes at least a fixed service time, so an
//! interval or a run cannot hold more ops than that time allows, and a run
//! of N ops cannot take less than N service times. Each test fails if the
//! window included the ramp, or errors went uncounted.

use iolab::buf::BufPool;
use iolab::engine::{Caps, Done, Engine, EngineConfig, Op};
use iolab::Errno;
use iolab_bench::measure::{self, Cache, Measure, NoHooks};
use iolab_bench::prepare::{prepare, PrepareOpts, Prepared};
use iolab_bench::record::RunMetrics;
use iolab_bench::runner::{run_once, EngineFactory, RunControl};
use iolab_bench::spec::WorkloadSpec;
use iolab_bench::BenchError;
use std::ops::Range;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

const BS: u64 = 4096;
const BLOCKS: u64 = 64;

/// One op at a time, each taking `service` (slept: never less), failing
/// with EIO in `fail`, never completing at `stall`.
struct Fixed {
    pool: BufPool,
    service: Duration,
    fail: Range<u64>,
    stall: Option<u64>,
    done: Vec<Done>,
}

impl Engine for Fixed {
    fn name(&self) -> &'static str {
        "fixed"
    }
    fn caps(&self) -> Caps {
        Caps {
            sync: true,
            writes: true,
            fills_buffer: false,
        }
    }
    fn submit(&mut self, ops: &[Op]) -> iolab::Result<usize> {
        for op in ops {
            if self.stall == Some(op.offset) {
                loop {
                    std::thread::park();
                }
            }
            std::thread::sleep(self.service);
            let res = if self.fail.contains(&op.offset) {
                Err(Errno(5)) // EIO
            } else {
                Ok(op.len)
            };
            self.done.push(Done { tag: op.tag, res });
        }
        Ok(ops.len())
    }
    fn reap(&mut self, _min: usize, out: &mut Vec<Done>) -> iolab::Result<usize> {
        let n = self.done.len();
        out.append(&mut self.done);
        Ok(n)
    }
    fn pool(&self) -> &BufPool {
        &self.pool
    }
    fn pool_mut(&mut self) -> &mut BufPool {
        &mut self.pool
    }
}

struct FixedFactory {
    service: Duration,
    fail: Range<u64>,
    stall: Option<u64>,
}

impl EngineFactory for FixedFactory {
    fn build(&self, _: &WorkloadSpec, _: u32, cfg: EngineConfig) -> iolab::Result<Box<dyn Engine>> {
        Ok(Box::new(Fixed {
            pool: cfg.pool()?,
            service: self.service,
            fail: self.fail.clone(),
            stall: self.stall,
            done: Vec::new(),
        }))
    }
}

fn fixed(service_ms: u64) -> FixedFactory {
    FixedFactory {
        service: Duration::from_millis(service_ms),
        fail: 0..0,
        stall: None,
    }
}

fn setup(dir: &Path) -> (WorkloadSpec, Prepared) {
    setup_blocks(dir, BLOCKS)
}

fn setup_blocks(dir: &Path, blocks: u64) -> (WorkloadSpec, Prepared) {
    let s = WorkloadSpec {
        file: dir.join("f"),
        file_size: BS * blocks,
        ..WorkloadSpec::default()
    };
    let stop = AtomicBool::new(false);
    let p = prepare(
        &s,
        true,
        PrepareOpts::default(),
        &stop,
        &mut |_| {},
        &mut |_, _| {},
    )
    .unwrap();
    (s, p)
}

fn run(s: &WorkloadSpec, p: &Prepared, f: FixedFactory) -> Result<RunMetrics, BenchError> {
    let stop = AtomicBool::new(false);
    let ctl = RunControl::new(&stop);
    run_once(s, p, s.file_size, 0.0, Arc::new(f), &ctl)
}

#[test]
fn ops_after_a_ramp_are_measured_over_their_own_time() {
    let d = tempfile::tempdir().unwrap();
    let (mut s, p) = setup(d.path());
    s.ramp_ns = 60_000_000;
    s.stop.ops = Some(5);
    for threads in [0, 1] {
        s.threads = threads;
        let m = run(&s, &p, fixed(3)).unwrap();
        // The ramp's ops do not use up the budget, and do not count.
        assert_eq!(m.ops, 5, "threads {threads}: {m:?}");
        // Five ops of at least 3 ms each; the first may have started before
        // the ramp ended, so at least four whole ones: 12 ms, 417 IOPS.
        assert!(m.duration_ns >= 12_000_000, "threads {threads}: {m:?}");
        assert!(m.iops <= 5.0 / 0.012 * 1.001, "threads {threads}: {m:?}");
    }
}

#[test]
fn interval_samples_start_when_the_ramp_ends() {
    let d = tempfile::tempdir().unwrap();
    let (mut s, p) = setup(d.path());
    s.ramp_ns = 200_000_000;
    s.interval_ns = Some(100_000_000);
    s.stop.time_ns = Some(300_000_000);
    let m = run(&s, &p, fixed(5)).unwrap();
    assert!(!m.intervals.is_empty(), "{m:?}");
    // At least 5 ms an op: no more than 20 (+1 at the edge) in 100 ms. The
    // ramp's 40 ops in the first interval would make it ~600 IOPS.
    for i in &m.intervals {
        assert!(i.iops <= 210.0 * 1.001, "{:?}", m.intervals);
    }
}

#[test]
fn failed_ops_are_counted_and_continue_on_error_goes_on() {
    let d = tempfile::tempdir().unwrap();
    let (mut s, p) = setup(d.path());
    let eio = || FixedFactory {
        fail: 2 * BS..4 * BS,
        ..fixed(0)
    };
    s.continue_on_error = true;
    let m = run(&s, &p, eio()).unwrap();
    assert_eq!((m.ops, m.errors), (BLOCKS - 2, 2), "{m:?}");
    assert_eq!(m.first_errors.len(), 2);
    assert!(
        m.first_errors[0].contains("offset 8192"),
        "{:?}",
        m.first_errors
    );

    // Without it the run stops at the first error, with what it measured.
    s.continue_on_error = false;
    match run(&s, &p, eio()) {
        Err(BenchError::Partial { metrics, error }) => {
            assert_eq!((metrics.ops, metrics.errors), (2, 1), "{metrics:?}");
            assert!(error.to_string().contains("offset 8192"), "{error}");
            assert_eq!(error.exit_code(), 1);
        }
        other => panic!("expected a partial result, got {other:?}"),
    }
}

#[test]
fn an_op_that_never_completes_is_reported_with_file_and_offset() {
    let d = tempfile::tempdir().unwrap();
    let (mut s, p) = setup(d.path());
    s.op_timeout_ns = Some(100_000_000);
    for threads in [0, 2] {
        s.threads = threads;
        let f = FixedFactory {
            stall: Some(3 * BS),
            ..fixed(0)
        };
        let e = run(&s, &p, f).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("offset 12288")
                && msg.contains("--op-timeout")
                && msg.contains(&s.file.display().to_string()),
            "threads {threads}: {msg}"
        );
        assert_eq!(e.exit_code(), 1);
        if threads == 2 {
            // The other worker's ops are kept.
            let BenchError::Partial { metrics, .. } = e else {
                panic!("expected a partial result")
            };
            assert_eq!(metrics.ops, BLOCKS / 2, "{metrics:?}");
            assert_eq!(metrics.errors, 1);
        }
    }
}

#[test]
fn many_busy_threads_share_one_window() {
    // 256 workers that never sleep on 2 cores: the scheduler releases them
    // over seconds. Each used to time its own 300 ms from its own release,
    // so the run's window (first start to last end) grew to many seconds.
    // Counted from one shared start, it is the time asked plus at most a
    // scheduling round: 3 s is ten times the request.
    let d = tempfile::tempdir().unwrap();
    let (mut s, p) = setup_blocks(d.path(), 1024);
    s.threads = 256;
    s.stop.time_ns = Some(300_000_000);
    let m = run(&s, &p, fixed(0)).unwrap();
    assert!(m.duration_ns >= 300_000_000, "{m:?}");
    assert!(
        m.duration_ns < 3_000_000_000,
        "window {} ms for a 300 ms run",
        m.duration_ns / 1_000_000
    );
    // The process's CPU over the window holds at least the workers' own:
    // its baseline is the shared start, not the moment the collector
    // happened to be scheduled (last of 257 threads, once most were done).
    let (process, workers) = (m.cpu.user_pct + m.cpu.sys_pct, m.cpu.split.submit_pct());
    assert!(
        process >= 0.9 * workers,
        "process {process:.1} % < workers {workers:.1} %"
    );
}

#[test]
fn the_measurement_loop_repeats_and_keeps_a_failed_runs_ops_last() {
    let d = tempfile::tempdir().unwrap();
    let (s, p) = setup(d.path());
    let stop = AtomicBool::new(false);
    let m = |f: FixedFactory| Measure {
        cache: Cache::Given(0.0),
        engines: Arc::new(f),
        ..Measure::new(&stop, 3)
    };
    // Three clean runs, each over the whole file, each with the device's view.
    let ok = measure::runs(&s, &p, &m(fixed(0)), &mut NoHooks).unwrap();
    assert!(ok.error.is_none(), "{:?}", ok.error);
    assert_eq!(ok.runs.len(), 3);
    assert!(ok
        .runs
        .iter()
        .all(|r| r.ops == BLOCKS && r.device.is_some()));

    // A run that fails after two ops: its ops are kept, last, with the error,
    // and no repeat follows it.
    let eio = FixedFactory {
        fail: 2 * BS..4 * BS,
        ..fixed(0)
    };
    let bad = measure::runs(&s, &p, &m(eio), &mut NoHooks).unwrap();
    assert_eq!(bad.runs.len(), 1, "{:?}", bad.runs);
    assert_eq!(bad.runs[0].ops, 2);
    let e = bad.error.as_ref().expect("the failure is reported");
    assert!(e.to_string().contains("offset 8192"), "{e}");
    assert!(bad.complete().is_err());
}
