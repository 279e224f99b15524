//! fio's human-readable summary (`--output-format=normal`) and its terse
//! line format (version 3), from iolab's runs, followed by iolab's extras.

use super::json::{ctime, interval_samples, lat_buckets, sample_stats, share, side_lat, JobResult};
use hdrhistogram::Histogram;
use iolab_bench::spec::OpMix;
use std::fmt::Write;

/// A number with fio's 3-significant-digit style and a unit prefix
/// (`base` 1000: k, M, G; 1024: Ki, Mi, Gi).
pub fn num(v: f64, base: f64) -> String {
    let units: [&str; 5] = if base == 1024.0 {
        ["", "Ki", "Mi", "Gi", "Ti"]
    } else {
        ["", "k", "M", "G", "T"]
    };
    let mut v = v;
    let mut i = 0;
    // Up to four digits are shown whole (4096KiB); more are scaled and
    // shown with three significant digits (28.8MiB, 39.3k).
    while v >= 10_000.0 && i < units.len() - 1 {
        v /= base;
        i += 1;
    }
    let s = if i == 0 || v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    };
    format!("{s}{}", units[i])
}

/// The unit of a min/max/avg/stdev line: a larger unit only when every
/// figure is above 1000 of the smaller one (as fio shows them).
fn lat_unit(h: &Histogram<u64>) -> (&'static str, f64) {
    let all_above = |d: f64| {
        h.min() as f64 / d > 1000.0
            && h.max() as f64 / d > 1000.0
            && h.mean() / d > 1000.0
            && h.stdev() / d > 1000.0
    };
    if all_above(1e3) {
        ("msec", 1e6)
    } else if all_above(1.0) {
        ("usec", 1e3)
    } else {
        ("nsec", 1.0)
    }
}

/// The unit of a percentile block: chosen from the smallest and largest
/// values shown, so that they stay readable.
fn pct_unit(lo: u64, hi: u64) -> (&'static str, f64) {
    if lo > 2_000_000 && hi > 99_999_000 {
        ("msec", 1e6)
    } else if lo > 2_000 && hi > 99_999 {
        ("usec", 1e3)
    } else {
        ("nsec", 1.0)
    }
}

fn lat_line(o: &mut String, name: &str, h: &Histogram<u64>) {
    let (u, d) = lat_unit(h);
    let _ = writeln!(
        o,
        "    {name:>4} ({u}): min={}, max={}, avg={:.2}, stdev={:.2}",
        (h.min() as f64 / d).round(),
        (h.max() as f64 / d).round(),
        h.mean() / d,
        h.stdev() / d
    );
}

fn pct_block(o: &mut String, name: &str, h: &Histogram<u64>, pcts: &[f64]) {
    let lo = h.value_at_percentile(pcts.iter().cloned().fold(100.0, f64::min));
    let hi = h.value_at_percentile(pcts.iter().cloned().fold(0.0, f64::max));
    let (u, d) = pct_unit(lo, hi);
    let _ = writeln!(o, "    {name} percentiles ({u}):");
    for row in pcts.chunks(4) {
        let cells: Vec<String> = row
            .iter()
            .map(|&p| {
                format!(
                    "{:5.2}th=[{:5}]",
                    p,
                    (h.value_at_percentile(p) as f64 / d).round()
                )
            })
            .collect();
        let _ = writeln!(o, "     | {},", cells.join(", "));
    }
    // fio ends the block without the trailing comma.
    if o.ends_with(",\n") {
        o.truncate(o.len() - 2);
        o.push('\n');
    }
}

fn side_text(o: &mut String, r: &JobResult, read: bool) {
    let run = r.run;
    let job = r.job;
    let ops = if read { run.read_ops } else { run.write_ops };
    if ops == 0 {
        return;
    }
    let sh = share(run, read);
    let bytes = ops * job.spec.bs;
    let secs = run.duration_ns.max(1) as f64 / 1e9;
    let bw = bytes as f64 / secs;
    let _ = writeln!(
        o,
        "  {}: IOPS={}, BW={}B/s ({}B/s)({}B/{}msec)",
        if read { "read" } else { "write" },
        num(ops as f64 / secs, 1000.0),
        num(bw, 1024.0),
        num(bw, 1000.0),
        num(bytes as f64, 1024.0),
        run.duration_ns / 1_000_000
    );
    let h = side_lat(r, read);
    for (name, h) in [("slat", h.slat), ("clat", h.clat), ("lat", h.lat)] {
        if let Some(h) = h {
            lat_line(o, name, h);
        }
    }
    let lat_pcts = job.lat_percentiles || (job.clat_percentiles && h.clat.is_none());
    for (name, h, on) in [
        ("slat", h.slat, job.slat_percentiles),
        ("clat", h.clat, job.clat_percentiles),
        ("lat", h.lat, lat_pcts),
    ] {
        if let (Some(h), true) = (h, on) {
            pct_block(o, name, h, &job.percentiles);
        }
    }
    if !run.intervals.is_empty() {
        let (kib, iops) = interval_samples(run, sh);
        let (a, b, m, d) = sample_stats(&kib);
        let _ = writeln!(
            o,
            "   bw (  KiB/s): min={a:.0}, max={b:.0}, per=100.00%, avg={m:.2}, stdev={d:.2}, samples={}",
            kib.len()
        );
        let (a, b, m, d) = sample_stats(&iops);
        let _ = writeln!(
            o,
            "   iops        : min={a:.0}, max={b:.0}, avg={m:.2}, stdev={d:.2}, samples={}",
            iops.len()
        );
    }
}

/// The summary of one job in fio's shape, then iolab's extras.
pub fn job_text(r: &JobResult, pid: u32, started_secs: u64) -> String {
    let mut o = String::new();
    let job = r.job;
    let run = r.run;
    let _ = writeln!(
        o,
        "{}: (groupid={}, jobs={}): err= 0: pid={pid}: {}",
        job.name,
        job.groupid,
        job.numjobs,
        ctime(started_secs)
    );
    match job.spec.op {
        OpMix::Read => side_text(&mut o, r, true),
        OpMix::Write => side_text(&mut o, r, false),
        OpMix::Rw { .. } => {
            side_text(&mut o, r, true);
            side_text(&mut o, r, false);
        }
    }
    if let Some(y) = &run.sync_latency {
        // fio's block for fsync=N/fdatasync=N jobs (its values in ns here).
        let _ = writeln!(o, "  fsync/fdatasync/sync_file_range:");
        let _ = writeln!(
            o,
            "    sync (nsec): min={}, max={}, avg={:.2}, count={}",
            y.min_ns, y.max_ns, y.mean_ns, y.count
        );
        let _ = writeln!(
            o,
            "    sync percentiles (nsec): 50.00th=[{}], 99.00th=[{}], 99.90th=[{}], 99.99th=[{}]",
            y.p50_ns, y.p99_ns, y.p99_9_ns, y.p99_99_ns
        );
    }
    for (unit, rows) in lat_buckets(run.latency_hist.as_ref()) {
        let u = &unit["latency_".len()..];
        let cells: Vec<String> = rows
            .iter()
            .filter(|(_, p)| *p >= 0.01)
            .map(|(b, p)| format!("{b}={p:.2}%"))
            .collect();
        for chunk in cells.chunks(5) {
            let _ = writeln!(o, "  lat ({}sec)   : {}", &u[..1], chunk.join(", "));
        }
    }
    let nj = job.numjobs.max(1) as f64;
    let c = &run.cpu;
    let _ = writeln!(
        o,
        "  cpu          : usr={:.2}%, sys={:.2}%, ctx={}, majf={}, minf={}",
        c.user_pct / nj,
        c.sys_pct / nj,
        c.vol_csw + c.invol_csw,
        c.major_faults,
        c.minor_faults
    );
    extras_text(&mut o, r);
    o
}

/// iolab's lines under a job's fio-shaped summary: what ran, exact
/// percentiles, where it ran and beside what, and the mapping's notes.
fn extras_text(o: &mut String, r: &JobResult) {
    let (job, run, c) = (r.job, r.run, &r.run.cpu);
    let l = &run.latency;
    let _ = writeln!(
        o,
        "  iolab        : {}, cache resident before={:.1}%, cpu/op={:.0}ns{}",
        job.spec.label(),
        run.resident_before * 100.0,
        c.cpu_ns_per_op,
        c.sqpoll_pct
            .map(|p| format!(", sqpoll thread cpu={p:.1}%"))
            .unwrap_or_default()
    );
    let _ = writeln!(
        o,
        "  iolab latency: p50={}ns p99={}ns p99.9={}ns p99.99={}ns max={}ns (HdrHistogram, within 0.1 %)",
        l.p50_ns, l.p99_ns, l.p99_9_ns, l.p99_99_ns, l.max_ns
    );
    if let Some(p) = &run.placement {
        let _ = writeln!(o, "  iolab placed : {p}");
    }
    if let Some(w) = r.waker {
        let _ = writeln!(
            o,
            "  iolab wakers : {} (--waker=off for none)",
            w.describe()
        );
    }
    for n in &job.notes {
        let _ = writeln!(o, "  note: {n}");
    }
}

/// fio's "Run status group" lines for the jobs of one group.
pub fn group_text(group: u32, results: &[&JobResult]) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "\nRun status group {group} (all jobs):");
    for (read, name) in [(true, "READ"), (false, "WRITE")] {
        let mut bws = Vec::new();
        let (mut bytes, mut rmin, mut rmax, mut span) = (0u64, u64::MAX, 0u64, 0u64);
        for r in results {
            let ops = if read {
                r.run.read_ops
            } else {
                r.run.write_ops
            };
            if ops == 0 {
                continue;
            }
            let b = ops * r.job.spec.bs;
            let ms = r.run.duration_ns / 1_000_000;
            bytes += b;
            bws.push(b as f64 / (r.run.duration_ns.max(1) as f64 / 1e9));
            rmin = rmin.min(ms);
            rmax = rmax.max(ms);
            span = span.max(r.run.duration_ns);
        }
        if bws.is_empty() {
            continue;
        }
        // A group's jobs run at the same time: its rate is its bytes
        // over the longest job's time (fio's group run time).
        let bw = bytes as f64 / (span.max(1) as f64 / 1e9);
        let lo = bws.iter().cloned().fold(f64::MAX, f64::min);
        let hi = bws.iter().cloned().fold(0.0, f64::max);
        let _ = writeln!(
            o,
            "{name:>7}: bw={}B/s ({}B/s), {}B/s-{}B/s ({}B/s-{}B/s), io={}B ({}B), run={rmin}-{rmax}msec",
            num(bw, 1024.0),
            num(bw, 1000.0),
            num(lo, 1024.0),
            num(hi, 1024.0),
            num(lo, 1000.0),
            num(hi, 1000.0),
            num(bytes as f64, 1024.0),
            num(bytes as f64, 1000.0),
        );
    }
    o
}

/// fio's terse line (version 3) for one job.
// Long on purpose: fio's terse fields one after another, in fio's order,
// so each can be checked against fio's documentation line by line.
pub fn terse(r: &JobResult) -> String {
    let job = r.job;
    let run = r.run;
    let mut f: Vec<String> = vec![
        "3".into(),
        format!("iolab-{}", env!("CARGO_PKG_VERSION")),
        job.name.clone(),
        job.groupid.to_string(),
        "0".into(),
    ];
    let us = |h: &Histogram<u64>| -> [String; 4] {
        [
            (h.min() / 1000).to_string(),
            (h.max() / 1000).to_string(),
            format!("{:.6}", h.mean() / 1e3),
            format!("{:.6}", h.stdev() / 1e3),
        ]
    };
    let zero4 = || {
        [
            "0".to_string(),
            "0".into(),
            "0.000000".into(),
            "0.000000".into(),
        ]
    };
    for read in [true, false] {
        let ops = if read { run.read_ops } else { run.write_ops };
        let sl = side_lat(r, read);
        let bytes = ops * job.spec.bs;
        let secs = run.duration_ns.max(1) as f64 / 1e9;
        let on = ops > 0;
        f.push((bytes / 1024).to_string());
        f.push(if on {
            ((bytes as f64 / secs) / 1024.0).round().to_string()
        } else {
            "0".into()
        });
        f.push(if on {
            ((ops as f64) / secs).round().to_string()
        } else {
            "0".into()
        });
        f.push(if on {
            (run.duration_ns / 1_000_000).to_string()
        } else {
            "0".into()
        });
        for h in [sl.slat, sl.clat] {
            f.extend(h.map_or_else(zero4, us));
        }
        // fio's terse percentiles are clat's; lat's when clat is not timed.
        let h = sl.clat.or(sl.lat);
        for i in 0..20 {
            match (h, job.percentiles.get(i)) {
                (Some(h), Some(&p)) => {
                    f.push(format!("{p:.6}%={}", h.value_at_percentile(p) / 1000))
                }
                (None, Some(&p)) => f.push(format!("{p:.6}%=0")),
                _ => f.push("0%=0".into()),
            }
        }
        f.extend(sl.lat.map_or_else(zero4, us));
        let sh = share(run, read);
        let kib: Vec<f64> = run
            .intervals
            .iter()
            .map(|s| s.mib_per_s * 1024.0 * sh)
            .collect();
        let (a, b, m, d) = if on {
            sample_stats(&kib)
        } else {
            (0.0, 0.0, 0.0, 0.0)
        };
        f.push(format!("{a:.0}"));
        f.push(format!("{b:.0}"));
        f.push(if on {
            "100.000000%".into()
        } else {
            "0.000000%".into()
        });
        f.push(format!("{m:.6}"));
        f.push(format!("{d:.6}"));
    }
    let nj = job.numjobs.max(1) as f64;
    let c = &run.cpu;
    f.push(format!("{:.6}%", c.user_pct / nj));
    f.push(format!("{:.6}%", c.sys_pct / nj));
    f.push((c.vol_csw + c.invol_csw).to_string());
    f.push(c.major_faults.to_string());
    f.push(c.minor_faults.to_string());
    // IO depths: iolab keeps the queue at iodepth; the depth distribution
    // is not measured, so all of it is reported at the configured depth.
    let depth_idx = match job.spec.qd {
        1 => 0,
        2..=3 => 1,
        4..=7 => 2,
        8..=15 => 3,
        16..=31 => 4,
        32..=63 => 5,
        _ => 6,
    };
    for i in 0..7 {
        f.push(if i == depth_idx {
            "100.0%".into()
        } else {
            "0.0%".into()
        });
    }
    let b = lat_buckets(run.latency_hist.as_ref());
    // Terse v3: microseconds 2..1000, then milliseconds 2..>=2000 (the
    // nanosecond buckets are folded into the first microsecond one).
    let ns_total: f64 = b[0].1.iter().map(|x| x.1).sum();
    for (i, (_, p)) in b[1].1.iter().enumerate() {
        let p = if i == 0 { p + ns_total } else { *p };
        f.push(format!("{p:.2}%"));
    }
    for (_, p) in &b[2].1 {
        f.push(format!("{p:.2}%"));
    }
    f.join(";")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::tests::{job, run_with};

    #[test]
    fn numbers_in_fio_style() {
        assert_eq!(num(7366.9, 1000.0), "7367");
        assert_eq!(num(39_300.0, 1000.0), "39.3k");
        assert_eq!(num(30_174_848.0, 1024.0), "28.8Mi");
        assert_eq!(num(30_174_848.0, 1000.0), "30.2M");
    }

    #[test]
    fn normal_output_has_fio_s_shape() {
        let j = job("[r]\nfilename=/x\nsize=1m\n");
        let run = run_with(&[40_000, 50_000, 60_000, 170_000], 1024, 0);
        let r = JobResult {
            job: &j,
            run: &run,
            waker: None,
        };
        let t = job_text(&r, 7, 0);
        assert!(
            t.starts_with("r: (groupid=0, jobs=1): err= 0: pid=7: Thu Jan  1"),
            "{t}"
        );
        assert!(
            t.contains("  read: IOPS=512, BW=2048KiB/s (2097kB/s)(4096KiB/2000msec)"),
            "{t}"
        );
        assert!(t.contains("    clat (usec): min=40, max=170"), "{t}");
        assert!(
            t.contains("    clat percentiles (usec):\n     |  1.00th=[   40],"),
            "{t}"
        );
        assert!(t.contains("   bw (  KiB/s): min=1024, max=3072"), "{t}");
        assert!(t.contains("  cpu          : usr="), "{t}");
        let g = group_text(0, &[&r]);
        assert!(g.contains("   READ: bw=2048KiB/s (2097kB/s)"), "{g}");
        let line = terse(&r);
        let f: Vec<&str> = line.split(';').collect();
        assert_eq!(f.len(), 121, "{line}");
        assert_eq!(
            (f[0], f[2], f[5], f[6], f[7], f[8]),
            ("3", "r", "4096", "2048", "512", "2000")
        );
        assert_eq!(f[13], "40");
        assert!(f[17].starts_with("1.000000%="));
    }
}
