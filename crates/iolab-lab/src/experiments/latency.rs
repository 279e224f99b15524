//! `latency` (study 001): single random read latency by block size, from
//! the device's smallest O_DIRECT block to 32 MiB (min, mean, p99, p99.9,
//! max), with polled completion (preadv2 RWF_HIPRI) where the device has
//! poll queues.

use crate::figure::{self, Axis, Figure, LineSeries, Pt};
use crate::record::LabRecord;
use crate::util::*;
use crate::verdict::{over_range, Finding};
use crate::{Analysis, Config, Ctx, Experiment};
use iolab::engine::EngineKind;
use iolab_bench::spec::{AccessPattern, CacheMode};
use iolab_bench::stats::Stats;
use std::collections::BTreeMap;

/// The experiment.
pub struct Latency;

const NAME: &str = "latency";
/// Mean latency of 4 KiB reads at most this × that of the smallest block.
const SMALL_FLAT: f64 = 2.0;
/// 32 MiB over 4 MiB mean latency between these (8 × the bytes).
const LINEAR: (f64, f64) = (4.0, 16.0);

fn polling(ctx: &Ctx) -> bool {
    iolab::file::block_device_of(&ctx.dir)
        .and_then(|d| d.queue_num("io_poll"))
        .is_some_and(|v| v == 1)
}

impl Experiment for Latency {
    fn name(&self) -> &'static str {
        NAME
    }
    fn study(&self) -> &'static str {
        "001"
    }
    fn answers(&self) -> &'static str {
        "how long does one random read take, by block size (and with polling)?"
    }
    fn times(&self) -> [&'static str; 3] {
        ["2 s", "1 min", "5 min"]
    }
    fn configs(&self, ctx: &Ctx) -> Vec<Config> {
        let size = size_for(ctx, ctx.pick(2 * MIB, 256 * MIB, 1024 * MIB));
        let file = ctx.data_file(size);
        let probe = if file.exists() {
            file.clone()
        } else {
            ctx.dir.clone()
        };
        let align = iolab::file::dio_alignment(&probe)
            .ok()
            .map(|a| a.required as u64);
        let min = align.unwrap_or(512).max(512);
        let max = ctx.pick(MIB, 32 * MIB, 32 * MIB).min(size);
        let budget = ctx.pick(4 * MIB, 256 * MIB, 1024 * MIB);
        let max_ops: u64 = ctx.pick(50, 2_000, 20_000);
        let repeats = ctx.pick(1, 1, 3);
        let mut engines = vec![(EngineKind::Pread, false, "pread")];
        if polling(ctx) && align.is_some() {
            engines.push((EngineKind::Preadv2, true, "preadv2 hipri"));
        }
        let mut v = Vec::new();
        for (engine, hipri, name) in engines {
            let mut bs = min;
            while bs <= max {
                let mut s = spec(&file, size);
                s.engine = engine;
                s.engine_opts.hipri = hipri;
                s.bs = bs;
                s.direct = align.is_some();
                s.cache = CacheMode::Cold;
                s.pattern = AccessPattern::Rand;
                s.stop = stop_after_ops((budget / bs).clamp(8, max_ops));
                v.push(bench(&[("engine", name.into()), ("bs", b(bs))], s, repeats));
                bs *= 2;
            }
        }
        v
    }
    fn analyse(&self, recs: &[LabRecord]) -> Analysis {
        let groups = by(recs, "engine");
        let pread = sorted(groups.get("pread").cloned().unwrap_or_default(), "bs");
        Analysis {
            figures: vec![latency_figure(&groups)],
            table: table(
                &["engine", "block", "min", "mean", "p99", "p99.9", "max"],
                &rows(&groups),
            ),
            findings: findings(&pread),
        }
    }
}

/// The latency statistics each record carries, and their names in series.
const STATS: [&str; 5] = ["min_ns", "mean_ns", "p99_ns", "p99_9_ns", "max_ns"];
const STAT_NAMES: [&str; 5] = ["min", "mean", "p99", "p99.9", "max"];

/// Latency by block size: every statistic for pread, the mean for the
/// other engines.
fn latency_figure(groups: &BTreeMap<String, Vec<&LabRecord>>) -> Figure {
    let mut series = Vec::new();
    for (engine, g) in groups {
        let g = sorted(g.clone(), "bs");
        for (k, n) in STATS.iter().zip(STAT_NAMES) {
            if engine != "pread" && *k != "mean_ns" {
                continue;
            }
            series.push(LineSeries {
                name: format!("{engine} {n}"),
                pts: g.iter().map(|r| Pt::of(r.num("bs"), &st(r, k))).collect(),
            });
        }
    }
    figure::lines(
        "latency",
        "Single random read latency by block size (O_DIRECT)",
        Axis::bytes("block size (bytes)"),
        Axis::new("latency (ns)", true, figure::ns),
        &series,
    )
}

/// One table row per engine and block size: the median of each statistic.
fn rows(groups: &BTreeMap<String, Vec<&LabRecord>>) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for (engine, g) in groups {
        for r in sorted(g.clone(), "bs") {
            let mut row = vec![engine.clone(), hb(r, "bs")];
            row.extend(STATS.iter().map(|k| figure::ns(st(r, k).median)));
            rows.push(row);
        }
    }
    rows
}

/// The two claims on pread's mean latency (records sorted by block size):
/// small blocks cost about the same, and from 4 MiB on latency grows with
/// size.
fn findings(pread: &[&LabRecord]) -> Vec<Finding> {
    let at = |bs: f64| {
        pread
            .iter()
            .find(|r| r.num("bs") == bs)
            .map(|r| st(r, "mean_ns"))
    };
    let smallest = pread.first().map(|r| st(r, "mean_ns"));
    let ratio = |a: Option<Stats>, b: Option<Stats>| match (a, b) {
        (Some(a), Some(b)) if b.min > 0.0 => (a.min / b.max, a.max / b.min, a.median / b.median),
        _ => (f64::NAN, f64::NAN, f64::NAN),
    };
    let (lo, hi, med) = ratio(at(4096.0), smallest);
    let f1 = Finding::new(
        NAME,
        format!("small blocks cost about the same: mean latency of 4 KiB reads ≤ {SMALL_FLAT} × that of the smallest block"),
        over_range(lo, hi, |x| x <= SMALL_FLAT),
        format!("ratio {med:.2} (range {lo:.2}–{hi:.2}), smallest block {}", pread.first().map(|r| hb(r, "bs")).unwrap_or("-".into())),
    );
    let (lo, hi, med) = ratio(at(32.0 * 1048576.0), at(4.0 * 1048576.0));
    let f2 = Finding::new(
        NAME,
        format!("from 4 MiB on latency grows with size: mean latency at 32 MiB / at 4 MiB within {}–{} (8 × the bytes)", LINEAR.0, LINEAR.1),
        over_range(lo, hi, |x| (LINEAR.0..=LINEAR.1).contains(&x)),
        format!("ratio {med:.2} (range {lo:.2}–{hi:.2})"),
    );
    vec![f1, f2]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{assert_all, rec_x};
    use crate::verdict::Verdict;

    fn recs(k4: f64, m32: f64) -> Vec<LabRecord> {
        [
            (512.0, 100.0),
            (4096.0, k4),
            (4194304.0, 1000.0),
            (33554432.0, m32),
        ]
        .iter()
        .map(|(bs, m)| {
            let v = [*m, *m];
            rec_x(
                NAME,
                &[("engine", "pread"), ("bs", &bs.to_string())],
                &[1.0],
                &[("mean_ns", &v), ("p99_ns", &v)],
            )
        })
        .collect()
    }

    #[test]
    fn verdicts_follow_the_ratios() {
        let a = Latency.analyse(&recs(150.0, 8000.0));
        assert_all(&a, Verdict::Reproduced);
        assert_eq!(a.figures[0].series.len(), 5);
        let a = Latency.analyse(&recs(500.0, 1500.0));
        assert_all(&a, Verdict::NotReproduced);
    }
}
