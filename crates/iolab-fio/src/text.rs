//! fio's human-readable output (`--output-format=normal`: the header, each
//! job's block, each group's line, the disk stats) and its terse line
//! (version 3), from iolab's runs, laid out as fio 3.33 lays them out
//! (its `num2str`, units and line breaks), followed by iolab's extras.

use super::json::{
    all_lat, ctime, depth_dists, group_agg, interval_samples, lat_buckets, pct_flags, sample_stats,
    side, Dir, JobResult, Side,
};
use crate::map::FioJob;
use hdrhistogram::Histogram;
use iolab_bench::spec::OpMix;
use std::fmt::Write;

/// fio's `num2str`: `num` in at most `maxlen` digits, scaled by 1000 (or
/// 1024 with `pow2`) with a unit prefix, `unit` appended.
pub fn num2str(num: u64, maxlen: usize, pow2: bool, unit: &str) -> String {
    let prefixes: [&str; 7] = if pow2 {
        ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
    } else {
        ["", "k", "M", "G", "T", "P", "E"]
    };
    let thousand: u64 = if pow2 { 1024 } else { 1000 };
    let (mut num, mut post, mut modulo, mut carry) = (num, 0usize, None, false);
    while post < prefixes.len() {
        if num.to_string().len() <= maxlen {
            break;
        }
        let m = num % thousand;
        modulo = Some(m);
        num /= thousand;
        carry = m >= thousand / 2;
        post += 1;
    }
    if post >= prefixes.len() {
        post = 0;
    }
    let Some(m) = modulo else {
        return format!("{num}{}{unit}", prefixes[post]);
    };
    let digits = num.to_string().len();
    if maxlen.saturating_sub(digits) <= 1 {
        return format!("{}{}{unit}", num + u64::from(carry), prefixes[post]);
    }
    let decimals = maxlen - digits - 1;
    let frac = format!("{:.*}", decimals, m as f64 / thousand as f64);
    let (num, frac) = if frac.starts_with('1') {
        (num + 1, &frac[2..])
    } else {
        (num, &frac[2..])
    };
    format!("{num}.{frac}{}{unit}", prefixes[post])
}

/// A number in fio's 4-significant-figure style with a unit prefix, as
/// its bandwidth figures are (`base` 1024: Ki, Mi; 1000: k, M).
pub fn num(v: f64, base: f64) -> String {
    num2str(v.round().max(0.0) as u64, 4, base == 1024.0, "")
}

/// A latency line (`    clat (usec): min=..., max=..., avg=..., stdev=...`),
/// in fio's unit choice.
fn lat_line(o: &mut String, name: &str, h: &Histogram<u64>) {
    let (mut min, mut max, mut mean, mut dev) = (h.min(), h.max(), h.mean(), h.stdev());
    let mut unit = "nsec";
    for (d, u, lo, hi, dv) in [
        (
            1_000_000u64,
            "msec",
            2_000_000u64,
            99_999_999u64,
            1_000_000.0,
        ),
        (1_000, "usec", 2_000, 99_999, 1_000.0),
    ] {
        if min > lo && max > hi && dev > dv {
            (min, max, mean, dev) = (min / d, max / d, mean / d as f64, dev / d as f64);
            unit = u;
            break;
        }
    }
    let _ = writeln!(
        o,
        "    {name} ({unit}): min={}, max={}, avg={mean:5.02}, stdev={dev:5.02}",
        num2str(min, 6, false, ""),
        num2str(max, 6, false, "")
    );
}

/// fio's percentile block: 4 (or fewer, as wide as they are) per line.
fn pct_block(o: &mut String, name: &str, h: &Histogram<u64>, pcts: &[f64]) {
    let vals: Vec<u64> = pcts.iter().map(|&p| h.value_at_percentile(p)).collect();
    let (minv, maxv) = (
        vals.iter().copied().min().unwrap_or(0),
        vals.iter().copied().max().unwrap_or(0),
    );
    let (scale, unit) = if minv > 2_000_000 && maxv > 99_999_999 {
        (2, "msec")
    } else if minv > 2_000 && maxv > 99_999 {
        (1, "usec")
    } else {
        (0, "nsec")
    };
    let div = 1000u64.pow(scale);
    let width = 5usize.max(((maxv / div).max(1) as f64).log10() as usize + 1);
    let per_line = 73 / (2 + 10 + width);
    let _ = write!(o, "    {name} percentiles ({unit}):\n     |");
    for (j, (&p, &v)) in pcts.iter().zip(&vals).enumerate() {
        if j != 0 && j % per_line == 0 {
            o.push_str("     |");
        }
        let mut v = v;
        for _ in 0..scale {
            v = v.div_ceil(1000);
        }
        let last = j == pcts.len() - 1;
        let _ = write!(
            o,
            " {p:5.2}th=[{v:width$}]{}",
            if last { '\n' } else { ',' }
        );
        if !last && j % per_line == per_line - 1 {
            o.push('\n');
        }
    }
}

/// One direction's block of a job.
fn side_text(o: &mut String, r: &JobResult, d: Dir, agg: f64) {
    let s = side(r, d);
    if s.ios == 0 {
        return;
    }
    let ms = s.runtime_ms();
    let bw = s.bw();
    let _ = writeln!(
        o,
        "  {}: IOPS={}, BW={}B/s ({}B/s)({}/{ms}msec){}",
        d.name(),
        num2str((1000 * s.ios) / ms, 4, false, ""),
        num2str(bw, 4, true, ""),
        num2str(bw, 4, false, ""),
        num2str(s.bytes, 4, true, "B"),
        if d == Dir::Write {
            "; 0 zone resets"
        } else {
            ""
        }
    );
    for (name, h) in [("slat", s.slat), ("clat", s.clat), (" lat", s.lat)] {
        if let Some(h) = h {
            lat_line(o, name, h);
        }
    }
    let (ps, pc, pl) = pct_flags(r.job);
    let pcts = &r.job.report.percentiles;
    for (name, h, on) in [
        ("slat", s.slat, ps),
        ("clat", s.clat, pc),
        ("lat", s.lat, pl),
    ] {
        if let (Some(h), true) = (h, on) {
            pct_block(o, name, h, pcts);
        }
    }
    samples_text(o, &s, agg);
}

/// The bw and iops lines of one direction.
fn samples_text(o: &mut String, s: &Side, agg: f64) {
    let (kib, iops) = interval_samples(s);
    if kib.is_empty() {
        return;
    }
    let (a, b, m, d) = sample_stats(&kib);
    let per = if agg > 1024.0 {
        (m * 100.0 / (agg / 1024.0)).min(100.0)
    } else {
        100.0
    };
    let (unit, k) = if m > 1024.0 * 1024.0 {
        ("MiB", 1024.0)
    } else {
        ("KiB", 1.0)
    };
    let _ = writeln!(
        o,
        "   bw ({unit:>5}/s): min={:5}, max={:5}, per={per:3.2}%, avg={:5.02}, stdev={:5.02}, samples={}",
        (a / k) as u64,
        (b / k) as u64,
        m / k,
        d / k,
        kib.len()
    );
    let (a, b, m, d) = sample_stats(&iops);
    let _ = writeln!(
        o,
        "   iops        : min={:5}, max={:5}, avg={m:5.02}, stdev={d:5.02}, samples={}",
        a as u64,
        b as u64,
        iops.len()
    );
}

/// fio's `lat (usec)   : 2=0.05%, ...` lines.
fn buckets_text(o: &mut String, r: &JobResult) {
    let h = all_lat(r);
    for (unit, rows) in lat_buckets(h.as_ref()) {
        let u = &unit["latency_".len()..];
        let cells: Vec<String> = rows
            .iter()
            .filter(|(_, p)| *p > 0.0)
            .map(|(b, p)| format!("{b}={p:3.2}%"))
            .collect();
        for chunk in cells.chunks(5) {
            let _ = writeln!(o, "  lat ({}sec)   : {}", &u[..1], chunk.join(", "));
        }
    }
}

/// The cpu, IO depths, issued and latency-target lines.
fn depths_text(o: &mut String, r: &JobResult) {
    let (job, run) = (r.job, r.run);
    let nj = job.numjobs.max(1) as f64;
    let c = &run.cpu;
    let _ = writeln!(
        o,
        "  cpu          : usr={:3.2}%, sys={:3.2}%, ctx={}, majf={}, minf={}",
        c.user_pct / nj,
        c.sys_pct / nj,
        c.vol_csw + c.invol_csw,
        c.major_faults,
        c.minor_faults
    );
    let [level, submit, complete] = depth_dists(run);
    let row = |v: &[(&str, f64)]| -> String {
        v.iter()
            .map(|(k, p)| format!("{k}={p:3.1}%"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = writeln!(o, "  IO depths    : {}", row(&level.1));
    let _ = writeln!(o, "     submit    : {}", row(&submit.1));
    let _ = writeln!(o, "     complete  : {}", row(&complete.1));
    let ios = Dir::ALL.map(|d| side(r, d).ios);
    let _ = writeln!(
        o,
        "     issued rwts: total={},{},{},0 short=0,0,0,0 dropped=0,0,0,0",
        ios[0], ios[1], ios[2]
    );
    let t = job.spec.pacing.lat_target;
    let (target, window) = t.map_or((0.0, 0.0), |t| (t.target_ns as f64, t.window_ns as f64));
    let scaled = |ns: f64| -> String {
        if ns >= 1e9 {
            format!("{:.2}s", ns / 1e9)
        } else if ns >= 1e6 {
            format!("{:.2}ms", ns / 1e6)
        } else if ns >= 1e3 {
            format!("{:.2}us", ns / 1e3)
        } else {
            format!("{ns:.2}ns")
        }
    };
    let _ = writeln!(
        o,
        "     latency   : target={}, window={}, percentile={:.2}%, depth={}",
        scaled(target),
        scaled(window),
        t.map_or(100.0, |t| t.percentile),
        run.latency_depth.unwrap_or(job.spec.qd)
    );
}

/// The block of one job in fio's shape, then iolab's extras; `aggs` are
/// its group's aggregate bandwidths.
pub fn job_text(r: &JobResult, pid: u32, started_secs: u64, aggs: [f64; 3]) -> String {
    let mut o = String::new();
    let job = r.job;
    let _ = writeln!(
        o,
        "{}: (groupid={}, jobs={}): err= 0: pid={pid}: {}",
        job.name,
        job.groupid,
        job.numjobs,
        ctime(started_secs)
    );
    if let Some(d) = &job.description {
        let _ = writeln!(o, "  Description  : [{d}]");
    }
    for (d, agg) in Dir::ALL.into_iter().zip(aggs) {
        side_text(&mut o, r, d, agg);
    }
    buckets_text(&mut o, r);
    if let Some(h) = r.run.sync_hist.as_ref().filter(|h| !h.is_empty()) {
        let _ = writeln!(o, "  fsync/fdatasync/sync_file_range:");
        lat_line(&mut o, "sync", h);
        pct_block(&mut o, "sync", h, &job.report.percentiles);
    }
    depths_text(&mut o, r);
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

/// fio's `rw=` name of a job.
fn rw_name(job: &FioJob) -> String {
    use iolab_bench::spec::AccessPattern as P;
    let random = !matches!(job.spec.pattern, P::Seq | P::Stride(_) | P::Back(_));
    let base = match (job.spec.op, job.spec.trim) {
        (_, Some(t)) if t.only => "trim",
        (_, Some(_)) => "trimwrite",
        (OpMix::Read, _) => "read",
        (OpMix::Write, _) => "write",
        (OpMix::Rw { .. }, _) => "rw",
    };
    match (random, base) {
        (false, b) => b.to_string(),
        (true, "rw") => "randrw".into(),
        (true, b) => format!("rand{b}"),
    }
}

/// fio's lines before the jobs run: one per section (`name: (g=0): rw=...`,
/// `...` for its other clones), the version, `Starting N processes`.
pub fn header(jobs: &[&FioJob]) -> String {
    let mut o = String::new();
    for (i, j) in jobs.iter().enumerate() {
        if j.jobnum > 0 {
            if j.jobnum == 1 && i > 0 {
                o.push_str("...\n");
            }
            continue;
        }
        let s = &j.spec;
        let law = |d: usize| -> (u64, u64) {
            s.sizes
                .as_ref()
                .map_or((s.bs, s.bs), |z| (z.of(d).min(), z.of(d).max()))
        };
        let bs: Vec<String> = ["R", "W", "T"]
            .iter()
            .enumerate()
            .map(|(d, n)| {
                let (lo, hi) = law(d);
                format!(
                    "({n}) {}-{}",
                    num2str(lo, 4, true, "B"),
                    num2str(hi, 4, true, "B")
                )
            })
            .collect();
        let _ = writeln!(
            o,
            "{}: (g={}): rw={}, bs={}, ioengine={}, iodepth={}",
            j.name,
            j.groupid,
            rw_name(j),
            bs.join(", "),
            s.engine.desc().fio.unwrap_or(s.engine.name()),
            s.qd
        );
    }
    let _ = writeln!(o, "iolab-{} (fio job language)", env!("CARGO_PKG_VERSION"));
    let n = jobs.len();
    let _ = writeln!(o, "Starting {n} process{}\n", if n > 1 { "es" } else { "" });
    o
}

/// fio's "Run status group" lines for the jobs of one group.
pub fn group_text(group: u32, results: &[&JobResult]) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "\nRun status group {group} (all jobs):");
    for (d, name) in Dir::ALL.into_iter().zip(["   READ", "  WRITE", "   TRIM"]) {
        let sides: Vec<Side> = results
            .iter()
            .map(|r| side(r, d))
            .filter(|s| s.ios > 0)
            .collect();
        if sides.is_empty() {
            continue;
        }
        let bytes: u64 = sides.iter().map(|s| s.bytes).sum();
        let agg = group_agg(results, d) as u64;
        let bws: Vec<u64> = sides.iter().map(|s| s.bw()).collect();
        let (lo, hi) = (
            bws.iter().min().copied().unwrap_or(0),
            bws.iter().max().copied().unwrap_or(0),
        );
        let rmin = sides.iter().map(|s| s.runtime_ms()).min().unwrap_or(0);
        let rmax = sides.iter().map(|s| s.runtime_ms()).max().unwrap_or(0);
        let f = |v: u64, p: bool, u: &str| num2str(v, 4, p, u);
        let _ = writeln!(
            o,
            "{name}: bw={} ({}), {}-{} ({}-{}), io={} ({}), run={rmin}-{rmax}msec",
            f(agg, true, "B/s"),
            f(agg, false, "B/s"),
            f(lo, true, "B/s"),
            f(hi, true, "B/s"),
            f(lo, false, "B/s"),
            f(hi, false, "B/s"),
            f(bytes, true, "B"),
            f(bytes, false, "B"),
        );
    }
    o
}

/// fio's `Disk stats (read/write):` block from the device counters.
pub fn disk_text(results: &[JobResult]) -> String {
    let disks = super::json::disk_util(results);
    if disks.is_empty() {
        return String::new();
    }
    let mut o = String::from("\nDisk stats (read/write):\n");
    for d in disks {
        let _ = writeln!(
            o,
            "  {}: ios={}/{}, merge={}/{}, ticks={}/{}, in_queue={}, util={:3.2}%",
            d["name"].as_str().unwrap_or(""),
            d["read_ios"],
            d["write_ios"],
            d["read_merges"],
            d["write_merges"],
            d["read_ticks"],
            d["write_ticks"],
            d["in_queue"],
            d["util"].as_f64().unwrap_or(0.0)
        );
    }
    o
}

/// The terse fields of one direction (fio's `show_ddir_status_terse`).
fn terse_side(f: &mut Vec<String>, r: &JobResult, d: Dir, agg: f64) {
    let s = side(r, d);
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
    f.push((s.bytes >> 10).to_string());
    f.push((s.bw() / 1024).to_string());
    f.push(
        (1000 * s.ios)
            .checked_div(s.runtime_ms())
            .unwrap_or(0)
            .to_string(),
    );
    f.push(s.runtime_ms().to_string());
    for h in [s.slat, s.clat] {
        f.extend(h.map_or_else(zero4, us));
    }
    // fio's terse percentiles are clat's (lat's with lat_percentiles).
    let (_, pc, pl) = pct_flags(r.job);
    let h = if pl { s.lat } else { s.clat.filter(|_| pc) };
    let pcts = &r.job.report.percentiles;
    for i in 0..20 {
        match (h, pcts.get(i)) {
            (Some(h), Some(&p)) => f.push(format!("{p:.6}%={}", h.value_at_percentile(p) / 1000)),
            (None, Some(&p)) => f.push(format!("{p:.6}%=0")),
            _ => f.push("0%=0".into()),
        }
    }
    f.extend(s.lat.map_or_else(zero4, us));
    let (kib, _) = interval_samples(&s);
    let (a, b, m, dv) = sample_stats(&kib);
    // A job's mean as a share of its group's bandwidth, as fio's.
    let agg = if kib.is_empty() {
        0.0
    } else if agg > 1024.0 {
        (m * 100.0 / (agg / 1024.0)).min(100.0)
    } else {
        100.0
    };
    f.push(format!("{}", a as u64));
    f.push(format!("{}", b as u64));
    f.push(format!("{agg:.6}%"));
    f.push(format!("{m:.6}"));
    f.push(format!("{dv:.6}"));
}

/// fio's terse line (version 3) for one job: its 121 fields, then 9 per
/// disk of the run; `aggs` are its group's aggregate bandwidths.
pub fn terse(r: &JobResult, disks: &[serde_json::Value], aggs: [f64; 3]) -> String {
    let (job, run) = (r.job, r.run);
    let mut f: Vec<String> = vec![
        "3".into(),
        format!("iolab-{}", env!("CARGO_PKG_VERSION")),
        job.name.clone(),
        job.groupid.to_string(),
        "0".into(),
    ];
    terse_side(&mut f, r, Dir::Read, aggs[0]);
    terse_side(&mut f, r, Dir::Write, aggs[1]);
    let nj = job.numjobs.max(1) as f64;
    let c = &run.cpu;
    f.push(format!("{:.6}%", c.user_pct / nj));
    f.push(format!("{:.6}%", c.sys_pct / nj));
    f.push((c.vol_csw + c.invol_csw).to_string());
    f.push(c.major_faults.to_string());
    f.push(c.minor_faults.to_string());
    for (_, p) in &depth_dists(run)[0].1 {
        f.push(format!("{p:3.1}%"));
    }
    let b = lat_buckets(all_lat(r).as_ref());
    // Terse v3: microseconds 2..1000, then milliseconds 2..>=2000 (the
    // nanosecond buckets are folded into the first microsecond one).
    let ns_total: f64 = b[0].1.iter().map(|x| x.1).sum();
    for (i, (_, p)) in b[1].1.iter().enumerate() {
        let p = if i == 0 { p + ns_total } else { *p };
        f.push(format!("{p:3.2}%"));
    }
    for (_, p) in &b[2].1 {
        f.push(format!("{p:3.2}%"));
    }
    for d in disks {
        f.push(d["name"].as_str().unwrap_or("").to_string());
        for k in [
            "read_ios",
            "write_ios",
            "read_merges",
            "write_merges",
            "read_ticks",
            "write_ticks",
            "in_queue",
        ] {
            f.push(d[k].to_string());
        }
        f.push(format!("{:3.2}%", d["util"].as_f64().unwrap_or(0.0)));
    }
    f.join(";")
}

#[cfg(test)]
mod tests;
