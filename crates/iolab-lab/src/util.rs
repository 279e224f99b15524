//! Small helpers the experiments share: a default spec, configuration
//! builders, grouping of records, sizes scaled to the machine, tables.

use super::figure::{bytes, num};
use super::record::LabRecord;
use super::{Config, Ctx, Measured, Work};
use iolab_bench::spec::{CacheMode, StopRule, WorkloadSpec};
use iolab_bench::stats::Stats;
use std::collections::BTreeMap;
use std::path::Path;

pub(crate) const KIB: u64 = 1024;
pub(crate) const MIB: u64 = 1024 * 1024;

/// A single-thread buffered sequential pread of the whole file, cold.
pub(crate) fn spec(file: &Path, size: u64) -> WorkloadSpec {
    WorkloadSpec {
        file: file.to_path_buf(),
        file_size: size,
        cache: CacheMode::Cold,
        ..WorkloadSpec::default()
    }
}

/// A runner configuration.
pub(crate) fn bench(tags: &[(&str, String)], spec: WorkloadSpec, repeats: u32) -> Config {
    Config::new(
        tags,
        Work::Bench {
            spec: Box::new(spec),
            repeats,
        },
    )
}

/// A run that stops after `n` ops (over all threads).
pub(crate) fn stop_after_ops(n: u64) -> StopRule {
    StopRule {
        ops: Some(n),
        ..StopRule::default()
    }
}

/// A run that stops after `n` bytes (over all threads).
pub(crate) fn stop_after_bytes(n: u64) -> StopRule {
    StopRule {
        bytes: Some(n),
        ..StopRule::default()
    }
}

/// A run that stops after `ns` nanoseconds of measured time.
pub(crate) fn stop_after_ns(ns: u64) -> StopRule {
    StopRule {
        time_ns: Some(ns),
        ..StopRule::default()
    }
}

/// A data file size for the context: `want` at most, capped by a quarter
/// of memory (so warm runs stay cached) and a quarter of free space.
pub(crate) fn size_for(ctx: &Ctx, want: u64) -> u64 {
    let cap = (ctx.mem_bytes / 4).min(ctx.free_bytes / 4).max(MIB);
    want.min(cap) / MIB * MIB
}

/// Records grouped by a tag's value (in first-seen order of values sorted).
pub(crate) fn by<'a>(recs: &'a [LabRecord], tag: &str) -> BTreeMap<String, Vec<&'a LabRecord>> {
    let mut m: BTreeMap<String, Vec<&LabRecord>> = BTreeMap::new();
    for r in recs {
        m.entry(r.tag(tag).to_string()).or_default().push(r);
    }
    m
}

/// Sorted by a numeric tag.
pub(crate) fn sorted<'a>(mut v: Vec<&'a LabRecord>, tag: &str) -> Vec<&'a LabRecord> {
    v.sort_by(|a, b| a.num(tag).total_cmp(&b.num(tag)));
    v
}

/// The per-repeat values of an extra, or the samples for `""`.
pub(crate) fn values<'a>(r: &'a LabRecord, what: &str) -> &'a [f64] {
    if what.is_empty() {
        &r.samples
    } else {
        r.extra.get(what).map(Vec::as_slice).unwrap_or(&[])
    }
}

/// Statistics of `what` (see [`values`]).
pub(crate) fn st(r: &LabRecord, what: &str) -> Stats {
    Stats::of(values(r, what))
}

/// A plain-text table with aligned columns.
pub(crate) fn table(head: &[&str], rows: &[Vec<String>]) -> String {
    let mut w: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            if i < w.len() {
                w[i] = w[i].max(c.chars().count());
            }
        }
    }
    let line = |cells: Vec<String>| {
        cells
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{:>width$}", c, width = w[i.min(w.len() - 1)]))
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_string()
    };
    let mut s = line(head.iter().map(|h| h.to_string()).collect());
    s.push('\n');
    for r in rows {
        s.push_str(&line(r.clone()));
        s.push('\n');
    }
    s
}

/// "median [min–max]" of a stat.
pub(crate) fn mmm(s: &Stats, f: fn(f64) -> String) -> String {
    format!("{} [{}–{}]", f(s.median), f(s.min), f(s.max))
}

/// Tag value for a size.
pub(crate) fn b(x: u64) -> String {
    x.to_string()
}

/// Human label of a size tag.
pub(crate) fn hb(r: &LabRecord, tag: &str) -> String {
    bytes(r.num(tag))
}

/// Throughput text.
pub(crate) fn mibs(v: f64) -> String {
    format!("{} MiB/s", num(v))
}

/// A measured value from a system microbenchmark entry: per-repeat
/// medians, plus the entry's series as `x`/`y`/`y_min`/`y_max` extras.
pub(crate) fn sys_entry(
    name: &str,
    ctx: &Ctx,
    repeats: usize,
    per_repeat: bool,
) -> iolab_bench::Result<Measured> {
    let list = iolab_sysbench::select(&[name.to_string()])
        .map_err(|e| iolab_bench::BenchError::Usage(e.to_string()))?;
    let m = list[0];
    let cfg = iolab_sysbench::Config {
        scale: ctx.scale,
        repeat: if per_repeat { 1 } else { repeats },
        dir: ctx.dir.clone(),
        stop: ctx.stop,
    };
    let mut out = Measured {
        unit: "ns".into(),
        ..Measured::default()
    };
    let runs = if per_repeat { repeats.max(1) } else { 1 };
    for _ in 0..runs {
        let e = m
            .run(&cfg)
            .map_err(|e| iolab_bench::BenchError::Usage(format!("{name}: {e}")))?;
        if let Some((h, s)) = e.headline() {
            out.unit = h.unit().into();
            out.samples.push(s.median);
        }
        if let Some(sr) = e.series.first() {
            out.extra
                .insert("x".into(), sr.points.iter().map(|p| p.x).collect());
            out.extra
                .insert("y".into(), sr.points.iter().map(|p| p.y).collect());
            out.extra
                .insert("y_min".into(), sr.points.iter().map(|p| p.y_min).collect());
            out.extra
                .insert("y_max".into(), sr.points.iter().map(|p| p.y_max).collect());
            out.notes
                .push(format!("x: {}, y: {}", sr.x_unit, sr.y_unit));
        }
        out.notes.extend(e.notes.iter().cloned());
        out.notes.push(e.method.clone());
    }
    out.notes.dedup();
    Ok(out)
}

/// Range of a ratio `a / b` of two repeated quantities: (median, low, high).
pub(crate) fn ratio(a: &Stats, b: &Stats) -> (f64, f64, f64) {
    (a.median / b.median, a.min / b.max, a.max / b.min)
}

/// Block-size tags in increasing order, for categories.
pub(crate) fn cats(recs: &[&LabRecord], tag: &str) -> Vec<f64> {
    let mut v: Vec<f64> = recs.iter().map(|r| r.num(tag)).collect();
    v.sort_by(|a, b| a.total_cmp(b));
    v.dedup();
    v
}

/// Smallest x whose value is within `tol` of the largest (a plateau's
/// start), for points `(x, y)` in increasing x.
pub(crate) fn plateau(pts: &[(f64, f64)], tol: f64) -> f64 {
    let max = pts.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
    pts.iter()
        .find(|p| p.1 >= (1.0 - tol) * max)
        .map(|p| p.0)
        .unwrap_or(f64::NAN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plateau_is_the_first_within_tolerance() {
        let pts = [(1.0, 10.0), (2.0, 50.0), (4.0, 95.0), (8.0, 100.0)];
        assert_eq!(plateau(&pts, 0.1), 4.0);
        assert_eq!(plateau(&pts, 0.01), 8.0);
        assert!(plateau(&[], 0.1).is_nan());
    }

    #[test]
    fn table_aligns() {
        let t = table(&["a", "bb"], &[vec!["1".into(), "22222".into()]]);
        assert_eq!(t, "a     bb\n1  22222\n");
    }
}
