//! `reasonable` (study 002's `run2`): for each block size, double the
//! block count from 1 until reading that many blocks takes longer than a
//! target time (5 s in the course; shorter at smaller scales), on the same
//! runner code as every other experiment. Sequential reads wrap around the
//! data file when the count asks for more than it holds.

use crate::figure::{self, Axis, LineSeries, Pt};
use crate::record::LabRecord;
use crate::util::*;
use crate::verdict::{over_range, Finding};
use crate::{Analysis, Config, Ctx, Experiment, Measured, Work};
use iolab_bench::spec::{CacheMode, StopRule};

/// The experiment.
pub struct Reasonable;

const NAME: &str = "reasonable";
/// Bytes read in the target time at the largest block over the smallest.
const MIN_GROWTH: f64 = 2.0;
/// Never ask for more than this many bytes.
const CAP: u64 = 64 << 30;

fn target_ns(ctx: &Ctx) -> u64 {
    ctx.pick(5_000_000, 500_000_000, 5_000_000_000)
}

impl Experiment for Reasonable {
    fn name(&self) -> &'static str {
        NAME
    }
    fn study(&self) -> &'static str {
        "002"
    }
    fn answers(&self) -> &'static str {
        "how many blocks of each size make a read last longer than the target time (run2)?"
    }
    fn times(&self) -> [&'static str; 3] {
        ["1 s", "20 s", "3 min"]
    }
    fn configs(&self, ctx: &Ctx) -> Vec<Config> {
        let sizes = ctx.pick(
            vec![64, 64 * KIB],
            vec![64, 4 * KIB, 64 * KIB, MIB],
            vec![1, 64, KIB, 4 * KIB, 64 * KIB, MIB, 16 * MIB],
        );
        sizes
            .into_iter()
            .map(|bs| {
                Config::new(
                    &[
                        ("bs", b(bs)),
                        ("target_ms", (target_ns(ctx) / 1_000_000).to_string()),
                    ],
                    Work::Custom,
                )
            })
            .collect()
    }
    fn custom(&self, cfg: &Config, ctx: &Ctx) -> iolab_bench::Result<Measured> {
        let bs: u64 = cfg
            .tags
            .get("bs")
            .and_then(|v| v.parse().ok())
            .unwrap_or(4096);
        let size = size_for(ctx, ctx.pick(2 * MIB, 256 * MIB, 1024 * MIB)).max(bs);
        let mut s = spec(&ctx.data_file(size), size);
        s.bs = bs;
        s.cache = CacheMode::AsIs;
        let target = target_ns(ctx);
        let mut count = 1u64;
        loop {
            s.stop = StopRule {
                ops: Some(count),
                ..StopRule::default()
            };
            let rec = crate::measure_bench(&s, 1, ctx)?;
            let t = rec.runs.first().map(|r| r.duration_ns).unwrap_or(0);
            let stopped = ctx.stop.load(std::sync::atomic::Ordering::Relaxed);
            if t > target || count.saturating_mul(bs) >= CAP || stopped {
                let mut m = Measured {
                    unit: "blocks".into(),
                    samples: vec![count as f64],
                    ..Measured::default()
                };
                m.extra.insert("time_ns".into(), vec![t as f64]);
                m.extra.insert("bytes".into(), vec![(count * bs) as f64]);
                m.notes.push(format!(
                    "data file {size} bytes, read from the start, wrapping around"
                ));
                return Ok(m);
            }
            count *= 2;
        }
    }
    fn analyse(&self, recs: &[LabRecord]) -> Analysis {
        let all: Vec<&LabRecord> = sorted(recs.iter().collect(), "bs");
        let rate = |r: &LabRecord| {
            st(r, "bytes").median / (st(r, "time_ns").median.max(1.0) / 1e9) / 1048576.0
        };
        let fig = figure::lines(
            "reasonable",
            "run2: bytes read in the target time by block size",
            Axis::bytes("block size (bytes)"),
            Axis::bytes("bytes read (bytes)"),
            &[LineSeries {
                name: "bytes read".into(),
                pts: all
                    .iter()
                    .map(|r| Pt::of(r.num("bs"), &st(r, "bytes")))
                    .collect(),
            }],
        );
        let rows: Vec<Vec<String>> = all
            .iter()
            .map(|r| {
                vec![
                    hb(r, "bs"),
                    format!("{:.0}", r.stats().median),
                    figure::bytes(st(r, "bytes").median),
                    figure::ns(st(r, "time_ns").median),
                    mibs(rate(r)),
                ]
            })
            .collect();
        let (lo, hi, nums) = match (all.first(), all.last()) {
            (Some(a), Some(z)) if all.len() >= 2 && rate(a) > 0.0 => {
                let g = rate(z) / rate(a);
                (
                    g,
                    g,
                    format!(
                        "{} at {}, {} at {}: growth {g:.1}",
                        mibs(rate(a)),
                        hb(a, "bs"),
                        mibs(rate(z)),
                        hb(z, "bs")
                    ),
                )
            }
            _ => (f64::NAN, f64::NAN, "fewer than two block sizes".into()),
        };
        Analysis {
            figures: vec![fig],
            table: table(&["block", "count", "bytes", "time", "rate"], &rows),
            findings: vec![Finding::new(
                NAME,
                format!("larger blocks read more in the target time: rate at the largest block ≥ {MIN_GROWTH} × at the smallest"),
                over_range(lo, hi, |x| x >= MIN_GROWTH),
                nums,
            )],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::rec_x;
    use crate::verdict::Verdict;

    fn recs(big: f64) -> Vec<LabRecord> {
        vec![
            rec_x(
                NAME,
                &[("bs", "64")],
                &[1e6],
                &[("bytes", &[64e6]), ("time_ns", &[1e9])],
            ),
            rec_x(
                NAME,
                &[("bs", "65536")],
                &[1e4],
                &[("bytes", &[big]), ("time_ns", &[1e9])],
            ),
        ]
    }

    #[test]
    fn verdict_follows_the_rates() {
        assert_eq!(
            Reasonable.analyse(&recs(1e9)).findings[0].verdict,
            Verdict::Reproduced
        );
        assert_eq!(
            Reasonable.analyse(&recs(65e6)).findings[0].verdict,
            Verdict::NotReproduced
        );
    }
}
