//! `fault-around` (study 000's mapped chunk size, on Linux): how many bytes
//! one mmap page fault brings in. Touching every page of a cached file
//! through a mapping costs fewer faults than pages when the kernel maps
//! neighbours on each fault (`fault_around_bytes`); on a cold file the
//! latency against bytes touched per access shows the step.

use crate::figure::{self, Axis, Figure, LineSeries, Pt};
use crate::record::LabRecord;
use crate::util::*;
use crate::verdict::{over_range, Finding, Verdict};
use crate::{Analysis, Config, Ctx, Experiment, Measured, Work};
use iolab::engine::EngineKind;
use iolab_bench::spec::{AccessPattern, CacheMode};
use iolab_bench::stats::Stats;

/// The experiment.
pub struct FaultAround;

const NAME: &str = "fault-around";
/// One fault must map at least this many pages.
const MIN_PAGES: f64 = 2.0;
const SETTING: &str = "/sys/kernel/debug/fault_around_bytes";

impl Experiment for FaultAround {
    fn name(&self) -> &'static str {
        NAME
    }
    fn study(&self) -> &'static str {
        "000"
    }
    fn answers(&self) -> &'static str {
        "how many bytes does one mmap page fault bring in?"
    }
    fn times(&self) -> [&'static str; 3] {
        ["1 s", "30 s", "3 min"]
    }
    fn configs(&self, ctx: &Ctx) -> Vec<Config> {
        let size = size_for(ctx, ctx.pick(2 * MIB, 64 * MIB, 256 * MIB));
        let file = ctx.data_file(size);
        let repeats = ctx.pick(1, 3, 5);
        let mut v = vec![Config::new(&[("part", "setting".into())], Work::Custom)];
        let mut s = spec(&file, size);
        s.engine = EngineKind::Mmap;
        s.engine_opts.mmap_touch = true;
        s.cache = CacheMode::Warm;
        v.push(bench(&[("part", "warm pass".into())], s, repeats));
        let max_ops: u64 = ctx.pick(64, 2_000, 10_000);
        let touches = ctx.pick(
            vec![4 * KIB, 64 * KIB],
            vec![
                4 * KIB,
                8 * KIB,
                16 * KIB,
                32 * KIB,
                64 * KIB,
                128 * KIB,
                256 * KIB,
                MIB,
            ],
            vec![
                4 * KIB,
                8 * KIB,
                16 * KIB,
                32 * KIB,
                48 * KIB,
                64 * KIB,
                96 * KIB,
                128 * KIB,
                192 * KIB,
                256 * KIB,
                512 * KIB,
                MIB,
            ],
        );
        for bs in touches {
            let mut s = spec(&file, size);
            s.engine = EngineKind::Mmap;
            s.engine_opts.mmap_touch = true;
            s.cache = CacheMode::Cold;
            s.pattern = AccessPattern::Rand;
            s.bs = bs;
            s.stop = stop_after_ops((size / bs / 4).clamp(4, max_ops));
            v.push(bench(
                &[("part", "cold touch".into()), ("bs", b(bs))],
                s,
                repeats,
            ));
        }
        v
    }
    fn custom(&self, _cfg: &Config, _ctx: &Ctx) -> iolab_bench::Result<Measured> {
        let mut m = Measured {
            unit: "bytes".into(),
            ..Measured::default()
        };
        match std::fs::read_to_string(SETTING) {
            Ok(s) => match s.trim().parse::<f64>() {
                Ok(v) => m.samples.push(v),
                Err(_) => m.notes.push(format!("{SETTING}: not a number")),
            },
            Err(e) => m
                .notes
                .push(format!("{SETTING}: not readable ({e}); debugfs is needed")),
        }
        Ok(m)
    }
    fn analyse(&self, recs: &[LabRecord]) -> Analysis {
        let parts = by(recs, "part");
        let first = |part: &str| parts.get(part).and_then(|g| g.first()).copied();
        let cold = sorted(parts.get("cold touch").cloned().unwrap_or_default(), "bs");
        let ppf = pages_per_fault(first("warm pass"));
        let mut rows = touch_rows(&cold);
        rows.push(vec![
            "warm pass".into(),
            "-".into(),
            format!("{:.2} pages per fault", Stats::of(&ppf).median),
        ]);
        Analysis {
            figures: vec![latency_figure(&cold)],
            table: table(&["touched", "mean latency", "faults per access"], &rows),
            findings: vec![pages_finding(&ppf, &setting(first("setting")))],
        }
    }
}

/// Mean and p99 latency of one cold access against the bytes it touches.
fn latency_figure(cold: &[&LabRecord]) -> Figure {
    let line = |name: &str, what: &str| LineSeries {
        name: name.into(),
        pts: cold
            .iter()
            .map(|r| Pt::of(r.num("bs"), &st(r, what)))
            .collect(),
    };
    figure::lines(
        "fault-around",
        "Cold mapped file: latency of one access by bytes touched",
        Axis::bytes("bytes touched per access (bytes)"),
        Axis::new("latency (ns)", true, figure::ns),
        &[line("mean", "mean_ns"), line("p99", "p99_ns")],
    )
}

/// One table row per cold touch size: mean latency and faults per access.
fn touch_rows(cold: &[&LabRecord]) -> Vec<Vec<String>> {
    cold.iter()
        .map(|r| {
            let ops = st(r, "ops").median.max(1.0);
            vec![
                hb(r, "bs"),
                figure::ns(st(r, "mean_ns").median),
                format!(
                    "{:.2}",
                    (st(r, "minor_faults").median + st(r, "major_faults").median) / ops
                ),
            ]
        })
        .collect()
}

/// The kernel's `fault_around_bytes` as the `setting` record read it, or
/// why it could not.
fn setting(rec: Option<&LabRecord>) -> String {
    rec.map(|r| match r.samples.first() {
        Some(v) => format!("kernel fault_around_bytes = {}", figure::bytes(*v)),
        None => r.notes.join("; "),
    })
    .unwrap_or_else(|| "kernel setting not read".into())
}

/// Pages per fault on the warm pass, per repeat.
fn pages_per_fault(warm: Option<&LabRecord>) -> Vec<f64> {
    warm.map(|r| {
        let ops = values(r, "ops");
        let f = values(r, "minor_faults");
        ops.iter().zip(f).map(|(o, f)| o / f.max(1.0)).collect()
    })
    .unwrap_or_default()
}

/// Whether one fault maps at least [`MIN_PAGES`] pages, over the repeats.
fn pages_finding(ppf: &[f64], setting: &str) -> Finding {
    let s = Stats::of(ppf);
    let v = if ppf.is_empty() {
        Verdict::Inconclusive
    } else {
        over_range(s.min, s.max, |x| x >= MIN_PAGES)
    };
    Finding::new(
        NAME,
        format!("one page fault maps more than one page: touching every 4 KiB page of a cached mapped file takes ≥ {MIN_PAGES} pages per fault"),
        v,
        format!("{:.2} pages per fault ({:.2}–{:.2}), {:.0} KiB per fault; {setting}", s.median, s.min, s.max, s.median * 4.0),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{assert_first, rec_x};

    fn recs(faults: f64) -> Vec<LabRecord> {
        vec![
            rec_x(
                NAME,
                &[("part", "warm pass")],
                &[1.0],
                &[("ops", &[1600.0]), ("minor_faults", &[faults])],
            ),
            rec_x(
                NAME,
                &[("part", "cold touch"), ("bs", "4096")],
                &[1.0],
                &[
                    ("mean_ns", &[1e4]),
                    ("p99_ns", &[2e4]),
                    ("ops", &[10.0]),
                    ("minor_faults", &[10.0]),
                ],
            ),
        ]
    }

    #[test]
    fn verdict_follows_pages_per_fault() {
        let a = FaultAround.analyse(&recs(100.0));
        assert_first(&a, Verdict::Reproduced, "16.00 pages");
        assert_eq!(
            FaultAround.analyse(&recs(1600.0)).findings[0].verdict,
            Verdict::NotReproduced
        );
    }
}
