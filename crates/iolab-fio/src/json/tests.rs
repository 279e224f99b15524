//! fio's JSON from known runs: fields, units, and where latency goes.

use super::*;
use iolab_bench::metrics::{new_histogram, LatSplit, LatencySummary};
use iolab_bench::record::IntervalSample;

#[test]
fn ctime_matches_c() {
    assert_eq!(ctime(0), "Thu Jan  1 00:00:00 1970");
    assert_eq!(ctime(1_795_979_189), "Sun Nov 29 19:06:29 2026");
}

/// A 2-second run of reads and writes with these latencies.
pub(crate) fn run_with(lat: &[u64], reads: u64, writes: u64) -> RunMetrics {
    let mut h = new_histogram();
    for &l in lat {
        h.record(l).unwrap();
    }
    RunMetrics {
        duration_ns: 2_000_000_000,
        bytes: (reads + writes) * 4096,
        read_bytes: reads * 4096,
        ops: reads + writes,
        read_ops: reads,
        write_ops: writes,
        latency: LatencySummary::of(&h),
        latency_hist: Some(h),
        intervals: vec![
            IntervalSample {
                t_ms: 500,
                mib_per_s: 1.0,
                iops: 256.0,
                p50_ns: 1,
                p99_ns: 1,
                mean_ns: 1000.0,
            },
            IntervalSample {
                t_ms: 1000,
                mib_per_s: 3.0,
                iops: 768.0,
                p50_ns: 1,
                p99_ns: 1,
                mean_ns: 3000.0,
            },
        ],
        ..Default::default()
    }
}

/// The document of one job's run, no wakers.
fn doc_of(j: &FioJob, run: &RunMetrics, started: u64, plus: bool) -> Value {
    let r = JobResult {
        job: j,
        run,
        verify: None,
        waker: None,
    };
    document(&[r], started, plus)
}

pub(crate) fn job(text: &str) -> FioJob {
    let mut r = crate::parse::Reader::new();
    r.read_text(text, std::path::Path::new("t.fio"), 0).unwrap();
    crate::map::map_all(&r.finish(), false).unwrap().remove(0)
}

#[test]
fn fields_and_units_are_fio_s() {
    let j = job("[r]\nfilename=/x\nsize=1m\npercentile_list=50:99\ndescription=a job\n");
    let run = run_with(&[1000, 2000, 3000, 4000], 1024, 0);
    let d = doc_of(&j, &run, 1_700_000_000_000, true);
    assert_eq!(d["jobs"][0]["desc"], "a job");
    let r = &d["jobs"][0]["read"];
    assert_eq!(r["io_bytes"], 1024 * 4096);
    assert_eq!(r["io_kbytes"], 4096);
    // 4 MiB in 2 s = 2 MiB/s = 2048 KiB/s.
    assert_eq!(r["bw"], 2048);
    assert_eq!(r["bw_bytes"], 2 << 20);
    assert_eq!(r["iops"], 512.0);
    assert_eq!(r["runtime"], 2000);
    assert_eq!(r["clat_ns"]["N"], 4);
    assert_eq!(r["clat_ns"]["min"], 1000);
    assert!(r["clat_ns"]["percentile"]["99.000000"].as_u64().unwrap() >= 3990);
    // lat percentiles only with lat_percentiles=1, as fio.
    assert!(r["lat_ns"].get("percentile").is_none());
    let bins = r["clat_ns"]["bins"].as_object().unwrap();
    assert_eq!(bins.values().map(|v| v.as_u64().unwrap()).sum::<u64>(), 4);
    assert_eq!(
        (
            r["bw_min"].clone(),
            r["bw_max"].clone(),
            r["bw_samples"].clone()
        ),
        (json!(1024), json!(3072), json!(2))
    );
    assert_eq!(d["jobs"][0]["write"]["io_bytes"], 0);
    assert_eq!(d["jobs"][0]["jobname"], "r");
    assert_eq!(d["jobs"][0]["job options"]["size"], "1m");
    let us = &d["jobs"][0]["latency_us"];
    assert_eq!(us["2"], 25.0);
    assert_eq!(us["4"], 50.0);
    assert_eq!(d["jobs"][0]["latency_ns"]["1000"], 25.0);
    for k in [
        "iodepth_level",
        "iodepth_submit",
        "iodepth_complete",
        "latency_target",
        "latency_window",
    ] {
        assert!(d["jobs"][0].get(k).is_some(), "{k}");
    }
    // No device counters: no disk_util, as fio without a block device.
    assert!(d.get("disk_util").is_none());
}

#[test]
fn asynchronous_engines_put_percentiles_under_clat_as_fio_does() {
    let j = job("[r]\nfilename=/x\nsize=1m\nioengine=libaio\niodepth=4\n");
    assert!(j.spec.time_submit);
    // What the runner measures when the submit call is timed.
    let mut run = run_with(&[1500, 2500], 2, 0);
    let mut split = LatSplit::new(true);
    let parts = split.parts.as_mut().unwrap();
    parts[0][0].record(500).unwrap();
    parts[0][0].record(500).unwrap();
    parts[1][0].record(1000).unwrap();
    parts[1][0].record(2000).unwrap();
    split.lat[0].record(1500).unwrap();
    split.lat[0].record(2500).unwrap();
    run.lat_split = Some(split);
    let d = doc_of(&j, &run, 0, true);
    let r = &d["jobs"][0]["read"];
    assert_eq!(
        (r["slat_ns"]["N"].clone(), r["slat_ns"]["min"].clone()),
        (json!(2), json!(500))
    );
    assert_eq!(
        (r["clat_ns"]["N"].clone(), r["clat_ns"]["max"].clone()),
        (json!(2), json!(2000))
    );
    assert_eq!(r["lat_ns"]["min"], 1500);
    assert!(r["clat_ns"]["percentile"]["50.000000"].as_u64().unwrap() >= 999);
    assert!(r["clat_ns"].get("bins").is_some());
    assert!(r["lat_ns"].get("percentile").is_none());
    assert!(r["slat_ns"].get("percentile").is_none());
    // A synchronous engine: the call is clat and lat; slat has N=0.
    let j = job("[r]\nfilename=/x\nsize=1m\nioengine=psync\n");
    let d = doc_of(&j, &run_with(&[1000, 2000], 2, 0), 0, false);
    let r = &d["jobs"][0]["read"];
    assert_eq!(
        (
            r["slat_ns"]["N"].clone(),
            r["clat_ns"]["N"].clone(),
            r["lat_ns"]["N"].clone()
        ),
        (json!(0), json!(2), json!(2))
    );
    // gtod_reduce: no latency at all, as fio.
    let j = job("[r]\nfilename=/x\nsize=1m\nioengine=null\ngtod_reduce=1\n");
    let d = doc_of(&j, &run_with(&[1000], 1, 0), 0, false);
    assert_eq!(d["jobs"][0]["read"]["clat_ns"]["N"], 0);
    assert!(d["jobs"][0]["read"]["clat_ns"].get("percentile").is_none());
}

#[test]
fn mixed_jobs_split_by_direction() {
    let j = job("[m]\nfilename=/x\nsize=1m\nrw=randrw\nrwmixread=75\n");
    let mut run = run_with(&[1000], 300, 100);
    let mut split = LatSplit::new(false);
    split.lat[0].record_n(1000, 300).unwrap();
    split.lat[1].record_n(9000, 100).unwrap();
    run.lat_split = Some(split);
    let d = doc_of(&j, &run, 0, false);
    assert_eq!(d["jobs"][0]["read"]["total_ios"], 300);
    assert_eq!(d["jobs"][0]["write"]["total_ios"], 100);
    assert_eq!(d["jobs"][0]["write"]["clat_ns"]["min"], 9000);
    assert_eq!(d["jobs"][0]["read"]["clat_ns"]["max"], 1000);
}
