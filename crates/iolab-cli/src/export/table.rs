//! The human-readable text: a detailed block for one configuration, a
//! compact table for sweeps, and the definition of latency under both.

use iolab_bench::prepare::human;
use iolab_bench::record::{BenchRecord, RunMetrics, LATENCY_DEFINITION};
use std::fmt::Write;

/// Formats nanoseconds with a readable unit.
pub fn ns(v: f64) -> String {
    if v < 1e3 {
        format!("{v:.0} ns")
    } else if v < 1e6 {
        format!("{:.1} µs", v / 1e3)
    } else if v < 1e9 {
        format!("{:.2} ms", v / 1e6)
    } else {
        format!("{:.2} s", v / 1e9)
    }
}

/// Formats a count with thousands separators.
pub fn count(v: f64) -> String {
    let s = format!("{:.0}", v);
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 && c != '-' {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn describe(rec: &BenchRecord) -> String {
    let s = &rec.spec;
    let mut d = format!("{} {} {} {}", s.engine, s.op.name(), s.pattern, human(s.bs));
    if !s.engine.is_sync() {
        let _ = write!(d, " qd {} batch {}", s.qd, s.batch_submit);
    }
    let _ = write!(d, " threads {}", s.threads);
    if s.file_per_thread {
        d.push_str(" file-per-thread");
    }
    let files = s.files_of(0).len();
    if files > 1 {
        let _ = write!(d, " {files} files in turn");
    }
    if s.offset > 0 {
        let _ = write!(d, " from {}", human(s.offset));
    }
    if let Some(p) = &s.cpus {
        let how = if p.split { "split" } else { "shared" };
        let _ = write!(d, " cpus {} {how}", p.list());
    }
    d.push_str(if s.direct { " O_DIRECT" } else { " buffered" });
    let _ = write!(d, " cache {}", s.cache.name());
    d
}

/// The detailed block for one configuration.
// Long on purpose: one line of the table after another, as printed.
pub fn detail(rec: &BenchRecord) -> String {
    let mut o = String::new();
    let Some(r) = rec.median_run() else {
        return o;
    };
    let _ = writeln!(o, "{}  {}", rec.label, describe(rec));
    let _ = writeln!(
        o,
        "  resident before  {:.1} % of the file in the page cache, after {:.1} %{}",
        r.resident_before * 100.0,
        r.resident_after * 100.0,
        match r.cache_held {
            Some(true) => format!(" (cache {} held)", rec.spec.cache.name()),
            Some(false) => format!(" (cache {} did NOT hold)", rec.spec.cache.name()),
            None => String::new(),
        }
    );
    if let iolab_bench::spec::AccessPattern::Skewed(k) = rec.spec.pattern {
        let blocks = rec.spec.file_size / rec.spec.bs.max(1);
        let _ = writeln!(o, "  {}", k.hot_set_line(blocks));
    }
    if let Some(b) = &r.mem {
        let _ = writeln!(o, "  buffers          {}", b.describe());
    }
    if let Some(p) = &r.placement {
        let _ = writeln!(o, "  placed on        {p}");
    }
    if let Some(w) = &rec.env.waker {
        let _ = writeln!(o, "  wakers           {}", w.describe());
    }
    let _ = writeln!(
        o,
        "  throughput       {:.1} MiB/s   {} IOPS   ({} in {:.2} s){}",
        r.mib_per_s,
        count(r.iops),
        human(r.bytes),
        r.duration_ns as f64 / 1e9,
        if r.interrupted { "  [interrupted]" } else { "" }
    );
    let l = &r.latency;
    let times = |parts: [(&str, f64); 4]| {
        let v: Vec<String> = parts
            .iter()
            .map(|(k, t)| format!("{k} {}", ns(*t)))
            .collect();
        v.join("  ")
    };
    use iolab_bench::lat_record::LatRecord;
    if rec.spec.lat == LatRecord::Off {
        let _ = writeln!(o, "  latency          not recorded (--lat off)");
    } else {
        let _ = writeln!(
            o,
            "  latency          {}",
            times([
                ("min", l.min_ns as f64),
                ("mean", l.mean_ns),
                ("p50", l.p50_ns as f64),
                ("p90", l.p90_ns as f64)
            ])
        );
        let _ = writeln!(
            o,
            "                   {}",
            times([
                ("p99", l.p99_ns as f64),
                ("p99.9", l.p99_9_ns as f64),
                ("p99.99", l.p99_99_ns as f64),
                ("max", l.max_ns as f64)
            ])
        );
    }
    if let LatRecord::Sampled(n) = rec.spec.lat {
        let _ = writeln!(
            o,
            "                   1 in {n} ops timed, at random: {} of {} ops",
            count(l.count as f64),
            count(r.ops as f64)
        );
    }
    if let Some(n) = rec.spec.copy_to_gpu {
        let _ = writeln!(
            o,
            "  latency covers   the read and the copy of its bytes into GPU {n} (an op ends once they are in GPU memory)"
        );
    }
    if let (Some(y), Some(e)) = (&r.sync_latency, rec.spec.sync_every) {
        let _ = writeln!(
            o,
            "  syncs            {} every {} write(s): {} calls, {}",
            e.call(),
            e.writes,
            count(y.count as f64),
            times([
                ("p50", y.p50_ns as f64),
                ("p99", y.p99_ns as f64),
                ("p99.9", y.p99_9_ns as f64),
                ("max", y.max_ns as f64)
            ])
        );
    }
    let c = &r.cpu;
    let _ = writeln!(
        o,
        "  cpu              user {:.1} %  system {:.1} %  (of one core; {} per op)",
        c.user_pct,
        c.sys_pct,
        ns(c.cpu_ns_per_op)
    );
    let sp = &c.split;
    let _ = writeln!(
        o,
        "  cpu by thread    submitting {:.1} % (user {:.1}, system {:.1}; what fio counts)  helpers {:.1} %  kernel io threads {:.1} %",
        sp.submit_pct(),
        sp.submit_user_pct,
        sp.submit_sys_pct,
        sp.helpers_pct,
        sp.kernel_pct
    );
    if let Some(p) = c.sqpoll_pct {
        let _ = writeln!(
            o,
            "  sqpoll thread    {p:.1} % of one core (kernel thread iou-sqp, included in system)"
        );
        let waits = match c.spin_waits {
            Some(0) | None => "sleeping in io_uring_enter".to_string(),
            Some(n) => format!(
                "spinning on the CQ ring ({} waits met spinning)",
                count(n as f64)
            ),
        };
        let _ = writeln!(o, "  sqpoll waits     {waits} (--sqpoll-wait)");
    }
    let _ = writeln!(
        o,
        "  context switches {} voluntary, {} involuntary;  page faults {} minor, {} major",
        count(c.vol_csw as f64),
        count(c.invol_csw as f64),
        count(c.minor_faults as f64),
        count(c.major_faults as f64)
    );
    if let Some(d) = &r.device {
        for l in d.lines() {
            let _ = writeln!(o, "  {l}");
        }
    }
    if rec.runs.len() > 1 {
        let m = &rec.summary.mib_per_s;
        let p = &rec.summary.p99_ns;
        let _ = writeln!(
            o,
            "  {} repeats       MiB/s mean {:.1} median {:.1} min {:.1} max {:.1} sd {:.1}",
            rec.runs.len(),
            m.mean,
            m.median,
            m.min,
            m.max,
            m.stddev
        );
        let _ = writeln!(
            o,
            "                   p99   mean {} median {} min {} max {} sd {}",
            ns(p.mean),
            ns(p.median),
            ns(p.min),
            ns(p.max),
            ns(p.stddev)
        );
    }
    o
}

/// A configuration in words, for messages (tables use its label): e.g.
/// "io_uring, random 4 KiB reads, depth 32, O_DIRECT".
pub fn in_words(s: &iolab_bench::spec::WorkloadSpec) -> String {
    use iolab_bench::spec::{AccessPattern, OpMix};
    let pattern = match s.pattern {
        AccessPattern::Seq => "sequential".to_string(),
        AccessPattern::Rand => "random".to_string(),
        p => p.to_string(),
    };
    let op = match s.op {
        OpMix::Read => "reads".to_string(),
        OpMix::Write => "writes".to_string(),
        OpMix::Rw { read_pct } => format!("ops ({read_pct} % reads)"),
    };
    let mut d = format!("{}, {pattern} {} {op}", s.engine, human(s.bs));
    if !s.engine.is_sync() {
        let _ = write!(d, ", depth {}", s.qd);
    }
    if s.workers() > 1 {
        let _ = write!(d, ", {} threads", s.workers());
    }
    d.push_str(if s.direct { ", O_DIRECT" } else { ", buffered" });
    d
}

/// What the letters of a sweep's labels mean (under its table).
pub fn label_legend() -> String {
    use iolab::engine::{Label, ENGINES};
    let engines: Vec<String> = ENGINES
        .iter()
        .map(|e| {
            let l = match e.label {
                Label::Plain(l) | Label::Depth(l) | Label::DepthBatch(l) | Label::Pool(l) => l,
            };
            format!("{l} {}", e.name)
        })
        .collect();
    format!(
        "label: the engine ({}), its depth and submit batch (U32B1: 32 in flight, submitted 1 at a time; W16P4: 4 helper threads), then T2 2 threads, D O_DIRECT, M fixed buffers, F registered files, S SQPOLL, H hipri.\n",
        engines.join(", ")
    )
}

/// The compact table of a sweep.
pub fn sweep(recs: &[BenchRecord]) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{:<14} {:<8} {:<7} {:>8} {:>4} {:>4} {:>5} {:>6} {:>10} {:>8} {:>10} {:>10} {:>10} {:>10} {:>6}",
        "label", "engine", "pattern", "bs", "qd", "bat", "thr", "cache", "MiB/s", "sd", "IOPS", "p50", "p99", "p99.9", "cpu%"
    );
    for rec in recs {
        let Some(r) = rec.median_run() else { continue };
        let s = &rec.spec;
        let _ = writeln!(
            o,
            "{:<14} {:<8} {:<7} {:>8} {:>4} {:>4} {:>5} {:>6} {:>10.1} {:>8.1} {:>10} {:>10} {:>10} {:>10} {:>6.1}",
            rec.label,
            s.engine.name(),
            s.pattern.to_string(),
            human(s.bs),
            s.qd,
            s.batch_submit,
            s.threads,
            s.cache.name(),
            r.mib_per_s,
            rec.summary.mib_per_s.stddev,
            count(r.iops),
            ns(r.latency.p50_ns as f64),
            ns(r.latency.p99_ns as f64),
            ns(r.latency.p99_9_ns as f64),
            r.cpu.user_pct + r.cpu.sys_pct
        );
    }
    o.push_str(&label_legend());
    if recs.iter().any(|r| r.spec.copy_to_gpu.is_some()) {
        o.push_str("Labels ending >G N: an op's latency covers the read and the copy of its bytes into GPU N.\n");
    }
    o
}

/// The footer under every latency table.
pub fn footer(repeats: usize) -> String {
    let mut s = format!("{LATENCY_DEFINITION}.\n");
    if repeats > 1 {
        s.push_str("Rows show the run with the median throughput; sd is across repeats.\n");
    }
    s
}

/// One live interval line.
pub fn interval_line(s: &iolab_bench::record::IntervalSample) -> String {
    format!(
        "  {:>8.1} s  {:>10.1} MiB/s  {:>10} IOPS  p50 {:>9}  p99 {:>9}",
        s.t_ms as f64 / 1000.0,
        s.mib_per_s,
        count(s.iops),
        ns(s.p50_ns as f64),
        ns(s.p99_ns as f64)
    )
}

/// Whether a run looks suspicious enough to warn about it; `sequential`:
/// the run visits blocks in order (the advice differs).
pub fn warnings(r: &RunMetrics, sequential: bool) -> Vec<String> {
    let mut w = Vec::new();
    if r.cache_held == Some(false) {
        let advice = if r.resident_before > iolab_bench::residency::COLD_MAX_RESIDENT_AFTER {
            "the file was already cached when the run began (--cache cold could not evict it)"
        } else if sequential {
            "after one pass the file is read from memory: use --io-size of at most the file, a larger --size, or --direct"
        } else {
            "random reads came back to pages read earlier: use --direct, a larger --size, or fewer --ops"
        };
        w.push(format!(
            "the page cache did not stay as asked: {:.1} % of the data was in memory before, {:.1} % after, so some reads may have come from memory; {advice}",
            r.resident_before * 100.0,
            r.resident_after * 100.0
        ));
    }
    if r.ops > 0 && r.duration_ns < 100_000_000 {
        w.push(format!(
            "measured only {}: use --time or a larger --size for stable numbers",
            ns(r.duration_ns as f64)
        ));
    }
    if r.errors > 0 {
        w.push(format!(
            "{} ops failed; first: {}",
            r.errors,
            r.first_errors.first().map_or("(not kept)", |s| s.as_str())
        ));
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(ns(812.0), "812 ns");
        assert_eq!(ns(95_200.0), "95.2 µs");
        assert_eq!(ns(12_345_678.0), "12.35 ms");
        assert_eq!(count(1234567.0), "1,234,567");
        assert_eq!(count(12.0), "12");
    }
}
