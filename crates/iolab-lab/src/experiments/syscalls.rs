//! `syscalls` (studies 002, 004): 1-byte `read` calls per second against
//! other system calls (getpid, getuid, fstat, lseek) and the vDSO clock.

use crate::figure::{self, Axis, BarSeries};
use crate::record::LabRecord;
use crate::util::*;
use crate::verdict::{over_range, Finding};
use crate::{Analysis, Config, Ctx, Experiment, Measured, Work};
use iolab::engine::EngineKind;
use iolab_bench::spec::{CacheMode, StopRule};
use iolab_bench::stats::Stats;

/// The experiment.
pub struct Syscalls;

const NAME: &str = "syscalls";
/// The calls compared with the 1-byte read (getppid is not measured by
/// `iolab sys`; getuid stands in as another trivial call).
const CALLS: [&str; 5] = ["getpid", "getuid", "fstat", "lseek", "clock_read"];
/// A 1-byte read must reach at most this fraction of getpid's rate.
const RATIO: f64 = 0.8;

fn repeats(ctx: &Ctx) -> usize {
    ctx.pick(1, 5, 10)
}

/// Calls per second of a record (the read goes through the runner).
fn rate(r: &LabRecord) -> Vec<f64> {
    if r.bench.is_some() {
        values(r, "iops").to_vec()
    } else {
        r.samples.iter().map(|ns| 1e9 / ns.max(1e-3)).collect()
    }
}

impl Experiment for Syscalls {
    fn name(&self) -> &'static str {
        NAME
    }
    fn study(&self) -> &'static str {
        "002, 004"
    }
    fn answers(&self) -> &'static str {
        "how many 1-byte reads per second, against the cheapest system calls?"
    }
    fn times(&self) -> [&'static str; 3] {
        ["1 s", "20 s", "2 min"]
    }
    fn configs(&self, ctx: &Ctx) -> Vec<Config> {
        let size = MIB;
        let mut s = spec(&ctx.data_file(size), size);
        s.engine = EngineKind::Read;
        s.bs = 1;
        s.cache = CacheMode::Warm;
        s.stop = StopRule {
            ops: Some(ctx.pick(20_000, 2_000_000, 10_000_000)),
            ..StopRule::default()
        };
        let mut v = vec![bench(
            &[("call", "read 1 B".into())],
            s,
            repeats(ctx) as u32,
        )];
        for c in CALLS {
            v.push(Config::new(&[("call", c.into())], Work::Custom));
        }
        v
    }
    fn custom(&self, cfg: &Config, ctx: &Ctx) -> iolab_bench::Result<Measured> {
        let name = cfg.tags.get("call").cloned().unwrap_or_default();
        sys_entry(&name, ctx, repeats(ctx), true)
    }
    fn analyse(&self, recs: &[LabRecord]) -> Analysis {
        let mut order: Vec<&LabRecord> = recs.iter().collect();
        order.sort_by_key(|r| (r.bench.is_none(), r.key.clone()));
        let names: Vec<String> = order.iter().map(|r| r.tag("call").to_string()).collect();
        let stats: Vec<Stats> = order.iter().map(|r| Stats::of(&rate(r))).collect();
        let fig = figure::bars(
            "syscalls",
            "1-byte reads against other system calls",
            "call",
            &names,
            Axis::new("calls per second (1/s)", true, figure::num),
            &[BarSeries {
                name: "calls/s".into(),
                vals: stats.iter().map(|s| Some(*s)).collect(),
            }],
        );
        let rows: Vec<Vec<String>> = names
            .iter()
            .zip(&stats)
            .map(|(n, s)| {
                vec![
                    n.clone(),
                    mmm(s, figure::num),
                    format!("{:.1}", 1e9 / s.median.max(1e-9)),
                ]
            })
            .collect();
        let find = |n: &str| names.iter().position(|x| x == n).map(|i| stats[i]);
        let (lo, hi, nums) = match (find("read 1 B"), find("getpid")) {
            (Some(r), Some(g)) if g.min > 0.0 && g.max > 0.0 => (
                r.min / g.max,
                r.max / g.min,
                format!(
                    "read {} calls/s, getpid {} calls/s, ratio {:.2} (range {:.2}–{:.2})",
                    figure::num(r.median),
                    figure::num(g.median),
                    r.median / g.median,
                    r.min / g.max,
                    r.max / g.min
                ),
            ),
            _ => (f64::NAN, f64::NAN, "read or getpid not measured".into()),
        };
        Analysis {
            figures: vec![fig],
            table: table(&["call", "calls/s median [min–max]", "ns/call"], &rows),
            findings: vec![Finding::new(
                NAME,
                format!(
                    "a 1-byte read costs more than the cheapest system call: read calls/s ≤ {RATIO} × getpid calls/s"
                ),
                over_range(lo, hi, |x| x <= RATIO),
                nums,
            )],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::rec;
    use crate::verdict::Verdict;

    #[test]
    fn verdict_follows_the_ratio() {
        // Custom records hold ns per call.
        let mk = |read_ns: f64| {
            vec![
                rec(NAME, &[("call", "getpid")], &[100.0, 100.0]),
                rec(NAME, &[("call", "read 1 B")], &[read_ns, read_ns]),
            ]
        };
        assert_eq!(
            Syscalls.analyse(&mk(400.0)).findings[0].verdict,
            Verdict::Reproduced
        );
        assert_eq!(
            Syscalls.analyse(&mk(100.0)).findings[0].verdict,
            Verdict::NotReproduced
        );
        let mut v = mk(400.0);
        v[1].samples = vec![110.0, 400.0];
        assert_eq!(
            Syscalls.analyse(&v).findings[0].verdict,
            Verdict::Inconclusive
        );
    }
}
