//! `interfaces` (study 001): pread across threads; libaio and io_uring
//! across queue size × batch × threads; registered files, fixed buffers,
//! SQPOLL. Ends with the map of every configuration (throughput against
//! p99.9 latency) and the best configuration per block size.

use crate::figure::{self, MapPoint};
use crate::record::LabRecord;
use crate::util::*;
use crate::verdict::{over_range, Finding};
use crate::{Analysis, Config, Ctx, Experiment};
use iolab::engine::EngineKind;
use iolab_bench::spec::{AccessPattern, CacheMode, StopRule, WorkloadSpec};

/// The experiment.
pub struct Interfaces;

const NAME: &str = "interfaces";
/// Best single-thread asynchronous throughput over single-thread pread.
const ASYNC_GAIN: f64 = 2.0;

impl Experiment for Interfaces {
    fn name(&self) -> &'static str {
        NAME
    }
    fn study(&self) -> &'static str {
        "001"
    }
    fn answers(&self) -> &'static str {
        "which read interface and settings give the most throughput for the least tail latency?"
    }
    fn times(&self) -> [&'static str; 3] {
        ["3 s", "1 min", "10 min"]
    }
    fn configs(&self, ctx: &Ctx) -> Vec<Config> {
        let size = size_for(ctx, ctx.pick(4 * MIB, 512 * MIB, 2048 * MIB));
        let file = ctx.data_file(size);
        let probe = if file.exists() {
            file.clone()
        } else {
            ctx.dir.clone()
        };
        let direct = iolab::file::dio_alignment(&probe).is_ok();
        let sizes = ctx.pick(
            vec![4 * KIB],
            vec![4 * KIB, 64 * KIB],
            vec![4 * KIB, 64 * KIB, MIB],
        );
        let qds: Vec<u32> = ctx.pick(vec![1, 16], vec![1, 4, 16, 64], vec![1, 4, 16, 64, 256]);
        let threads: Vec<u32> = ctx.pick(vec![1, 2], vec![1, 2, 4, 8], vec![1, 2, 4, 8, 16]);
        let repeats = ctx.pick(1, 1, 3);
        let stop = match ctx.scale {
            crate::Scale::Smoke => StopRule {
                ops: Some(200),
                ..StopRule::default()
            },
            s => StopRule {
                time_ns: Some(s.pick(0, 250_000_000, 1_000_000_000)),
                ..StopRule::default()
            },
        };
        let base = |bs: u64| {
            let mut s = spec(&file, size);
            s.bs = bs;
            s.direct = direct;
            s.cache = CacheMode::Cold;
            s.pattern = AccessPattern::Rand;
            s.stop = stop;
            s
        };
        let mut v = Vec::new();
        let mut push = |s: WorkloadSpec| {
            let tags = [
                ("bs", b(s.bs)),
                ("label", s.label()),
                ("engine", s.engine.to_string()),
            ];
            v.push(bench(&tags, s, repeats));
        };
        for &bs in &sizes {
            for &t in &threads {
                let mut s = base(bs);
                s.threads = t;
                push(s);
            }
            for s in asynchronous(base(bs), &qds, &threads) {
                push(s);
            }
        }
        v
    }
    fn analyse(&self, recs: &[LabRecord]) -> Analysis {
        let all: Vec<&LabRecord> = recs.iter().collect();
        let sizes = cats(&all, "bs");
        let (v, nums) = async_gain(recs, sizes.first().copied().unwrap_or(0.0));
        Analysis {
            figures: vec![map_figure(recs, &sizes)],
            table: table(
                &["block", "best throughput", "MiB/s", "p99.9", "best p99.9", "MiB/s", "p99.9"],
                &best_rows(recs, &sizes),
            ),
            findings: vec![Finding::new(
                NAME,
                format!("one thread with a deep asynchronous queue beats one thread of pread on small random reads: best libaio/io_uring ≥ {ASYNC_GAIN} × pread"),
                v,
                nums,
            )],
        }
    }
}

/// The asynchronous configurations of one block size: libaio and io_uring
/// at each depth (batches of 1 and of a quarter of the depth, on one and
/// two threads), then io_uring at the deepest depth with registered files
/// and buffers, without and with SQPOLL.
fn asynchronous(base: WorkloadSpec, qds: &[u32], threads: &[u32]) -> Vec<WorkloadSpec> {
    let mut v = Vec::new();
    for engine in [EngineKind::Libaio, EngineKind::Uring] {
        for &qd in qds {
            let mut batches = vec![1];
            if qd >= 4 {
                batches.push(qd / 4);
            }
            for batch in batches {
                for &t in threads.iter().take(2) {
                    let mut s = base.clone();
                    s.engine = engine;
                    s.qd = qd;
                    s.batch_submit = batch;
                    s.threads = t;
                    v.push(s);
                }
            }
        }
    }
    let mut s = base;
    s.engine = EngineKind::Uring;
    s.qd = *qds.last().unwrap_or(&16);
    s.engine_opts.uring.reg_files = true;
    s.engine_opts.uring.fixed_bufs = true;
    v.push(s.clone());
    s.engine_opts.uring.sqpoll = true;
    v.push(s);
    v
}

/// Every configuration as a point: throughput against p99.9, one group
/// per block size.
fn map_figure(recs: &[LabRecord], sizes: &[f64]) -> figure::Figure {
    let groups: Vec<String> = sizes
        .iter()
        .map(|s| format!("block {}", figure::bytes(*s)))
        .collect();
    let pts: Vec<MapPoint> = recs
        .iter()
        .map(|r| MapPoint {
            x: r.stats().median,
            y: st(r, "p99_9_ns").median,
            label: r.tag("label").to_string(),
            group: sizes.iter().position(|s| *s == r.num("bs")).unwrap_or(0),
            cpu: st(r, "cpu_pct").median,
        })
        .collect();
    figure::map(
        "interfaces-map",
        "Every configuration: throughput against p99.9 latency",
        &groups,
        &pts,
    )
}

/// Per block size, the best configuration by throughput and by p99.9.
fn best_rows(recs: &[LabRecord], sizes: &[f64]) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for s in sizes {
        let g: Vec<&LabRecord> = recs.iter().filter(|r| r.num("bs") == *s).collect();
        let best_t = g
            .iter()
            .max_by(|a, b| a.stats().median.total_cmp(&b.stats().median));
        let best_l = g.iter().min_by(|a, b| {
            st(a, "p99_9_ns")
                .median
                .total_cmp(&st(b, "p99_9_ns").median)
        });
        if let (Some(t), Some(l)) = (best_t, best_l) {
            rows.push(vec![
                figure::bytes(*s),
                t.tag("label").into(),
                mibs(t.stats().median),
                figure::ns(st(t, "p99_9_ns").median),
                l.tag("label").into(),
                mibs(l.stats().median),
                figure::ns(st(l, "p99_9_ns").median),
            ]);
        }
    }
    rows
}

/// The finding: one thread's best asynchronous configuration against one
/// thread of pread at the `small` block size, over the repeats' range.
fn async_gain(recs: &[LabRecord], small: f64) -> (crate::verdict::Verdict, String) {
    let one = |r: &&LabRecord| r.num("bs") == small && !r.tag("label").contains('T');
    let pread = recs.iter().filter(one).find(|r| r.tag("engine") == "pread");
    let asy = recs
        .iter()
        .filter(one)
        .filter(|r| matches!(r.tag("engine"), "libaio" | "uring"))
        .max_by(|a, b| a.stats().median.total_cmp(&b.stats().median));
    match (pread, asy) {
        (Some(p), Some(a)) if p.stats().min > 0.0 => {
            let (ps, as_) = (p.stats(), a.stats());
            let (gain, lo, hi) = ratio(&as_, &ps);
            (
                over_range(lo, hi, |x| x >= ASYNC_GAIN),
                format!(
                    "block {}: pread {}, best asynchronous {} {}, gain {gain:.2} (range {lo:.2}–{hi:.2})",
                    figure::bytes(small),
                    mibs(ps.median),
                    a.tag("label"),
                    mibs(as_.median),
                ),
            )
        }
        _ => (
            crate::verdict::Verdict::Inconclusive,
            "pread or asynchronous runs missing".into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::rec_x;
    use crate::verdict::Verdict;

    fn recs(uring: f64) -> Vec<LabRecord> {
        let mk = |label: &str, engine: &str, y: f64| {
            rec_x(
                NAME,
                &[("bs", "4096"), ("label", label), ("engine", engine)],
                &[y, y],
                &[("p99_9_ns", &[1000.0, 1000.0]), ("cpu_pct", &[10.0, 10.0])],
            )
        };
        vec![
            mk("P", "pread", 100.0),
            mk("PT2", "pread", 180.0),
            mk("U16B1", "uring", uring),
            mk("A16B1", "libaio", 150.0),
        ]
    }

    #[test]
    fn verdict_follows_the_gain() {
        let a = Interfaces.analyse(&recs(400.0));
        assert_eq!(
            a.findings[0].verdict,
            Verdict::Reproduced,
            "{:?}",
            a.findings
        );
        assert_eq!(a.figures[0].points, 4);
        assert_eq!(
            Interfaces.analyse(&recs(120.0)).findings[0].verdict,
            Verdict::NotReproduced
        );
    }
}
