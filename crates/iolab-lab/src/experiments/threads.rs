//! `threads` (studies 002, 000): block size × threads, cold and warm; the
//! best pair for each cache state, and the course's `fast` reader's choice
//! (8 threads × 32 KiB) measured against it.

use crate::figure::{self, Axis, LineSeries, Pt};
use crate::record::LabRecord;
use crate::util::*;
use crate::verdict::{all_of, over_range, Finding};
use crate::{Analysis, Config, Ctx, Experiment};
use iolab_bench::spec::{CacheMode, StopRule};

/// The experiment.
pub struct Threads;

const NAME: &str = "threads";
const FAST_BS: f64 = 32.0 * 1024.0;
const FAST_T: f64 = 8.0;
/// The fast choice must reach this fraction of the best pair.
const FRACTION: f64 = 0.8;

impl Experiment for Threads {
    fn name(&self) -> &'static str {
        NAME
    }
    fn study(&self) -> &'static str {
        "002, 000"
    }
    fn answers(&self) -> &'static str {
        "which (block size, threads) pair reads fastest, and how close is 8 threads × 32 KiB?"
    }
    fn times(&self) -> [&'static str; 3] {
        ["3 s", "3 min", "20 min"]
    }
    fn configs(&self, ctx: &Ctx) -> Vec<Config> {
        let size = size_for(ctx, ctx.pick(2 * MIB, 128 * MIB, 1024 * MIB));
        let file = ctx.data_file(size);
        let sizes = ctx.pick(
            vec![4 * KIB, 32 * KIB],
            vec![4 * KIB, 32 * KIB, 256 * KIB, MIB],
            vec![
                KIB,
                4 * KIB,
                16 * KIB,
                32 * KIB,
                64 * KIB,
                256 * KIB,
                MIB,
                4 * MIB,
            ],
        );
        let threads: Vec<u32> = ctx.pick(
            vec![1, 8],
            vec![1, 2, 4, 8, 16, 32],
            vec![1, 2, 4, 8, 16, 32],
        );
        let repeats = ctx.pick(1, 3, 5);
        // A warm pass over the file lasts well under 100 ms: too short to
        // rise above a busy machine's noise, so warm runs read (wrapping
        // around the file) for a fixed time instead.
        let warm_time: Option<u64> = ctx.pick(None, Some(1_000_000_000), Some(2_000_000_000));
        let mut v = Vec::new();
        for cache in [CacheMode::Cold, CacheMode::Warm] {
            for &bs in &sizes {
                for &t in &threads {
                    if size / bs < t as u64 {
                        continue;
                    }
                    let mut s = spec(&file, size);
                    s.bs = bs;
                    s.threads = t;
                    s.cache = cache;
                    if cache == CacheMode::Warm {
                        if let Some(t) = warm_time {
                            s.stop = StopRule {
                                time_ns: Some(t),
                                ..StopRule::default()
                            };
                        }
                    }
                    v.push(bench(
                        &[
                            ("cache", cache.name().into()),
                            ("bs", b(bs)),
                            ("threads", t.to_string()),
                        ],
                        s,
                        repeats,
                    ));
                }
            }
        }
        v
    }
    fn analyse(&self, recs: &[LabRecord]) -> Analysis {
        let mut figures = Vec::new();
        let mut rows = Vec::new();
        let mut findings = Vec::new();
        for (cache, g) in by(recs, "cache") {
            figures.push(cache_figure(&cache, &g));
            let best = g
                .iter()
                .max_by(|a, b| a.stats().median.total_cmp(&b.stats().median))
                .copied();
            let fast = g
                .iter()
                .find(|r| r.num("bs") == FAST_BS && r.num("threads") == FAST_T)
                .copied();
            if let Some(bst) = best {
                rows.push(vec![
                    cache.clone(),
                    format!("{} × {} thr", hb(bst, "bs"), bst.tag("threads")),
                    mmm(&bst.stats(), mibs),
                    fast.map(|f| mmm(&f.stats(), mibs)).unwrap_or("-".into()),
                ]);
            }
            findings.push(fast_against_best(&cache, best, fast));
        }
        let verdict = all_of(&findings.iter().map(|f| f.0).collect::<Vec<_>>());
        let nums = findings
            .into_iter()
            .map(|f| f.1)
            .collect::<Vec<_>>()
            .join("; ");
        Analysis {
            figures,
            table: table(&["cache", "best pair", "best MiB/s", "8 thr × 32 KiB"], &rows),
            findings: vec![Finding::new(
                NAME,
                format!(
                    "8 threads × 32 KiB is at the plateau: within {:.0} % of the best (block size, threads) pair, cold and warm",
                    (1.0 - FRACTION) * 100.0
                ),
                verdict,
                nums,
            )],
        }
    }
}

/// Throughput by block size, one line per thread count, for one cache state.
fn cache_figure(cache: &str, g: &[&LabRecord]) -> figure::Figure {
    let mut series = Vec::new();
    let owned: Vec<LabRecord> = g.iter().map(|r| (*r).clone()).collect();
    let by_threads: std::collections::BTreeMap<u32, Vec<&LabRecord>> = by(&owned, "threads")
        .into_iter()
        .map(|(t, v)| (t.parse::<u32>().unwrap_or(0), v))
        .collect();
    for (t, tg) in by_threads {
        let pts = sorted(tg, "bs")
            .iter()
            .map(|r| Pt::of(r.num("bs"), &r.stats()))
            .collect();
        series.push(LineSeries {
            name: format!("{t} thread(s)"),
            pts,
        });
    }
    figure::lines(
        &format!("threads-{cache}"),
        &format!("Reads by block size and threads, {cache} cache"),
        Axis::bytes("block size (bytes)"),
        Axis::new("throughput (MiB/s)", true, figure::num),
        &series,
    )
}

/// The course's pair (8 threads × 32 KiB) against the best pair of one
/// cache state, over the repeats' range, and the numbers.
fn fast_against_best(
    cache: &str,
    best: Option<&LabRecord>,
    fast: Option<&LabRecord>,
) -> (crate::verdict::Verdict, String) {
    match (best, fast) {
        (Some(bst), Some(f)) => {
            let (bs, fs) = (bst.stats(), f.stats());
            (
                over_range(fs.min / bs.max, fs.max / bs.min.max(1e-9), |x| {
                    x >= FRACTION
                }),
                format!(
                    "{cache}: best {} × {} thr {}, fast {}, ratio {:.2} (range {:.2}–{:.2})",
                    hb(bst, "bs"),
                    bst.tag("threads"),
                    mibs(bs.median),
                    mibs(fs.median),
                    fs.median / bs.median,
                    fs.min / bs.max,
                    fs.max / bs.min.max(1e-9)
                ),
            )
        }
        _ => (
            crate::verdict::Verdict::Inconclusive,
            format!("{cache}: 8 threads × 32 KiB not measured"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::rec;
    use crate::verdict::Verdict;

    fn recs(fast: f64) -> Vec<LabRecord> {
        let mut v = Vec::new();
        for c in ["cold", "warm"] {
            v.push(rec(
                NAME,
                &[("cache", c), ("bs", "32768"), ("threads", "8")],
                &[fast, fast],
            ));
            v.push(rec(
                NAME,
                &[("cache", c), ("bs", "1048576"), ("threads", "2")],
                &[100.0, 100.0],
            ));
            v.push(rec(
                NAME,
                &[("cache", c), ("bs", "4096"), ("threads", "1")],
                &[10.0, 10.0],
            ));
        }
        v
    }

    #[test]
    fn verdict_follows_the_fast_pair() {
        let a = Threads.analyse(&recs(95.0));
        assert_eq!(
            a.findings[0].verdict,
            Verdict::Reproduced,
            "{:?}",
            a.findings
        );
        assert_eq!(a.figures.len(), 2);
        assert_eq!(a.figures[0].series.len(), 3);
        assert_eq!(
            Threads.analyse(&recs(50.0)).findings[0].verdict,
            Verdict::NotReproduced
        );
    }
}
