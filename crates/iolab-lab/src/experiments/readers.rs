//! `readers` (study 000): application reading techniques against the
//! fraction of a file read in random 4 KiB requests (cold cache), and
//! against request size: where does mmap overtake buffered reads?
//!
//! Techniques: `mmap` (copy out of a mapping), `buffered 4 KiB` (pread of
//! each request), `io_uring depth 32`, and in the request-size sweep
//! `stream` (a buffered stream). The thesis's 13 % crossover was measured
//! against its 4 MiB-buffered reader; here it is looked for against
//! buffered 4 KiB requests, which is what a random 4 KiB reader issues.
//!
//! Reading more than memory: random 4 KiB reads over regions of a file
//! from half to several times the memory left, warm, with a balloon
//! ([`crate::squeeze`]) leaving [`LEAVE`] of memory so "more than memory"
//! happens on a 24 GiB machine; mmap against buffered 4 KiB.

use crate::figure::{self, Axis, Figure, LineSeries, Pt};
use crate::record::LabRecord;
use crate::util::*;
use crate::verdict::{over_range, Finding, Verdict};
use crate::{Analysis, Config, Ctx, Experiment, Work};
use iolab::engine::EngineKind;
use iolab_bench::spec::{AccessPattern, CacheMode, WorkloadSpec};
use std::collections::BTreeMap;
use std::path::Path;

/// The experiment.
pub struct Readers;

const NAME: &str = "readers";
/// The thesis's crossover, fraction of the file.
const THESIS: f64 = 0.13;
/// Reproduced when the crossover is within this factor of the thesis's.
const FACTOR: f64 = 4.0;
/// Memory the balloon leaves available at quick and full scale (the
/// machine stays usable for others; the page cache gets about this).
pub(crate) const LEAVE: u64 = 2048 * MIB;
/// Data at most this fraction of the memory left fits in it...
const FITS: f64 = 0.6;
/// ...and at least this multiple of it outgrows it (clear of the few
/// hundred MiB the kernel keeps free or spends elsewhere).
const OUTGROWS: f64 = 1.25;
/// mmap "collapses" when out of memory it keeps at most this fraction of
/// its in-memory throughput (the thesis saw about 1/5).
const COLLAPSE: f64 = 0.5;

fn technique(s: &mut WorkloadSpec, t: &str) {
    match t {
        "mmap" => s.engine = EngineKind::Mmap,
        "io_uring depth 32" => {
            s.engine = EngineKind::Uring;
            s.qd = 32;
        }
        "stream" => s.engine = EngineKind::Stream,
        _ => s.engine = EngineKind::Pread,
    }
}

/// First fraction from which mmap stays at least as fast as buffered,
/// comparing `m(mmap)` with `b(buffered)`; NaN if never.
fn crossover(pairs: &[(f64, f64, f64)]) -> f64 {
    for i in 0..pairs.len() {
        if pairs[i..].iter().all(|p| p.1 >= p.2) {
            return pairs[i].0;
        }
    }
    f64::NAN
}

/// The fraction sweep: each technique reads a growing fraction of the
/// file in random 4 KiB requests (each block at most once), cold.
fn fraction_configs(ctx: &Ctx, file: &Path, size: u64, repeats: u32) -> Vec<Config> {
    let fractions: Vec<f64> = ctx.pick(
        vec![0.05, 0.5, 1.0],
        vec![0.01, 0.02, 0.05, 0.1, 0.13, 0.2, 0.5, 1.0],
        vec![0.005, 0.01, 0.02, 0.05, 0.1, 0.13, 0.2, 0.3, 0.5, 0.75, 1.0],
    );
    let blocks = size / 4096;
    let mut v = Vec::new();
    for t in ["mmap", "buffered 4 KiB", "io_uring depth 32"] {
        for &f in &fractions {
            let mut s = spec(file, size);
            technique(&mut s, t);
            s.pattern = AccessPattern::Shuffle;
            s.cache = CacheMode::Cold;
            s.stop = stop_after_ops(((blocks as f64 * f).round() as u64).max(1));
            v.push(bench(
                &[
                    ("sweep", "fraction".into()),
                    ("technique", t.into()),
                    ("fraction", format!("{f}")),
                ],
                s,
                repeats,
            ));
        }
    }
    v
}

/// The request-size sweep: each technique (and a buffered stream) reads
/// the same amount of the file, cold, in requests of growing size.
fn request_configs(ctx: &Ctx, file: &Path, size: u64, repeats: u32) -> Vec<Config> {
    let reqs: Vec<u64> = ctx.pick(
        vec![256, 64 * KIB],
        vec![256, 4 * KIB, 64 * KIB, MIB, 16 * MIB],
        vec![
            256,
            KIB,
            4 * KIB,
            16 * KIB,
            64 * KIB,
            256 * KIB,
            MIB,
            4 * MIB,
            16 * MIB,
            64 * MIB,
        ],
    );
    let amount = size.min(ctx.pick(MIB, 64 * MIB, 256 * MIB));
    let mut v = Vec::new();
    for t in ["stream", "buffered 4 KiB", "mmap", "io_uring depth 32"] {
        for &r in reqs.iter().filter(|&&r| r <= size) {
            let mut s = spec(file, size);
            technique(&mut s, t);
            s.bs = r;
            s.pattern = if t == "stream" {
                AccessPattern::Seq
            } else {
                AccessPattern::Shuffle
            };
            s.cache = CacheMode::Cold;
            s.stop = stop_after_bytes((amount / r).max(1) * r);
            v.push(bench(
                &[
                    ("sweep", "request".into()),
                    ("technique", t.into()),
                    ("request", b(r)),
                ],
                s,
                repeats,
            ));
        }
    }
    v
}

/// The reading-more-than-memory sweep: random 4 KiB reads (with
/// replacement, so pages are re-read and the cache matters) for a fixed
/// time over regions of one file, warm, with the balloon in place.
fn memory_configs(ctx: &Ctx) -> Vec<Config> {
    let l = LEAVE;
    let leave = ctx.pick(None, Some(l), Some(l));
    let regions: Vec<u64> = ctx.pick(
        vec![MIB, 4 * MIB],
        vec![l / 4, l / 2, 3 * l / 2],
        vec![l / 4, l / 2, 3 * l / 4, l, 3 * l / 2, 2 * l, 3 * l],
    );
    // The file may take half the free space beyond 2 GiB (it must be
    // larger than the memory left, so a quarter would often rule it out).
    let room_on_disk = ctx.free_bytes.saturating_sub(2048 * MIB) / 2;
    let regions: Vec<u64> = regions.into_iter().filter(|&r| r <= room_on_disk).collect();
    let Some(&file_bytes) = regions.iter().max() else {
        return Vec::new();
    };
    let file = ctx.data_file(file_bytes);
    let time = ctx.pick(100, 3_000, 5_000) * 1_000_000;
    let repeats = ctx.pick(1, 2, 3);
    let mut v = Vec::new();
    for t in ["mmap", "buffered 4 KiB"] {
        for &r in &regions {
            let mut s = spec(&file, r);
            technique(&mut s, t);
            s.pattern = AccessPattern::Rand;
            s.cache = CacheMode::Warm;
            s.stop = stop_after_ns(time);
            v.push(Config::new(
                &[
                    ("sweep", "memory".into()),
                    ("technique", t.into()),
                    ("data", b(r)),
                ],
                Work::Squeezed {
                    spec: Box::new(s),
                    repeats,
                    leave,
                    file_bytes,
                },
            ));
        }
    }
    v
}

/// Data size over the memory left with the balloon in place (measured;
/// NaN without it).
fn over_room(r: &LabRecord) -> f64 {
    let room = st(r, "room_bytes").median;
    if room > 0.0 {
        r.num("data") / room
    } else {
        f64::NAN
    }
}

/// The out-of-memory and in-memory records of one technique: the
/// largest data that fits and the smallest that outgrows.
fn in_out<'a>(g: &[&'a LabRecord]) -> (Option<&'a LabRecord>, Option<&'a LabRecord>) {
    let fit = g
        .iter()
        .filter(|r| over_room(r) <= FITS)
        .max_by(|a, b| over_room(a).total_cmp(&over_room(b)));
    let out = g
        .iter()
        .filter(|r| over_room(r) >= OUTGROWS)
        .min_by(|a, b| over_room(a).total_cmp(&over_room(b)));
    (fit.copied(), out.copied())
}

/// Records grouped by their `technique` tag.
type ByTechnique<'a> = BTreeMap<String, Vec<&'a LabRecord>>;

/// Figure, table rows and findings of the memory sweep.
fn memory_analysis(recs: &[LabRecord], out: &mut Analysis) {
    let mut tech = ByTechnique::new();
    for r in recs.iter().filter(|r| r.tag("sweep") == "memory") {
        tech.entry(r.tag("technique").to_string())
            .or_default()
            .push(r);
    }
    if tech.is_empty() {
        return;
    }
    out.figures.push(memory_figure(&tech));
    out.table
        .push_str("\nReading more than memory (balloon in place):\n");
    out.table.push_str(&memory_table(&tech));
    out.findings.extend(memory_findings(&tech));
}

/// Throughput against the data size over the memory left, a line per
/// technique.
fn memory_figure(tech: &ByTechnique) -> Figure {
    let series: Vec<LineSeries> = tech
        .iter()
        .map(|(t, g)| {
            let mut g = g.clone();
            g.sort_by(|a, b| over_room(a).total_cmp(&over_room(b)));
            LineSeries {
                name: t.clone(),
                pts: g
                    .iter()
                    .filter(|r| over_room(r).is_finite())
                    .map(|r| Pt::of(over_room(r), &r.stats()))
                    .collect(),
            }
        })
        .collect();
    figure::lines(
        "readers-memory",
        "Random 4 KiB reads, warm, data size against the memory left (balloon)",
        Axis::new("data read / memory left (ratio)", true, |v| {
            format!("{v:.2}")
        }),
        Axis::new("throughput (MiB/s)", true, figure::num),
        &series,
    )
}

/// A row per technique and data size: the memory left, how much was
/// cached before, the throughput.
fn memory_table(tech: &ByTechnique) -> String {
    let mut rows = Vec::new();
    for (t, g) in tech {
        for r in sorted(g.clone(), "data") {
            rows.push(vec![
                t.clone(),
                hb(r, "data"),
                format!("{:.0} MiB", st(r, "room_bytes").median / MIB as f64),
                format!("{:.0} %", st(r, "resident_before").median * 100.0),
                mibs(r.stats().median),
            ]);
        }
    }
    table(
        &[
            "technique",
            "data",
            "memory left",
            "cached before",
            "throughput",
        ],
        &rows,
    )
}

/// The two findings of the memory sweep: mmap's collapse once the data
/// outgrows memory, and mmap against buffered 4 KiB reads out of memory.
fn memory_findings(tech: &ByTechnique) -> [Finding; 2] {
    let get = |t: &str| in_out(tech.get(t).map(Vec::as_slice).unwrap_or(&[]));
    let (m_in, m_out) = get("mmap");
    let (b_in, b_out) = get("buffered 4 KiB");
    let desc = |r: Option<&LabRecord>| match r {
        Some(r) => format!("{} = {:.2}× memory left", hb(r, "data"), over_room(r)),
        None => "none".into(),
    };
    let (collapse, versus) = match (m_in, m_out, b_out) {
        (Some(mi), Some(mo), Some(bo)) => {
            let (c, clo, chi) = ratio(&mo.stats(), &mi.stats());
            let (d, dlo, dhi) = ratio(&mo.stats(), &bo.stats());
            let bdrop = b_in
                .map(|bi| format!("{:.2}", bo.stats().median / bi.stats().median))
                .unwrap_or_else(|| "n/a".into());
            (
                (
                    over_range(clo, chi, |x| x <= COLLAPSE),
                    format!(
                        "mmap {} in memory ({}) → {} out of it ({}): ratio {c:.2} (repeats {clo:.2}–{chi:.2}); buffered 4 KiB kept {bdrop}",
                        mibs(mi.stats().median),
                        desc(Some(mi)),
                        mibs(mo.stats().median),
                        desc(Some(mo)),
                    ),
                ),
                (
                    over_range(dlo, dhi, |x| x < 1.0),
                    format!(
                        "at {}: mmap {} vs buffered {}: ratio {d:.2} (repeats {dlo:.2}–{dhi:.2})",
                        hb(mo, "data"),
                        mibs(mo.stats().median),
                        mibs(bo.stats().median)
                    ),
                ),
            )
        }
        _ => {
            let why = format!(
                "no data size on both sides of the memory left (mmap: fits {}, outgrows {})",
                desc(m_in),
                desc(m_out)
            );
            (
                (Verdict::Inconclusive, why.clone()),
                (Verdict::Inconclusive, why),
            )
        }
    };
    [
        Finding::new(
            NAME,
            format!(
                "mmap collapses once the data outgrows memory: random 4 KiB reads over data ≥ {OUTGROWS}× the memory left keep ≤ {COLLAPSE} of mmap's throughput on data ≤ {FITS}× it (thesis: about 1/5)"
            ),
            collapse.0,
            collapse.1,
        ),
        Finding::new(
            NAME,
            "out of memory, mmap is slower than buffered 4 KiB reads (mmap/buffered < 1 on the smallest data that outgrows memory)",
            versus.0,
            versus.1,
        ),
    ]
}

impl Experiment for Readers {
    fn name(&self) -> &'static str {
        NAME
    }
    fn study(&self) -> &'static str {
        "000"
    }
    fn answers(&self) -> &'static str {
        "from which fraction of a file read in random 4 KiB requests is mmap faster than buffered reads, and does mmap collapse once data outgrows memory?"
    }
    fn times(&self) -> [&'static str; 3] {
        ["3 s", "5 min", "30 min"]
    }
    fn configs(&self, ctx: &Ctx) -> Vec<Config> {
        let size = size_for(ctx, ctx.pick(2 * MIB, 128 * MIB, 1024 * MIB));
        let file = ctx.data_file(size);
        let repeats = ctx.pick(1, 1, 3);
        let mut v = fraction_configs(ctx, &file, size, repeats);
        v.extend(request_configs(ctx, &file, size, repeats));
        v.extend(memory_configs(ctx));
        v
    }
    fn analyse(&self, recs: &[LabRecord]) -> Analysis {
        let sweeps = by(recs, "sweep");
        let owned = |k: &str| -> Vec<LabRecord> {
            sweeps
                .get(k)
                .map(|v| v.iter().map(|r| (*r).clone()).collect())
                .unwrap_or_default()
        };
        let (frac, req) = (owned("fraction"), owned("request"));
        let tech = by(&frac, "technique");
        let mut figures = vec![figure::lines(
            "readers-fraction",
            "Random 4 KiB requests, cold cache, by fraction of the file read",
            Axis::new("fraction of the file read (%)", true, |v| format!("{v:.1}")),
            Axis::new("throughput (MiB/s)", true, figure::num),
            &lines_by_technique(&tech, "fraction", 100.0),
        )];
        let rseries = lines_by_technique(&by(&req, "technique"), "request", 1.0);
        if !rseries.is_empty() {
            figures.push(figure::lines(
                "readers-request",
                "Techniques by request size, cold cache",
                Axis::bytes("request size (bytes)"),
                Axis::new("throughput (MiB/s)", true, figure::num),
                &rseries,
            ));
        }
        let mm = sorted(tech.get("mmap").cloned().unwrap_or_default(), "fraction");
        let bu = sorted(
            tech.get("buffered 4 KiB").cloned().unwrap_or_default(),
            "fraction",
        );
        let (rows, finding) = crossover_finding(&mm, &bu);
        let mut a = Analysis {
            figures,
            table: table(
                &["fraction read", "mmap", "buffered 4 KiB", "mmap/buffered"],
                &rows,
            ),
            findings: vec![finding],
        };
        memory_analysis(recs, &mut a);
        a
    }
}

/// One line per technique: throughput against the tag `x` (times `scale`).
fn lines_by_technique(tech: &ByTechnique, x: &str, scale: f64) -> Vec<LineSeries> {
    tech.iter()
        .map(|(t, g)| LineSeries {
            name: t.clone(),
            pts: sorted(g.clone(), x)
                .iter()
                .map(|r| Pt::of(r.num(x) * scale, &r.stats()))
                .collect(),
        })
        .collect()
}

/// Where mmap overtakes buffered 4 KiB reads as more of the file is read:
/// the table rows and the finding (crossover over the medians, and over
/// the repeats' range: mmap at its best against buffered at its worst,
/// and the reverse).
fn crossover_finding(mm: &[&LabRecord], bu: &[&LabRecord]) -> (Vec<Vec<String>>, Finding) {
    let mut rows = Vec::new();
    let mut pairs_med = Vec::new();
    let mut pairs_early = Vec::new();
    let mut pairs_late = Vec::new();
    for m in mm {
        if let Some(b) = bu.iter().find(|b| b.num("fraction") == m.num("fraction")) {
            let (ms, bs) = (m.stats(), b.stats());
            let f = m.num("fraction");
            pairs_med.push((f, ms.median, bs.median));
            pairs_early.push((f, ms.max, bs.min));
            pairs_late.push((f, ms.min, bs.max));
            rows.push(vec![
                format!("{:.1} %", f * 100.0),
                mibs(ms.median),
                mibs(bs.median),
                format!("{:.2}", ms.median / bs.median.max(1e-9)),
            ]);
        }
    }
    let (c, early, late) = (
        crossover(&pairs_med),
        crossover(&pairs_early),
        crossover(&pairs_late),
    );
    let ok = |x: f64| (THESIS / FACTOR..=THESIS * FACTOR).contains(&x);
    let v = if pairs_med.len() < 2 {
        Verdict::Inconclusive
    } else if early.is_nan() {
        Verdict::NotReproduced
    } else if late.is_nan() {
        if ok(early) {
            Verdict::Inconclusive
        } else {
            Verdict::NotReproduced
        }
    } else {
        over_range(early, late, ok)
    };
    let pct = |x: f64| {
        if x.is_nan() {
            "none".to_string()
        } else {
            format!("{:.1} %", x * 100.0)
        }
    };
    let finding = Finding::new(
        NAME,
        format!(
            "mmap overtakes buffered 4 KiB random reads once enough of the file is read: crossover within {:.1}–{:.0} % of the file (thesis: {:.0} %)",
            THESIS / FACTOR * 100.0,
            THESIS * FACTOR * 100.0,
            THESIS * 100.0
        ),
        v,
        format!("crossover found at {} (medians), {}–{} over the repeats' range", pct(c), pct(early), pct(late)),
    );
    (rows, finding)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{assert_first, rec, rec_x};

    fn recs(cross: f64) -> Vec<LabRecord> {
        let mut v = Vec::new();
        for f in [0.01, 0.05, 0.1, 0.2, 0.5, 1.0] {
            let m = if f >= cross { 200.0 } else { 50.0 };
            v.push(rec(
                NAME,
                &[
                    ("sweep", "fraction"),
                    ("technique", "mmap"),
                    ("fraction", &f.to_string()),
                ],
                &[m, m],
            ));
            v.push(rec(
                NAME,
                &[
                    ("sweep", "fraction"),
                    ("technique", "buffered 4 KiB"),
                    ("fraction", &f.to_string()),
                ],
                &[100.0, 100.0],
            ));
        }
        v
    }

    #[test]
    fn verdict_follows_the_crossover() {
        let a = Readers.analyse(&recs(0.1));
        assert_first(&a, Verdict::Reproduced, "10.0 %");
        assert_eq!(
            Readers.analyse(&recs(2.0)).findings[0].verdict,
            Verdict::NotReproduced
        );
        assert_eq!(
            Readers.analyse(&recs(0.01)).findings[0].verdict,
            Verdict::NotReproduced
        );
    }

    /// The memory sweep with 2 GiB left: mmap's throughput on 1 GiB and
    /// 4 GiB of data, buffered's fixed at 100 and 40 MiB/s.
    fn mem(m_in: f64, m_out: f64) -> Vec<LabRecord> {
        let room = [2048.0 * MIB as f64; 2];
        let mut v = Vec::new();
        for (t, fit, out) in [("mmap", m_in, m_out), ("buffered 4 KiB", 100.0, 40.0)] {
            for (d, x) in [(1024 * MIB, fit), (4096 * MIB, out)] {
                v.push(rec_x(
                    NAME,
                    &[
                        ("sweep", "memory"),
                        ("technique", t),
                        ("data", &d.to_string()),
                    ],
                    &[x * 0.95, x * 1.05],
                    &[("room_bytes", &room), ("resident_before", &[1.0, 1.0])],
                ));
            }
        }
        v
    }

    fn memory_verdicts(v: Vec<LabRecord>) -> (Verdict, Verdict) {
        let a = Readers.analyse(&v);
        assert_eq!(a.findings.len(), 3, "{:?}", a.findings);
        assert!(a.figures.iter().any(|f| f.name == "readers-memory"));
        (a.findings[1].verdict, a.findings[2].verdict)
    }

    #[test]
    fn memory_verdicts_follow_the_numbers() {
        // mmap 500 → 30 MiB/s (ratio 0.06), slower than buffered's 40.
        assert_eq!(
            memory_verdicts(mem(500.0, 30.0)),
            (Verdict::Reproduced, Verdict::Reproduced)
        );
        // mmap 500 → 400: no collapse, and faster than buffered.
        assert_eq!(
            memory_verdicts(mem(500.0, 400.0)),
            (Verdict::NotReproduced, Verdict::NotReproduced)
        );
        // Ratio 0.5 ± 5 %: the repeats straddle the threshold; 40 vs 40 too.
        assert_eq!(
            memory_verdicts(mem(80.0, 40.0)),
            (Verdict::Inconclusive, Verdict::Inconclusive)
        );
        // No data size outgrew memory: inconclusive, and says why.
        let fits: Vec<LabRecord> = mem(500.0, 30.0)
            .into_iter()
            .filter(|r| r.num("data") < 2e9)
            .collect();
        let a = Readers.analyse(&fits);
        assert_eq!(a.findings[1].verdict, Verdict::Inconclusive);
        assert!(
            a.findings[1].numbers.contains("outgrows none"),
            "{}",
            a.findings[1].numbers
        );
    }
}
