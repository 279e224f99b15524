//! fio's JSON output (`--output-format=json` and `json+`) from iolab's
//! runs: fio's field names and units (`bw` in KiB/s, `*_ns` latencies,
//! `runtime` in ms, percentile keys like `"99.000000"`, json+ `bins`), so
//! tools that read fio's JSON read iolab's. What iolab measures beyond fio
//! goes under an `"iolab"` key of each job.
//!
//! Latency: for synchronous engines the measured time is the whole call,
//! fio's clat (and lat); for asynchronous ones it is from the submit call
//! to the completion, fio's lat. When the job asks for slat
//! (`disable_slat=0`, `slat_percentiles=1`) the submit call is timed too,
//! giving slat and clat; otherwise both are left empty (`N: 0`). Reads and
//! writes of a mixed job have their own histograms, as in fio.

use super::map::FioJob;
use hdrhistogram::Histogram;
use iolab_bench::record::RunMetrics;
use iolab_bench::spec::OpMix;
use serde_json::{json, Map, Value};

/// One job's result, as the output formats need it.
pub struct JobResult<'a> {
    /// The job.
    pub job: &'a FioJob,
    /// Its measured run.
    pub run: &'a RunMetrics,
    /// The wakers that ran beside it (`--waker`), if any.
    pub waker: Option<&'a iolab_bench::env::WakerInfo>,
}

/// fio's percentile key (`99.000000`).
pub fn pct_key(p: f64) -> String {
    format!("{p:.6}")
}

/// Statistics of one latency kind (`slat_ns`, `clat_ns`, `lat_ns`).
fn lat_obj(h: Option<&Histogram<u64>>, pcts: Option<&[f64]>, bins: bool) -> Value {
    let Some(h) = h.filter(|h| !h.is_empty()) else {
        return json!({"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0});
    };
    let mut o = Map::new();
    o.insert("min".into(), json!(h.min()));
    o.insert("max".into(), json!(h.max()));
    o.insert("mean".into(), json!(h.mean()));
    o.insert("stddev".into(), json!(h.stdev()));
    o.insert("N".into(), json!(h.len()));
    if let Some(ps) = pcts {
        let mut m = Map::new();
        for &p in ps {
            m.insert(pct_key(p), json!(h.value_at_percentile(p)));
        }
        o.insert("percentile".into(), Value::Object(m));
    }
    // fio's json+ has bins where it has percentiles.
    if bins && pcts.is_some() {
        let mut m = Map::new();
        for v in h.iter_recorded() {
            m.insert(
                h.highest_equivalent(v.value_iterated_to()).to_string(),
                json!(v.count_at_value()),
            );
        }
        o.insert("bins".into(), Value::Object(m));
    }
    Value::Object(o)
}

/// Min, max, mean, standard deviation of samples (population, as fio).
pub fn sample_stats(v: &[f64]) -> (f64, f64, f64, f64) {
    if v.is_empty() {
        return (0.0, 0.0, 0.0, 0.0);
    }
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = if v.len() > 1 {
        v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    let (lo, hi) = v
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
    (lo, hi, mean, var.sqrt())
}

/// The share of a run's ops going one direction.
pub fn share(run: &RunMetrics, read: bool) -> f64 {
    let ops = if read { run.read_ops } else { run.write_ops };
    if run.ops == 0 {
        0.0
    } else {
        ops as f64 / run.ops as f64
    }
}

/// Per interval, one direction's KiB/s and IOPS (`sh`: its share of the ops).
pub fn interval_samples(run: &RunMetrics, sh: f64) -> (Vec<f64>, Vec<f64>) {
    let kib = run
        .intervals
        .iter()
        .map(|s| s.mib_per_s * 1024.0 * sh)
        .collect();
    let iops = run.intervals.iter().map(|s| s.iops * sh).collect();
    (kib, iops)
}

/// Whether the job's engine is synchronous (clat = the whole call).
pub fn sync_engine(job: &FioJob) -> bool {
    job.spec.engine.is_sync()
}

/// One direction's latencies as fio names them; None when not measured.
pub struct SideLat<'a> {
    /// Submission latency (asynchronous engines, when asked).
    pub slat: Option<&'a Histogram<u64>>,
    /// Completion latency.
    pub clat: Option<&'a Histogram<u64>>,
    /// Total latency.
    pub lat: Option<&'a Histogram<u64>>,
}

/// The slat, clat and lat histograms of one direction of a job.
pub fn side_lat<'a>(r: &JobResult<'a>, read: bool) -> SideLat<'a> {
    let run = r.run;
    let ops = if read { run.read_ops } else { run.write_ops };
    let d = (!read) as usize;
    let some = |h: Option<&'a Histogram<u64>>| h.filter(|h| ops > 0 && !h.is_empty());
    let lat = some(
        run.lat_split
            .as_ref()
            .map(|s| &s.lat[d])
            .or(run.latency_hist.as_ref()),
    );
    let parts = run.lat_split.as_ref().and_then(|s| s.parts.as_ref());
    match parts {
        _ if sync_engine(r.job) => SideLat {
            slat: None,
            clat: lat,
            lat,
        },
        Some([slat, clat]) => SideLat {
            slat: some(Some(&slat[d])),
            clat: some(Some(&clat[d])),
            lat,
        },
        None => SideLat {
            slat: None,
            clat: None,
            lat,
        },
    }
}

/// One direction (`read` or `write`) of a job.
fn side(r: &JobResult, read: bool, plus: bool) -> Value {
    let run = r.run;
    let job = r.job;
    let ops = if read { run.read_ops } else { run.write_ops };
    let sh = share(run, read);
    let bytes = ops * job.spec.bs;
    let runtime_ms = run.duration_ns / 1_000_000;
    let secs = run.duration_ns.max(1) as f64 / 1e9;
    let bw_bytes = if ops > 0 { bytes as f64 / secs } else { 0.0 };
    let h = side_lat(r, read);
    let want = |on: bool| {
        if on {
            Some(job.percentiles.as_slice())
        } else {
            None
        }
    };
    // Without clat (an untimed submit), lat carries clat's percentiles.
    let lat_pcts = job.lat_percentiles || (job.clat_percentiles && h.clat.is_none());
    let slat = lat_obj(h.slat, want(job.slat_percentiles), plus);
    let clat = lat_obj(h.clat, want(job.clat_percentiles), plus);
    let lat = lat_obj(h.lat, want(lat_pcts), plus);
    let (kib, iops) = interval_samples(run, sh);
    let (bmin, bmax, bmean, bdev) = sample_stats(&kib);
    let (imin, imax, imean, idev) = sample_stats(&iops);
    let n = if ops > 0 { run.intervals.len() } else { 0 };
    json!({
        "io_bytes": bytes,
        "io_kbytes": bytes / 1024,
        "bw_bytes": bw_bytes.round() as u64,
        "bw": (bw_bytes / 1024.0).round() as u64,
        "iops": if ops > 0 { ops as f64 / secs } else { 0.0 },
        "runtime": if ops > 0 { runtime_ms } else { 0 },
        "total_ios": ops,
        "short_ios": 0,
        "drop_ios": 0,
        "slat_ns": slat,
        "clat_ns": clat,
        "lat_ns": lat,
        "bw_min": if n > 0 { bmin.round() as u64 } else { 0 },
        "bw_max": if n > 0 { bmax.round() as u64 } else { 0 },
        "bw_agg": if n > 0 { 100.0 } else { 0.0 },
        "bw_mean": if n > 0 { bmean } else { 0.0 },
        "bw_dev": if n > 0 { bdev } else { 0.0 },
        "bw_samples": n,
        "iops_min": if n > 0 { imin.round() as u64 } else { 0 },
        "iops_max": if n > 0 { imax.round() as u64 } else { 0 },
        "iops_mean": if n > 0 { imean } else { 0.0 },
        "iops_stddev": if n > 0 { idev } else { 0.0 },
        "iops_samples": n,
    })
}

/// fio's latency distribution buckets: % of ops at or below each bound
/// (and above the previous one), in ns, us and ms.
pub fn lat_buckets(h: Option<&Histogram<u64>>) -> [(&'static str, Vec<(String, f64)>); 3] {
    const NS: [u64; 10] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000];
    const MS: [u64; 11] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000, 2000];
    let total = h.map_or(0, |h| h.len()).max(1) as f64;
    let count = |lo: u64, hi: u64| -> f64 {
        h.map_or(0, |h| {
            if hi <= lo {
                0
            } else {
                h.count_between(lo + 1, hi)
            }
        }) as f64
            * 100.0
            / total
    };
    let mut out = [
        ("latency_ns", Vec::new()),
        ("latency_us", Vec::new()),
        ("latency_ms", Vec::new()),
    ];
    let mut prev = 0u64;
    for (i, mult) in [1u64, 1_000].into_iter().enumerate() {
        for b in NS {
            let hi = b * mult;
            out[i].1.push((b.to_string(), count(prev, hi)));
            prev = hi;
        }
    }
    for b in MS {
        let hi = b * 1_000_000;
        out[2].1.push((b.to_string(), count(prev, hi)));
        prev = hi;
    }
    let above = h.map_or(0, |h| {
        if h.max() > prev {
            h.count_between(prev + 1, h.max())
        } else {
            0
        }
    }) as f64
        * 100.0
        / total;
    out[2].1.push((">=2000".into(), above));
    out
}

/// One job's object in fio's `jobs` array.
pub fn job_obj(r: &JobResult, plus: bool) -> Value {
    let job = r.job;
    let run = r.run;
    let nj = job.numjobs.max(1) as f64;
    let mut opts = Map::new();
    for (k, v) in &job.job_options {
        opts.insert(k.clone(), json!(v));
    }
    let empty_side = {
        let mut e = side(r, true, false);
        for k in [
            "io_bytes",
            "io_kbytes",
            "bw_bytes",
            "bw",
            "total_ios",
            "runtime",
            "bw_samples",
            "iops_samples",
        ] {
            e[k] = json!(0);
        }
        e["iops"] = json!(0.0);
        e["slat_ns"] = lat_obj(None, None, false);
        e["clat_ns"] = lat_obj(None, None, false);
        e["lat_ns"] = lat_obj(None, None, false);
        e
    };
    let (read, write) = match job.spec.op {
        OpMix::Read => (side(r, true, plus), empty_side.clone()),
        OpMix::Write => (empty_side.clone(), side(r, false, plus)),
        OpMix::Rw { .. } => (side(r, true, plus), side(r, false, plus)),
    };
    let mut o = Map::new();
    o.insert("jobname".into(), json!(job.name));
    o.insert("groupid".into(), json!(job.groupid));
    o.insert("error".into(), json!(0));
    o.insert("eta".into(), json!(0));
    o.insert(
        "elapsed".into(),
        json!(run.duration_ns.div_ceil(1_000_000_000)),
    );
    o.insert("job options".into(), Value::Object(opts));
    o.insert("read".into(), read);
    o.insert("write".into(), write);
    o.insert("trim".into(), empty_side);
    // fsync=N / fdatasync=N: every sync, with the job's percentiles.
    let syncs = run.sync_hist.as_ref();
    o.insert(
        "sync".into(),
        json!({
            "total_ios": syncs.map_or(0, |h| h.len()),
            "lat_ns": lat_obj(syncs, syncs.map(|_| job.percentiles.as_slice()), false),
        }),
    );
    o.insert("job_runtime".into(), json!(run.duration_ns / 1_000_000));
    // fio's CPU is per job; with group reporting the average over the
    // jobs. iolab measures the process: divide by the jobs (its threads).
    o.insert("usr_cpu".into(), json!(run.cpu.user_pct / nj));
    o.insert("sys_cpu".into(), json!(run.cpu.sys_pct / nj));
    o.insert("ctx".into(), json!(run.cpu.vol_csw + run.cpu.invol_csw));
    o.insert("majf".into(), json!(run.cpu.major_faults));
    o.insert("minf".into(), json!(run.cpu.minor_faults));
    for (k, v) in lat_buckets(run.latency_hist.as_ref()) {
        let m: Map<String, Value> = v.into_iter().map(|(b, p)| (b, json!(p))).collect();
        o.insert(k.into(), Value::Object(m));
    }
    o.insert("latency_depth".into(), json!(job.spec.qd));
    o.insert("iolab".into(), extras(r));
    Value::Object(o)
}

/// What iolab measured beyond fio, and how fio's terms were mapped.
pub fn extras(r: &JobResult) -> Value {
    let run = r.run;
    let l = &run.latency;
    json!({
        "label": r.job.spec.label(),
        "spec": r.job.spec,
        "cache_resident_before": run.resident_before,
        "sqpoll_cpu_pct": run.cpu.sqpoll_pct,
        "waker": r.waker,
        "cpu_ns_per_op": run.cpu.cpu_ns_per_op,
        "latency_definition": iolab_bench::record::LATENCY_DEFINITION,
        "latency_exact_ns": {
            "p50": l.p50_ns, "p90": l.p90_ns, "p99": l.p99_ns,
            "p99.9": l.p99_9_ns, "p99.99": l.p99_99_ns, "max": l.max_ns
        },
        "percentiles_accuracy": "HdrHistogram, 3 significant digits (every value within 0.1 %)",
        "mixed_latency": matches!(r.job.spec.op, OpMix::Rw { .. })
            .then_some("reads and writes share one latency histogram in iolab's runner; both sides show it"),
        "notes": r.job.notes,
        "warnings": r.job.warnings,
    })
}

/// The whole document: `plus` adds json+ `bins`.
pub fn document(results: &[JobResult], started_unix_ms: u64, plus: bool) -> Value {
    let mut globals = Map::new();
    if let Some(r) = results.first() {
        for (k, v) in &r.job.global_options {
            globals.insert(k.clone(), json!(v));
        }
    }
    let mut o = Map::new();
    o.insert(
        "fio version".into(),
        json!(format!(
            "iolab-{} (fio job language)",
            env!("CARGO_PKG_VERSION")
        )),
    );
    o.insert("timestamp".into(), json!(started_unix_ms / 1000));
    o.insert("timestamp_ms".into(), json!(started_unix_ms));
    o.insert("time".into(), json!(ctime(started_unix_ms / 1000)));
    if !globals.is_empty() {
        o.insert("global options".into(), Value::Object(globals));
    }
    o.insert(
        "jobs".into(),
        Value::Array(results.iter().map(|r| job_obj(r, plus)).collect()),
    );
    Value::Object(o)
}

/// A Unix time as C's `ctime` prints it, in UTC (`Mon Nov 23 17:06:29 2026`).
pub fn ctime(secs: u64) -> String {
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let (h, m, s) = (rem / 3600, rem % 3600 / 60, rem % 60);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let mo = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(mo <= 2);
    const WD: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MO: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{} {} {d:2} {h:02}:{m:02}:{s:02} {y}",
        WD[(days % 7) as usize],
        MO[(mo - 1) as usize]
    )
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use iolab_bench::metrics::{new_histogram, LatencySummary};
    use iolab_bench::record::IntervalSample;

    #[test]
    fn ctime_matches_c() {
        assert_eq!(ctime(0), "Thu Jan  1 00:00:00 1970");
        assert_eq!(ctime(1_795_979_189), "Sun Nov 29 19:06:29 2026");
    }

    pub(crate) fn run_with(lat: &[u64], reads: u64, writes: u64) -> RunMetrics {
        let mut h = new_histogram();
        for &l in lat {
            h.record(l).unwrap();
        }
        RunMetrics {
            duration_ns: 2_000_000_000,
            bytes: (reads + writes) * 4096,
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
        let j = job("[r]\nfilename=/x\nsize=1m\npercentile_list=50:99\n");
        let run = run_with(&[1000, 2000, 3000, 4000], 1024, 0);
        let d = doc_of(&j, &run, 1_700_000_000_000, true);
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
        assert!(r["clat_ns"]["percentile"].get("50.000000").is_some());
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
    }

    #[test]
    fn asynchronous_engines_report_lat_not_clat() {
        let j = job("[r]\nfilename=/x\nsize=1m\nioengine=libaio\niodepth=4\n");
        let run = run_with(&[1000, 2000], 2, 0);
        let d = doc_of(&j, &run, 0, false);
        let r = &d["jobs"][0]["read"];
        assert_eq!(r["clat_ns"]["N"], 0);
        assert_eq!(r["lat_ns"]["N"], 2);
        assert!(r["lat_ns"].get("percentile").is_some());
        assert!(r["lat_ns"].get("bins").is_none());
    }

    #[test]
    fn mixed_jobs_split_by_ops() {
        let j = job("[m]\nfilename=/x\nsize=1m\nrw=randrw\nrwmixread=75\n");
        let run = run_with(&[1000], 300, 100);
        let d = doc_of(&j, &run, 0, false);
        assert_eq!(d["jobs"][0]["read"]["total_ios"], 300);
        assert_eq!(d["jobs"][0]["write"]["total_ios"], 100);
        assert!(d["jobs"][0]["iolab"]["mixed_latency"].is_string());
    }
}
