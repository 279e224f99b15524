//! `blocksize` (studies 002, 000): single-thread reads over block sizes,
//! cold and warm cache, repeated: where does each curve reach its plateau?

use crate::figure::{self, Axis, BarSeries};
use crate::record::LabRecord;
use crate::util::*;
use crate::verdict::{over_range, Finding, Verdict};
use crate::{Analysis, Config, Ctx, Experiment};
use iolab_bench::spec::{CacheMode, StopRule};

/// The experiment.
pub struct Blocksize;

const NAME: &str = "blocksize";
/// A plateau starts at the smallest block size within this of the maximum.
const TOL: f64 = 0.10;
/// The plateau must start at or below this block size.
const LIMIT: f64 = (1 << 20) as f64;

/// How far the limit's block size is from the maximum (medians): the
/// number that says by how much a plateau beyond the limit misses.
fn at_limit(pts: &[(f64, f64)]) -> String {
    let max =
        pts.iter().copied().fold(
            (f64::NAN, f64::NEG_INFINITY),
            |m, p| {
                if p.1 > m.1 {
                    p
                } else {
                    m
                }
            },
        );
    match pts.iter().find(|p| p.0 == LIMIT) {
        Some(p) if max.1 > 0.0 => format!(
            "{} reads {} = {:.2} of the maximum {} at {}",
            figure::bytes(LIMIT),
            mibs(p.1),
            p.1 / max.1,
            mibs(max.1),
            figure::bytes(max.0)
        ),
        _ => format!("{} not measured", figure::bytes(LIMIT)),
    }
}

impl Experiment for Blocksize {
    fn name(&self) -> &'static str {
        NAME
    }
    fn study(&self) -> &'static str {
        "002, 000"
    }
    fn answers(&self) -> &'static str {
        "from which block size does single-thread read throughput stop growing, cold and warm?"
    }
    fn times(&self) -> [&'static str; 3] {
        ["2 s", "1.5 min", "10 min"]
    }
    fn configs(&self, ctx: &Ctx) -> Vec<Config> {
        let size = size_for(ctx, ctx.pick(2 * MIB, 128 * MIB, 1024 * MIB));
        let file = ctx.data_file(size);
        let sizes: Vec<u64> = ctx.pick(
            vec![1, 64, 4 * KIB, 64 * KIB, MIB],
            (0..=26).step_by(2).map(|p| 1u64 << p).collect(),
            (0..=26).map(|p| 1u64 << p).collect(),
        );
        let max_ops: u64 = ctx.pick(2_000, 200_000, 1_000_000);
        let repeats = ctx.pick(1, 5, 10);
        let mut v = Vec::new();
        for cache in [CacheMode::Cold, CacheMode::Warm] {
            for &bs in sizes.iter().filter(|&&b| b <= size) {
                let mut s = spec(&file, size);
                s.bs = bs;
                s.cache = cache;
                s.stop = StopRule {
                    bytes: Some(size.min(bs.saturating_mul(max_ops)) / bs * bs),
                    ..StopRule::default()
                };
                v.push(bench(
                    &[("cache", cache.name().into()), ("bs", b(bs))],
                    s,
                    repeats,
                ));
            }
        }
        v
    }
    fn analyse(&self, recs: &[LabRecord]) -> Analysis {
        let groups = by(recs, "cache");
        let all: Vec<&LabRecord> = recs.iter().collect();
        let xs = cats(&all, "bs");
        let series: Vec<BarSeries> = ["cold", "warm"]
            .iter()
            .map(|c| BarSeries {
                name: format!("{c} cache"),
                vals: xs
                    .iter()
                    .map(|x| {
                        groups
                            .get(*c)
                            .and_then(|g| g.iter().find(|r| r.num("bs") == *x))
                            .map(|r| r.stats())
                    })
                    .collect(),
            })
            .collect();
        let fig = figure::bars(
            "blocksize",
            "Single-thread reads by block size, cold and warm cache",
            "block size (bytes)",
            &xs.iter().map(|x| figure::bytes(*x)).collect::<Vec<_>>(),
            Axis::new("throughput (MiB/s)", true, figure::num),
            &series,
        );
        let mut rows = Vec::new();
        for x in &xs {
            let mut row = vec![figure::bytes(*x)];
            for c in ["cold", "warm"] {
                row.push(
                    groups
                        .get(c)
                        .and_then(|g| g.iter().find(|r| r.num("bs") == *x))
                        .map(|r| mmm(&r.stats(), mibs))
                        .unwrap_or_default(),
                );
            }
            rows.push(row);
        }
        let findings = ["cold", "warm"]
            .iter()
            .map(|c| plateau_finding(c, groups.get(*c).cloned().unwrap_or_default()))
            .collect();
        Analysis {
            figures: vec![fig],
            table: table(
                &["block size", "cold MiB/s median [min–max]", "warm"],
                &rows,
            ),
            findings,
        }
    }
}

/// The study's claim for one cache state: throughput reaches a plateau
/// (within `TOL` of the maximum) at a block size ≤ `LIMIT`, decided over
/// the median, min and max curves.
fn plateau_finding(c: &str, g: Vec<&LabRecord>) -> Finding {
    let g = sorted(g, "bs");
    let curve = |f: fn(&iolab_bench::stats::Stats) -> f64| -> Vec<(f64, f64)> {
        g.iter().map(|r| (r.num("bs"), f(&r.stats()))).collect()
    };
    let p_med = plateau(&curve(|s| s.median), TOL);
    let p_min = plateau(&curve(|s| s.min), TOL);
    let p_max = plateau(&curve(|s| s.max), TOL);
    let (lo, hi) = (p_min.min(p_max).min(p_med), p_min.max(p_max).max(p_med));
    let v = if g.len() < 3 {
        Verdict::Inconclusive
    } else {
        over_range(lo, hi, |p| p <= LIMIT)
    };
    Finding::new(
        NAME,
        format!(
            "{c} throughput reaches a plateau: the smallest block size within {:.0} % of the maximum is ≤ {}",
            TOL * 100.0,
            figure::bytes(LIMIT)
        ),
        v,
        format!(
            "plateau at {} (medians), {}–{} over min/max curves; {} block sizes; {}",
            figure::bytes(p_med),
            figure::bytes(lo),
            figure::bytes(hi),
            g.len(),
            at_limit(&curve(|s| s.median))
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{assert_all, rec};

    fn recs(warm_knee: u64) -> Vec<LabRecord> {
        let mut v = Vec::new();
        for p in [0u32, 6, 12, 18, 24] {
            let bs = 1u64 << p;
            for c in ["cold", "warm"] {
                let y = if bs >= warm_knee {
                    1000.0
                } else {
                    bs as f64 / warm_knee as f64 * 500.0
                };
                v.push(rec(
                    NAME,
                    &[("cache", c), ("bs", &bs.to_string())],
                    &[y * 0.99, y, y * 1.01],
                ));
            }
        }
        v
    }

    #[test]
    fn verdict_follows_the_knee() {
        let a = Blocksize.analyse(&recs(4096));
        assert_all(&a, Verdict::Reproduced);
        let a = Blocksize.analyse(&recs(1 << 24));
        assert_all(&a, Verdict::NotReproduced);
        assert_eq!(a.figures[0].points, 10);
    }
}
