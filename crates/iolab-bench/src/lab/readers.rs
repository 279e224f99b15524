//! `readers` (study 000): application reading techniques against the
//! fraction of a file read in random 4 KiB requests (cold cache), and
//! against request size: where does mmap overtake buffered reads?
//!
//! Techniques: `mmap` (copy out of a mapping), `buffered 4 KiB` (pread of
//! each request), `io_uring depth 32`, and in the request-size sweep
//! `stream` (a buffered stream). The thesis's 13 % crossover was measured
//! against its 4 MiB-buffered reader; here it is looked for against
//! buffered 4 KiB requests, which is what a random 4 KiB reader issues.

use super::figure::{self, Axis, LineSeries, Pt};
use super::record::LabRecord;
use super::util::*;
use super::verdict::{over_range, Finding, Verdict};
use super::{Analysis, Config, Ctx, Experiment};
use crate::spec::{AccessPattern, CacheMode, StopRule, WorkloadSpec};
use iolab::engine::EngineKind;

/// The experiment.
pub struct Readers;

const NAME: &str = "readers";
/// The thesis's crossover, fraction of the file.
const THESIS: f64 = 0.13;
/// Reproduced when the crossover is within this factor of the thesis's.
const FACTOR: f64 = 4.0;

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

impl Experiment for Readers {
    fn name(&self) -> &'static str {
        NAME
    }
    fn study(&self) -> &'static str {
        "000"
    }
    fn answers(&self) -> &'static str {
        "from which fraction of a file read in random 4 KiB requests is mmap faster than buffered reads?"
    }
    fn times(&self) -> [&'static str; 3] {
        ["3 s", "2 min", "20 min"]
    }
    fn configs(&self, ctx: &Ctx) -> Vec<Config> {
        let size = size_for(ctx, ctx.pick(2 * MIB, 128 * MIB, 1024 * MIB));
        let file = ctx.data_file(size);
        let fractions: Vec<f64> = ctx.pick(
            vec![0.05, 0.5, 1.0],
            vec![0.01, 0.02, 0.05, 0.1, 0.13, 0.2, 0.5, 1.0],
            vec![0.005, 0.01, 0.02, 0.05, 0.1, 0.13, 0.2, 0.3, 0.5, 0.75, 1.0],
        );
        let repeats = ctx.pick(1, 1, 3);
        let blocks = size / 4096;
        let mut v = Vec::new();
        for t in ["mmap", "buffered 4 KiB", "io_uring depth 32"] {
            for &f in &fractions {
                let mut s = spec(&file, size);
                technique(&mut s, t);
                s.pattern = AccessPattern::Shuffle;
                s.cache = CacheMode::Cold;
                s.stop = StopRule {
                    ops: Some(((blocks as f64 * f).round() as u64).max(1)),
                    ..StopRule::default()
                };
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
        for t in ["stream", "buffered 4 KiB", "mmap", "io_uring depth 32"] {
            for &r in reqs.iter().filter(|&&r| r <= size) {
                let mut s = spec(&file, size);
                technique(&mut s, t);
                s.bs = r;
                s.pattern = if t == "stream" {
                    AccessPattern::Seq
                } else {
                    AccessPattern::Shuffle
                };
                s.cache = CacheMode::Cold;
                s.stop = StopRule {
                    bytes: Some((amount / r).max(1) * r),
                    ..StopRule::default()
                };
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
    fn analyse(&self, recs: &[LabRecord]) -> Analysis {
        let sweeps = by(recs, "sweep");
        let mut figures = Vec::new();
        let frac: Vec<LabRecord> = sweeps
            .get("fraction")
            .map(|v| v.iter().map(|r| (*r).clone()).collect())
            .unwrap_or_default();
        let req: Vec<LabRecord> = sweeps
            .get("request")
            .map(|v| v.iter().map(|r| (*r).clone()).collect())
            .unwrap_or_default();
        let tech = by(&frac, "technique");
        let series: Vec<LineSeries> = tech
            .iter()
            .map(|(t, g)| LineSeries {
                name: t.clone(),
                pts: sorted(g.clone(), "fraction")
                    .iter()
                    .map(|r| Pt::of(r.num("fraction") * 100.0, &r.stats()))
                    .collect(),
            })
            .collect();
        figures.push(figure::lines(
            "readers-fraction",
            "Random 4 KiB requests, cold cache, by fraction of the file read",
            Axis::new("fraction of the file read (%)", true, |v| format!("{v:.1}")),
            Axis::new("throughput (MiB/s)", true, figure::num),
            &series,
        ));
        let rtech = by(&req, "technique");
        let rseries: Vec<LineSeries> = rtech
            .iter()
            .map(|(t, g)| LineSeries {
                name: t.clone(),
                pts: sorted(g.clone(), "request")
                    .iter()
                    .map(|r| Pt::of(r.num("request"), &r.stats()))
                    .collect(),
            })
            .collect();
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
        let mut rows = Vec::new();
        let mut pairs_med = Vec::new();
        let mut pairs_early = Vec::new();
        let mut pairs_late = Vec::new();
        for m in &mm {
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
        Analysis {
            figures,
            table: table(&["fraction read", "mmap", "buffered 4 KiB", "mmap/buffered"], &rows),
            findings: vec![Finding::new(
                NAME,
                format!(
                    "mmap overtakes buffered 4 KiB random reads once enough of the file is read: crossover within {:.1}–{:.0} % of the file (thesis: {:.0} %)",
                    THESIS / FACTOR * 100.0,
                    THESIS * FACTOR * 100.0,
                    THESIS * 100.0
                ),
                v,
                format!("crossover found at {} (medians), {}–{} over the repeats' range", pct(c), pct(early), pct(late)),
            )],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::testing::rec;

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
        assert_eq!(
            a.findings[0].verdict,
            Verdict::Reproduced,
            "{:?}",
            a.findings
        );
        assert!(
            a.findings[0].numbers.contains("10.0 %"),
            "{}",
            a.findings[0].numbers
        );
        assert_eq!(
            Readers.analyse(&recs(2.0)).findings[0].verdict,
            Verdict::NotReproduced
        );
        assert_eq!(
            Readers.analyse(&recs(0.01)).findings[0].verdict,
            Verdict::NotReproduced
        );
    }
}
