//! `sys` (study 004): `iolab sys` as an experiment, with its figures:
//! memory latency by working set (the cache plateaus), round trip by
//! message size, and file read time per block.

use crate::figure::{self, Axis, LineSeries, Pt};
use crate::record::LabRecord;
use crate::util::*;
use crate::verdict::{over_range, Finding};
use crate::{Analysis, Config, Ctx, Experiment, Measured, Work};

/// The experiment.
pub struct Sys;

const NAME: &str = "sys";
/// Memory latency at the largest working set over the smallest.
const MEM_GROWTH: f64 = 5.0;

/// (measurement, figure title, x axis, y axis).
const PARTS: [(&str, &str, &str, &str); 3] = [
    (
        "mem_latency",
        "Memory latency by working set",
        "working set (bytes)",
        "latency per load (ns)",
    ),
    (
        "tcp_rtt",
        "TCP round trip on loopback by message size",
        "message size (bytes)",
        "round trip (ns)",
    ),
    (
        "file_read_seq",
        "File read time per block",
        "x",
        "time per block (ns)",
    ),
];

impl Experiment for Sys {
    fn name(&self) -> &'static str {
        NAME
    }
    fn study(&self) -> &'static str {
        "004"
    }
    fn answers(&self) -> &'static str {
        "what do memory, loopback network and file reads cost on this machine?"
    }
    fn times(&self) -> [&'static str; 3] {
        ["5 s", "30 s", "2 min"]
    }
    fn configs(&self, _ctx: &Ctx) -> Vec<Config> {
        PARTS
            .iter()
            .map(|p| Config::new(&[("measurement", p.0.into())], Work::Custom))
            .collect()
    }
    fn custom(&self, cfg: &Config, ctx: &Ctx) -> iolab_bench::Result<Measured> {
        let name = cfg.tags.get("measurement").cloned().unwrap_or_default();
        sys_entry(&name, ctx, ctx.pick(1, 3, 5), false)
    }
    fn analyse(&self, recs: &[LabRecord]) -> Analysis {
        let mut figures = Vec::new();
        let mut rows = Vec::new();
        for (m, title, xl, yl) in PARTS {
            let Some(r) = recs.iter().find(|r| r.tag("measurement") == m) else {
                continue;
            };
            if let Some(f) = part_figure(r, m, title, xl, yl) {
                figures.push(f);
            }
            rows.push(vec![
                m.into(),
                format!("{} {}", figure::num(r.stats().median), r.unit),
            ]);
        }
        let (lo, hi, nums) = memory_growth(recs);
        Analysis {
            figures,
            table: table(&["measurement", "headline"], &rows),
            findings: vec![Finding::new(
                NAME,
                format!("memory latency climbs with the working set past the caches: latency at the largest working set ≥ {MEM_GROWTH} × at the smallest"),
                over_range(lo, hi, |x| x >= MEM_GROWTH),
                nums,
            )],
        }
    }
}

/// One measurement's curve (its repeats' range as the band), or None when
/// it has no points.
fn part_figure(r: &LabRecord, m: &str, title: &str, xl: &str, yl: &str) -> Option<figure::Figure> {
    let (x, y) = (values(r, "x"), values(r, "y"));
    let (lo, hi) = (values(r, "y_min"), values(r, "y_max"));
    let pts: Vec<Pt> = (0..x.len().min(y.len()))
        .map(|i| Pt {
            x: x[i],
            y: y[i],
            lo: lo.get(i).copied().unwrap_or(y[i]),
            hi: hi.get(i).copied().unwrap_or(y[i]),
        })
        .collect();
    if pts.is_empty() {
        return None;
    }
    let xunit = r
        .notes
        .iter()
        .find_map(|n| n.strip_prefix("x: ").and_then(|s| s.split(',').next()))
        .unwrap_or("");
    let xlabel = if xl == "x" {
        format!("{xunit} (count)")
    } else {
        xl.to_string()
    };
    Some(figure::lines(
        &format!("sys-{}", m.replace('_', "-")),
        title,
        if xl.contains("bytes") {
            Axis::bytes(&xlabel)
        } else {
            Axis::new(&xlabel, true, figure::num)
        },
        Axis::new(yl, true, figure::ns),
        &[LineSeries {
            name: m.into(),
            pts,
        }],
    ))
}

/// Memory latency at the largest working set over the smallest, as the
/// repeats' range (low, high) and the numbers that decide it.
fn memory_growth(recs: &[LabRecord]) -> (f64, f64, String) {
    match recs.iter().find(|r| r.tag("measurement") == "mem_latency") {
        Some(r) if values(r, "y").len() >= 2 => {
            let y = values(r, "y");
            let (a, z) = (y[0].max(1e-9), y[y.len() - 1]);
            let (amin, amax) = (
                values(r, "y_min").first().copied().unwrap_or(a),
                values(r, "y_max").first().copied().unwrap_or(a),
            );
            let (zmin, zmax) = (
                values(r, "y_min").last().copied().unwrap_or(z),
                values(r, "y_max").last().copied().unwrap_or(z),
            );
            (
                zmin / amax.max(1e-9),
                zmax / amin.max(1e-9),
                format!(
                    "{} at the smallest working set, {} at the largest: × {:.1}",
                    figure::ns(a),
                    figure::ns(z),
                    z / a
                ),
            )
        }
        _ => (f64::NAN, f64::NAN, "memory latency not measured".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::rec_x;
    use crate::verdict::Verdict;

    fn recs(big: f64) -> Vec<LabRecord> {
        vec![rec_x(
            NAME,
            &[("measurement", "mem_latency")],
            &[1.0],
            &[("x", &[4096.0, 1e8]), ("y", &[1.0, big])],
        )]
    }

    #[test]
    fn verdict_follows_the_growth() {
        let a = Sys.analyse(&recs(80.0));
        assert_eq!(a.findings[0].verdict, Verdict::Reproduced);
        assert_eq!(a.figures[0].points, 2);
        assert_eq!(
            Sys.analyse(&recs(2.0)).findings[0].verdict,
            Verdict::NotReproduced
        );
    }
}
