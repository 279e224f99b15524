//! `mt-suite` (study 003): the eight tests (read and write × one shared
//! file and one file per thread × sequential and random), 512-byte blocks,
//! 1 to 32 threads: how throughput scales with threads.

use crate::experiments::mt_tests::{test_name, test_spec, Sizes, TESTS};
use crate::figure::{self, Axis, Figure, LineSeries, Pt};
use crate::record::LabRecord;
use crate::util::*;
use crate::verdict::{over_range, Finding};
use crate::{Analysis, Config, Ctx, Experiment, Measured};
use iolab_bench::error::Result;
use iolab_bench::stats::Stats;
use std::collections::BTreeMap;

/// The experiment.
pub struct MtSuite;

const NAME: &str = "mt-suite";
/// Sequential reads of one file: more threads gain at most this factor.
const SEQ_MAX_GAIN: f64 = 1.5;
/// Random writes to one file per thread: more threads gain at least this.
const RANDW_MIN_GAIN: f64 = 1.2;

/// Best over 2+ threads against one thread: (range lo, hi, text).
fn gain(g: &[&LabRecord]) -> (f64, f64, String) {
    let one = g
        .iter()
        .find(|r| r.num("threads") == 1.0)
        .map(|r| r.stats());
    let best = g
        .iter()
        .filter(|r| r.num("threads") > 1.0)
        .max_by(|a, b| a.stats().median.total_cmp(&b.stats().median));
    match (one, best) {
        (Some(o), Some(b)) if o.min > 0.0 => {
            let s: Stats = b.stats();
            let (gain, lo, hi) = ratio(&s, &o);
            (
                lo,
                hi,
                format!(
                    "1 thread {}, best {} threads {}, gain {gain:.2} (range {lo:.2}–{hi:.2})",
                    mibs(o.median),
                    b.tag("threads"),
                    mibs(s.median),
                ),
            )
        }
        _ => (
            f64::NAN,
            f64::NAN,
            "1 thread or more threads not measured".into(),
        ),
    }
}

impl Experiment for MtSuite {
    fn name(&self) -> &'static str {
        NAME
    }
    fn study(&self) -> &'static str {
        "003"
    }
    fn answers(&self) -> &'static str {
        "do more threads read and write 512-byte blocks faster, one file or one file per thread?"
    }
    fn times(&self) -> [&'static str; 3] {
        ["4 s", "2 min", "10 min"]
    }
    fn configs(&self, ctx: &Ctx) -> Vec<Config> {
        let sz = Sizes::of(ctx);
        let threads: Vec<u32> = ctx.pick(
            vec![1, 2],
            vec![1, 2, 4, 8, 16, 32],
            vec![1, 2, 4, 8, 16, 32],
        );
        let mut v = Vec::new();
        for (op, files, pat) in TESTS {
            for &t in &threads {
                v.push(bench(
                    &[
                        ("test", test_name(op, files, pat)),
                        ("threads", t.to_string()),
                    ],
                    test_spec(ctx, &sz, (op, files, pat), t),
                    sz.repeats,
                ));
            }
        }
        // Under mpirun: the same tests with processes (one thread each).
        v.extend(crate::experiments::mt_ranks::configs(ctx));
        v
    }
    fn custom(&self, cfg: &Config, ctx: &Ctx) -> Result<Measured> {
        crate::experiments::mt_ranks::measure(cfg, ctx)
    }
    fn analyse(&self, recs: &[LabRecord]) -> Analysis {
        let groups = by(recs, "test");
        let mut figures = Vec::new();
        let mut rows = Vec::new();
        for (op, files, pat) in TESTS {
            let name = test_name(op, files, pat);
            let all = groups.get(&name).cloned().unwrap_or_default();
            let (by_ranks, by_threads): (Vec<_>, Vec<_>) =
                all.into_iter().partition(|r| !r.tag("ranks").is_empty());
            let g = sorted(by_threads, "threads");
            if g.is_empty() && by_ranks.is_empty() {
                continue;
            }
            figures.push(test_figure(&name, &g, &by_ranks));
            rows.push(test_row(&name, &g, by_ranks));
        }
        Analysis {
            figures,
            table: table(&["test", "MiB/s (threads) …"], &rows),
            findings: findings(&groups),
        }
    }
}

/// One test's throughput by threads (records sorted by threads), and by
/// processes (MPI ranks, one thread each) on the same axes.
fn test_figure(name: &str, g: &[&LabRecord], by_ranks: &[&LabRecord]) -> Figure {
    let mut series = vec![LineSeries {
        name: format!("{name}, threads"),
        pts: g
            .iter()
            .map(|r| Pt::of(r.num("threads"), &r.stats()))
            .collect(),
    }];
    series.extend(crate::experiments::mt_ranks::series(name, by_ranks));
    figure::lines(
        &format!("mt-suite-{}", name.replace(' ', "-")),
        &format!("{name}: 512-byte blocks by threads"),
        Axis::new("threads or ranks (count)", true, |v| format!("{v:.0}")),
        Axis::new("throughput (MiB/s)", false, figure::num),
        &series,
    )
}

/// One test's table row: its name, then throughput by threads, then by
/// ranks.
fn test_row(name: &str, g: &[&LabRecord], by_ranks: Vec<&LabRecord>) -> Vec<String> {
    let mut row = vec![name.to_string()];
    row.extend(
        g.iter()
            .map(|r| format!("{} ({})", figure::num(r.stats().median), r.tag("threads"))),
    );
    row.extend(sorted(by_ranks, "ranks").iter().map(|r| {
        format!(
            "{} ({} ranks)",
            figure::num(r.stats().median),
            r.tag("ranks")
        )
    }));
    row
}

/// The two claims: sequential reads of one shared file gain little from
/// threads; random writes to one file per thread scale.
fn findings(groups: &BTreeMap<String, Vec<&LabRecord>>) -> Vec<Finding> {
    let test = |name: &str| groups.get(name).cloned().unwrap_or_default();
    let (lo, hi, n1) = gain(&test("read shared seq"));
    let f1 = Finding::new(
        NAME,
        format!("sequential reads of one shared file gain little from threads: best over 2–32 threads ≤ {SEQ_MAX_GAIN} × one thread"),
        over_range(lo, hi, |x| x <= SEQ_MAX_GAIN),
        n1,
    );
    let (lo, hi, n2) = gain(&test("write per-thread rand"));
    let f2 = Finding::new(
        NAME,
        format!("random writes to one file per thread scale: best over 2–32 threads ≥ {RANDW_MIN_GAIN} × one thread"),
        over_range(lo, hi, |x| x >= RANDW_MIN_GAIN),
        n2,
    );
    vec![f1, f2]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{assert_all, rec};
    use crate::verdict::Verdict;

    fn recs(seq2: f64, rw2: f64) -> Vec<LabRecord> {
        let mut v = Vec::new();
        for (op, files, pat) in TESTS {
            let n = test_name(op, files, pat);
            v.push(rec(
                NAME,
                &[("test", &n), ("threads", "1")],
                &[100.0, 100.0],
            ));
            let y = match n.as_str() {
                "read shared seq" => seq2,
                "write per-thread rand" => rw2,
                _ => 100.0,
            };
            v.push(rec(NAME, &[("test", &n), ("threads", "2")], &[y, y]));
        }
        v
    }

    #[test]
    fn verdicts_follow_the_gains() {
        let a = MtSuite.analyse(&recs(110.0, 180.0));
        assert_eq!(a.figures.len(), 8);
        assert_all(&a, Verdict::Reproduced);
        let a = MtSuite.analyse(&recs(300.0, 100.0));
        assert_all(&a, Verdict::NotReproduced);
    }
}
