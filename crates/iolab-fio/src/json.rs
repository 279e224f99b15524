//! fio's JSON output (`--output-format=json` and `json+`) from iolab's
//! runs: fio's field names and units (`bw` in KiB/s, `*_ns` latencies,
//! `runtime` in ms, percentile keys like `"99.000000"`, json+ `bins`), so
//! tools that read fio's JSON read iolab's. What iolab measures beyond fio
//! goes under an `"iolab"` key of each job.
//!
//! Latency is placed as fio places it: for synchronous engines the call is
//! clat (and lat; slat has N=0); for asynchronous ones the submit call is
//! slat, from its end to the completion clat, and lat their sum. The
//! percentiles (and json+ bins) go under `clat_ns`, or `lat_ns` with
//! `lat_percentiles`. `gtod_reduce` and `disable_*lat` leave them empty,
//! as in fio. Reads and writes have their own histograms.

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
    /// The read-back of a job that verifies what it wrote: its reads.
    pub verify: Option<&'a RunMetrics>,
    /// The wakers that ran beside it (`--waker`), if any.
    pub waker: Option<&'a iolab_bench::env::WakerInfo>,
}

/// fio's percentile key (`99.000000`).
pub fn pct_key(p: f64) -> String {
    format!("{p:.6}")
}

/// fio's directions, in its order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// Reads.
    Read,
    /// Writes.
    Write,
    /// Trims.
    Trim,
}

impl Dir {
    /// The three, in fio's order.
    pub const ALL: [Dir; 3] = [Dir::Read, Dir::Write, Dir::Trim];

    /// fio's name (`read`, `write`, `trim`).
    pub fn name(self) -> &'static str {
        match self {
            Dir::Read => "read",
            Dir::Write => "write",
            Dir::Trim => "trim",
        }
    }
}

/// One direction of a job: its I/O and its latencies, as fio names them.
pub struct Side<'a> {
    /// Operations.
    pub ios: u64,
    /// Bytes.
    pub bytes: u64,
    /// Its time, ns (the run's, or the read-back's for verified reads).
    pub duration_ns: u64,
    /// The run it comes from (interval samples).
    pub run: &'a RunMetrics,
    /// Its share of the run's operations (for interval samples).
    pub share: f64,
    /// Submission latency (asynchronous engines).
    pub slat: Option<&'a Histogram<u64>>,
    /// Completion latency.
    pub clat: Option<&'a Histogram<u64>>,
    /// Total latency.
    pub lat: Option<&'a Histogram<u64>>,
}

impl Side<'_> {
    /// fio's runtime of the direction, ms (0 without I/O).
    pub fn runtime_ms(&self) -> u64 {
        if self.ios == 0 {
            0
        } else {
            (self.duration_ns / 1_000_000).max(1)
        }
    }

    /// Bytes per second over its runtime, as fio computes it.
    pub fn bw(&self) -> u64 {
        match self.runtime_ms() {
            0 => 0,
            ms => 1000 * self.bytes / ms,
        }
    }

    /// I/Os per second over its runtime.
    pub fn iops(&self) -> f64 {
        match self.runtime_ms() {
            0 => 0.0,
            ms => self.ios as f64 * 1000.0 / ms as f64,
        }
    }
}

/// A run's latency histograms of one direction (reads 0, writes 1): lat,
/// and slat and clat when the submit call was timed.
fn hists(run: &RunMetrics, d: usize, single: bool) -> [Option<&Histogram<u64>>; 3] {
    let lat = run
        .lat_split
        .as_ref()
        .map(|s| &s.lat[d])
        .or(run.latency_hist.as_ref().filter(|_| single));
    let parts = run.lat_split.as_ref().and_then(|s| s.parts.as_ref());
    match parts {
        Some([slat, clat]) => [Some(&slat[d]), Some(&clat[d]), lat],
        None => [None, None, lat],
    }
}

/// One direction of a job, its latencies placed as fio places them.
pub fn side<'a>(r: &JobResult<'a>, dir: Dir) -> Side<'a> {
    let (job, run) = (r.job, r.run);
    let rep = &job.report;
    if dir == Dir::Trim {
        let h = run.trim_hist.as_ref().filter(|h| !h.is_empty());
        let on = |x: bool| h.filter(|_| x);
        return Side {
            ios: run.trim_ops,
            bytes: run.trim_bytes,
            duration_ns: run.duration_ns,
            run,
            share: 0.0,
            slat: None,
            clat: on(rep.clat),
            lat: on(rep.lat),
        };
    }
    let verified = dir == Dir::Read && r.verify.is_some();
    let run = if verified {
        r.verify.expect("a read-back")
    } else {
        run
    };
    let read = dir == Dir::Read;
    let ios = if read { run.read_ops } else { run.write_ops };
    let bytes = if read {
        run.read_bytes
    } else {
        run.bytes.saturating_sub(run.read_bytes)
    };
    let single = verified || !matches!(job.spec.op, OpMix::Rw { .. });
    let [slat, clat, lat] = hists(run, (!read) as usize, single);
    let has = |h: Option<&'a Histogram<u64>>| h.filter(|h| ios > 0 && !h.is_empty());
    let (slat, clat, lat) = if job.spec.engine.is_sync() || verified && job.spec.engine.is_sync() {
        (None, has(lat), has(lat))
    } else if clat.is_some() {
        (has(slat), has(clat), has(lat))
    } else {
        // The submit call was not timed (disable_slat): the whole time is
        // both clat and lat, as fio's without slat.
        (None, has(lat), has(lat))
    };
    Side {
        ios,
        bytes,
        duration_ns: run.duration_ns,
        run,
        share: if run.ops == 0 {
            0.0
        } else {
            ios as f64 / run.ops as f64
        },
        slat: slat.filter(|_| rep.slat),
        clat: clat.filter(|_| rep.clat),
        lat: lat.filter(|_| rep.lat),
    }
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
        // fio's json+ has bins where it has percentiles.
        if bins {
            let mut m = Map::new();
            for v in h.iter_recorded() {
                m.insert(
                    h.highest_equivalent(v.value_iterated_to()).to_string(),
                    json!(v.count_at_value()),
                );
            }
            o.insert("bins".into(), Value::Object(m));
        }
    }
    Value::Object(o)
}

/// Min, max, mean, standard deviation of samples (as fio: sample stddev).
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

/// Per interval, one direction's KiB/s and IOPS.
pub fn interval_samples(s: &Side) -> (Vec<f64>, Vec<f64>) {
    if s.ios == 0 {
        return (Vec::new(), Vec::new());
    }
    let iv = &s.run.intervals;
    let kib = iv.iter().map(|x| x.mib_per_s * 1024.0 * s.share).collect();
    let iops = iv.iter().map(|x| x.iops * s.share).collect();
    (kib, iops)
}

/// What each direction's latencies report percentiles for: (slat, clat,
/// lat).
pub fn pct_flags(job: &FioJob) -> (bool, bool, bool) {
    let r = &job.report;
    (r.slat_percentiles, r.clat_percentiles, r.lat_percentiles)
}

/// A group's aggregate bandwidth per direction, bytes/s: what fio's
/// `bw_agg` (a job's share of it) is taken against.
pub fn group_agg(results: &[&JobResult], dir: Dir) -> f64 {
    let (bytes, span) = results.iter().fold((0u64, 0u64), |(b, t), r| {
        let s = side(r, dir);
        (b + s.bytes, t.max(s.duration_ns))
    });
    bytes as f64 / (span.max(1) as f64 / 1e9)
}

/// One direction (`read`, `write` or `trim`) of a job.
fn side_obj(r: &JobResult, dir: Dir, plus: bool, agg: f64) -> Value {
    let s = side(r, dir);
    let pct = r.job.report.percentiles.as_slice();
    let (ps, pc, pl) = pct_flags(r.job);
    let want = |on: bool| on.then_some(pct);
    let (kib, iops) = interval_samples(&s);
    let (bmin, bmax, bmean, bdev) = sample_stats(&kib);
    let (imin, imax, imean, idev) = sample_stats(&iops);
    let n = kib.len();
    // fio: a job's mean bandwidth as a share of its group's, at most 100.
    let agg_pct = if n > 0 && agg > 1024.0 {
        (bmean * 100.0 / (agg / 1024.0)).min(100.0)
    } else {
        0.0
    };
    json!({
        "io_bytes": s.bytes,
        "io_kbytes": s.bytes / 1024,
        "bw_bytes": s.bw(),
        "bw": s.bw() / 1024,
        "iops": s.iops(),
        "runtime": s.runtime_ms(),
        "total_ios": s.ios,
        "short_ios": 0,
        "drop_ios": 0,
        "slat_ns": lat_obj(s.slat, want(ps), plus),
        "clat_ns": lat_obj(s.clat, want(pc), plus),
        "lat_ns": lat_obj(s.lat, want(pl), plus),
        "bw_min": bmin.round() as u64,
        "bw_max": bmax.round() as u64,
        "bw_agg": agg_pct,
        "bw_mean": bmean,
        "bw_dev": bdev,
        "bw_samples": n,
        "iops_min": imin.round() as u64,
        "iops_max": imax.round() as u64,
        "iops_mean": imean,
        "iops_stddev": idev,
        "iops_samples": n,
    })
}

/// fio's latency distribution buckets: % of I/Os at or below each bound
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

/// fio's depth distributions as percentages: (level, submit, complete),
/// each with fio's bucket names.
pub fn depth_dists(run: &RunMetrics) -> [(&'static str, Vec<(&'static str, f64)>); 3] {
    let pct = |v: &[u64; 7]| -> Vec<f64> {
        let t: u64 = v.iter().sum();
        v.iter()
            .map(|x| {
                if t == 0 {
                    0.0
                } else {
                    *x as f64 * 100.0 / t as f64
                }
            })
            .collect()
    };
    let d = &run.depths;
    let level = ["1", "2", "4", "8", "16", "32", ">=64"];
    let batch = ["0", "4", "8", "16", "32", "64", ">=64"];
    let zip = |names: [&'static str; 7], v: Vec<f64>| names.into_iter().zip(v).collect();
    [
        ("iodepth_level", zip(level, pct(&d.level))),
        ("iodepth_submit", zip(batch, pct(&d.submit))),
        ("iodepth_complete", zip(batch, pct(&d.complete))),
    ]
}

/// The job's latency histogram over every direction (fio's distribution
/// buckets count every I/O).
pub fn all_lat(r: &JobResult) -> Option<Histogram<u64>> {
    let mut h = iolab_bench::metrics::new_histogram();
    for d in Dir::ALL {
        let s = side(r, d);
        if let Some(x) = s.clat.or(s.lat) {
            let _ = h.add(x);
        }
    }
    (!h.is_empty()).then_some(h)
}

/// One job's object in fio's `jobs` array; `aggs` are its group's
/// aggregate bandwidths (read, write, trim).
pub fn job_obj(r: &JobResult, plus: bool, aggs: [f64; 3]) -> Value {
    let (job, run) = (r.job, r.run);
    let nj = job.numjobs.max(1) as f64;
    let mut opts = Map::new();
    for (k, v) in &job.job_options {
        opts.insert(k.clone(), json!(v));
    }
    let mut o = Map::new();
    o.insert("jobname".into(), json!(job.name));
    o.insert("groupid".into(), json!(job.groupid));
    o.insert("error".into(), json!(0));
    o.insert("eta".into(), json!(0));
    let secs = run.duration_ns + r.verify.map_or(0, |v| v.duration_ns);
    o.insert("elapsed".into(), json!(secs.div_ceil(1_000_000_000)));
    o.insert("job options".into(), Value::Object(opts));
    if let Some(d) = &job.description {
        o.insert("desc".into(), json!(d));
    }
    for (d, agg) in Dir::ALL.into_iter().zip(aggs) {
        o.insert(d.name().into(), side_obj(r, d, plus, agg));
    }
    // fsync=N / fdatasync=N: every sync, with the job's percentiles.
    let syncs = run.sync_hist.as_ref();
    o.insert(
        "sync".into(),
        json!({
            "total_ios": syncs.map_or(0, |h| h.len()),
            "lat_ns": lat_obj(syncs, syncs.map(|_| job.report.percentiles.as_slice()), false),
        }),
    );
    o.insert("job_runtime".into(), json!(secs / 1_000_000));
    // fio's CPU is per job; with group reporting the average over the
    // jobs. iolab measures the process: divide by the jobs.
    o.insert("usr_cpu".into(), json!(run.cpu.user_pct / nj));
    o.insert("sys_cpu".into(), json!(run.cpu.sys_pct / nj));
    o.insert("ctx".into(), json!(run.cpu.vol_csw + run.cpu.invol_csw));
    o.insert("majf".into(), json!(run.cpu.major_faults));
    o.insert("minf".into(), json!(run.cpu.minor_faults));
    for (k, v) in depth_dists(run) {
        let m: Map<String, Value> = v
            .into_iter()
            .map(|(b, p)| (b.to_string(), json!(p)))
            .collect();
        o.insert(k.into(), Value::Object(m));
    }
    for (k, v) in lat_buckets(all_lat(r).as_ref()) {
        let m: Map<String, Value> = v.into_iter().map(|(b, p)| (b, json!(p))).collect();
        o.insert(k.into(), Value::Object(m));
    }
    let t = job.spec.pacing.lat_target;
    o.insert(
        "latency_depth".into(),
        json!(run.latency_depth.unwrap_or(job.spec.qd)),
    );
    o.insert("latency_target".into(), json!(t.map_or(0, |t| t.target_ns)));
    o.insert(
        "latency_percentile".into(),
        json!(t.map_or(100.0, |t| t.percentile)),
    );
    o.insert(
        "latency_window".into(),
        json!(t.map_or(0, |t| t.window_ns / 1000)),
    );
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
        "notes": r.job.notes,
        "warnings": r.job.warnings,
    })
}

/// fio's `disk_util` entries from the device counters of the runs (the
/// first run seen of each device).
pub fn disk_util(results: &[JobResult]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for r in results.iter().filter(|r| !r.job.spec.no_files) {
        let Some(v) = &r.run.device else { continue };
        for d in &v.devices {
            if seen.contains(&d.device) {
                continue;
            }
            seen.push(d.device.clone());
            let secs = d.interval_ns as f64 / 1e9;
            out.push(json!({
                "name": d.device,
                "read_ios": d.read_ios,
                "write_ios": d.write_ios,
                "read_merges": (d.rrqm_s * secs).round() as u64,
                "write_merges": (d.wrqm_s * secs).round() as u64,
                "read_ticks": (d.r_await_ms * d.read_ios as f64).round() as u64,
                "write_ticks": (d.w_await_ms * d.write_ios as f64).round() as u64,
                "in_queue": (d.aqu_sz * secs * 1000.0).round() as u64,
                "util": d.util_pct,
            }));
        }
    }
    out
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
    let jobs = results
        .iter()
        .map(|r| {
            let group: Vec<&JobResult> = results
                .iter()
                .filter(|x| x.job.groupid == r.job.groupid)
                .collect();
            let aggs = Dir::ALL.map(|d| group_agg(&group, d));
            job_obj(r, plus, aggs)
        })
        .collect();
    o.insert("jobs".into(), Value::Array(jobs));
    // fio has the key only when its jobs used a block device.
    let disks = disk_util(results);
    if results.iter().any(|r| r.job.report.disk_util) && !disks.is_empty() {
        o.insert("disk_util".into(), Value::Array(disks));
    }
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
pub(crate) mod tests;
