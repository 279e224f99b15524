//! `--lat`: `off` records no latency at all (and still counts every op and
//! byte), `sampled:N` times exactly one op in each run of N, and `all`
//! times every op; on real files, through the real runner.

mod common;

use common::prep;
use iolab::engine::EngineKind;
use iolab_bench::lat_record::LatRecord;
use iolab_bench::prepare::set_cache;
use iolab_bench::record::RunMetrics;
use iolab_bench::runner::{run_once, RealEngines, RunControl};
use iolab_bench::spec::{AccessPattern, StopRule, WorkloadSpec};
use std::sync::atomic::AtomicBool;

const SIZE: u64 = 1 << 20;
/// A whole number of runs of 32 and of 7.
const OPS: u64 = 32 * 7 * 20;

fn run(engine: EngineKind, lat: LatRecord, dir: &std::path::Path) -> (WorkloadSpec, RunMetrics) {
    let s = WorkloadSpec {
        engine,
        pattern: AccessPattern::Rand,
        qd: if engine == EngineKind::Pread { 1 } else { 16 },
        batch_submit: if engine == EngineKind::Pread { 1 } else { 4 },
        batch_complete: 1,
        file: dir.join("data"),
        file_size: SIZE,
        stop: StopRule {
            ops: Some(OPS),
            ..Default::default()
        },
        lat,
        ..WorkloadSpec::default()
    };
    let p = prep(&s);
    let stop = AtomicBool::new(false);
    let res = set_cache(&s, &p, SIZE).unwrap();
    let m = run_once(
        &s,
        &p,
        SIZE,
        res,
        RealEngines::shared(),
        &RunControl::new(&stop),
    )
    .unwrap();
    assert_eq!((m.ops, m.errors), (OPS, 0), "{engine} {lat}");
    assert_eq!(m.bytes, OPS * 4096, "{engine} {lat}");
    (s, m)
}

#[test]
fn off_records_no_latency_and_sampled_times_one_op_in_n() {
    let d = tempfile::tempdir().unwrap();
    for engine in [EngineKind::Uring, EngineKind::Pread, EngineKind::Null] {
        let (_, all) = run(engine, LatRecord::All, d.path());
        assert_eq!(all.latency.count, OPS, "{engine}: all times every op");
        let o = all.latency.ordered();
        assert!(o[0] > 0 && o.windows(2).all(|w| w[0] <= w[1]), "{o:?}");

        let (_, off) = run(engine, LatRecord::Off, d.path());
        assert_eq!(off.latency.count, 0, "{engine}: off timed ops");
        assert_eq!(off.latency.ordered(), [0; 7], "{engine}");
        assert!(off.latency_hist.as_ref().is_some_and(|h| h.is_empty()));

        for n in [32, 7] {
            let (s, m) = run(engine, LatRecord::Sampled(n), d.path());
            assert_eq!(
                m.latency.count,
                OPS / n as u64,
                "{engine}: sampled:{n} timed {} of {OPS} ops",
                m.latency.count
            );
            let o = m.latency.ordered();
            assert!(o[0] > 0 && o.windows(2).all(|w| w[0] <= w[1]), "{o:?}");
            // The record says what its latency covers.
            let j = serde_json::to_value(&s).unwrap();
            assert_eq!(j["lat"]["sampled"], n, "{j}");
        }
    }
}

#[test]
fn what_needs_every_latency_refuses_fewer() {
    let mut s = WorkloadSpec {
        log_ops: true,
        lat: LatRecord::Off,
        ..WorkloadSpec::default()
    };
    let e = iolab_bench::prepare::validate(&s).unwrap_err().to_string();
    assert!(
        e.contains("--lat off") && e.contains("per-I/O log") && e.contains("--lat all"),
        "{e}"
    );
    s.lat = LatRecord::All;
    assert!(iolab_bench::prepare::validate(&s).is_ok());
}
