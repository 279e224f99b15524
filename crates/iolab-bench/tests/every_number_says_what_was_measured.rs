//! Every number says what was measured: residency before and
//! after each run, cold runs that warmed themselves flagged, and CPU split
//! into submitting threads, helper threads and kernel I/O threads. Real
//! files, real engines.

use iolab::engine::EngineKind;
mod common;

use common::prep;
use iolab_bench::prepare::{set_cache, Prepared};
use iolab_bench::record::RunMetrics;
use iolab_bench::residency::{cold_ops_limit, COLD_MAX_RESIDENT_AFTER};
use iolab_bench::runner::{run_once, RealEngines, RunControl};
use iolab_bench::spec::{AccessPattern, CacheMode, WorkloadSpec};
use std::path::Path;
use std::sync::atomic::AtomicBool;

const SIZE: u64 = 8 << 20;

use iolab::require;

fn spec(file: &Path, engine: EngineKind, pattern: AccessPattern) -> WorkloadSpec {
    WorkloadSpec {
        engine,
        pattern,
        file: file.to_path_buf(),
        file_size: SIZE,
        cache: CacheMode::Cold,
        seed: 11,
        ..WorkloadSpec::default()
    }
}

fn run(s: &WorkloadSpec, p: &Prepared) -> RunMetrics {
    let stop = AtomicBool::new(false);
    let ctl = RunControl::new(&stop);
    let res = set_cache(s, p, s.file_size).unwrap();
    run_once(s, p, s.file_size, res, RealEngines::shared(), &ctl).unwrap()
}

fn evictable(dir: &Path) -> bool {
    iolab::file::fs_type(dir) != Some("tmpfs")
}

#[test]
fn a_cold_run_that_warms_its_own_reads_is_flagged_and_one_sized_to_stay_cold_is_not() {
    let d = tempfile::tempdir().unwrap();
    require!(evictable(d.path()), "tmpfs pages cannot be evicted");
    let file = d.path().join("data");
    let mut s = spec(&file, EngineKind::Pread, AccessPattern::Rand);
    let p = prep(&s);

    // As many random reads as the file has blocks: about 63 % of the
    // blocks are read, and every repeat is a page-cache hit.
    s.stop.ops = Some(SIZE / s.bs);
    let m = run(&s, &p);
    assert_eq!(m.residency.len(), 1);
    let f = &m.residency[0];
    assert_eq!(f.path, file);
    assert!(f.before < 0.01, "{f:?}");
    assert!(f.after > 0.3, "{f:?}");
    assert_eq!(m.resident_after, f.after);
    assert_eq!(m.cache_held, Some(false), "{m:?}");

    // Capped as the survey caps it: at most 4 % of the pages (one page per
    // op, POSIX_FADV_RANDOM stops read-ahead), so the run stays cold.
    s.stop.ops = cold_ops_limit(&s);
    let m = run(&s, &p);
    assert!(m.resident_before < 0.01, "{m:?}");
    assert!(m.resident_after <= COLD_MAX_RESIDENT_AFTER, "{m:?}");
    assert!(
        m.resident_after > 0.0,
        "buffered reads must leave pages: {m:?}"
    );
    assert_eq!(m.cache_held, Some(true));

    // O_DIRECT reads bypass the cache: cold stays cold however long.
    let mut s = spec(&file, EngineKind::Pread, AccessPattern::Rand);
    s.direct = true;
    s.stop.ops = Some(SIZE / s.bs);
    let m = run(&s, &p);
    assert!(m.residency[0].after <= COLD_MAX_RESIDENT_AFTER, "{m:?}");
    assert_eq!(m.cache_held, Some(true));

    // Warm stays warm; as-is claims nothing.
    let mut s = spec(&file, EngineKind::Pread, AccessPattern::Seq);
    s.cache = CacheMode::Warm;
    let m = run(&s, &p);
    assert!(m.resident_before > 0.99 && m.resident_after > 0.99, "{m:?}");
    assert_eq!(m.cache_held, Some(true));
    s.cache = CacheMode::AsIs;
    assert_eq!(run(&s, &p).cache_held, None);
}

fn try_run(s: &WorkloadSpec, p: &Prepared) -> Result<RunMetrics, iolab_bench::BenchError> {
    let stop = AtomicBool::new(false);
    let ctl = RunControl::new(&stop);
    let res = set_cache(s, p, s.file_size).unwrap();
    run_once(s, p, s.file_size, res, RealEngines::shared(), &ctl)
}

#[test]
fn cpu_is_split_into_submitting_helper_and_kernel_threads() {
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("data");
    let mut s = spec(&file, EngineKind::Pread, AccessPattern::Rand);
    let p = prep(&s);
    s.cache = CacheMode::Warm;
    s.stop.ops = Some(40_000);

    // pread: all the work is on the submitting thread.
    let m = run(&s, &p);
    let c = m.cpu.split;
    assert!(c.submit_pct() > 0.0, "{c:?}");
    assert_eq!(c.kernel_pct, 0.0, "{c:?}");
    assert!(
        c.helpers_pct < c.submit_pct(),
        "no helper threads, yet {c:?}"
    );

    // threadpool: helper threads do the reads; the submitting thread only
    // hands them over. The process total holds both.
    let mut t = s.clone();
    t.engine = EngineKind::Threadpool;
    t.qd = 4;
    let m = run(&t, &p);
    let c = m.cpu.split;
    assert!(c.helpers_pct > 0.0, "{c:?}");
    let total = m.cpu.user_pct + m.cpu.sys_pct;
    assert!(c.submit_pct() < total, "{c:?} of {total}");

    // SQPOLL: the kernel thread iou-sqp submits; it is counted apart.
    let mut u = s.clone();
    u.engine = EngineKind::Uring;
    u.qd = 4;
    u.engine_opts.uring.sqpoll = true;
    let m = match try_run(&u, &p) {
        Ok(m) => m,
        Err(e) => {
            require!(false, "SQPOLL unavailable: {e}");
            unreachable!()
        }
    };
    let c = m.cpu.split;
    assert!(c.kernel_pct > 0.0, "{c:?}");
    assert!(
        m.cpu.sqpoll_pct.is_some_and(|p| p <= c.kernel_pct + 1e-9),
        "{m:?}"
    );
}
