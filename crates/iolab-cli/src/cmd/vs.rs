//! `iolab bench ... --vs fio`: iolab and fio alternately on the same file,
//! side by side, with the ratios, the noise between pairs, and the exact fio
//! command used.

use super::session::{prepare_files, Session};
use crate::output::table::{count, ns};
use anyhow::{Context, Result};
use iolab_bench::fio::{self, Comparable};
use iolab_bench::prepare;
use iolab_bench::record::{unix_ms, BenchRecord, FioComparison};
use iolab_bench::runner::{run_once, RealEngines, RunControl};
use iolab_bench::spec::{CacheMode, WorkloadSpec};
use iolab_bench::stats::median;
use std::fmt::Write;
use std::process::Command;
use std::sync::atomic::Ordering;

/// Checks that fio is installed and every spec can be translated.
pub fn check(specs: &[WorkloadSpec]) -> Result<()> {
    let ok = Command::new("fio")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        return Err(super::usage(
            "--vs fio: fio is not installed (scripts/setup.sh installs it)",
        ));
    }
    for s in specs {
        fio::command(s).map_err(|why| {
            super::usage(format!(
                "--vs fio: {} cannot be expressed in fio: {why}",
                s.label()
            ))
        })?;
    }
    Ok(())
}

fn run_fio(
    spec: &WorkloadSpec,
    prep: &prepare::Prepared,
    cmd: &fio::FioCommand,
) -> Result<Comparable> {
    if spec.cache == CacheMode::Warm {
        prepare::set_cache(spec, prep, spec.file_size)?;
    }
    let out = Command::new("fio")
        .args(&cmd.args)
        .output()
        .context("--vs fio: run fio")?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        anyhow::bail!("fio failed: {}", err.lines().next().unwrap_or("no message"));
    }
    // fio may print notes before the JSON document.
    let start = text.find('{').unwrap_or(0);
    Comparable::of_fio_json(&text[start..]).map_err(|e| anyhow::anyhow!(e))
}

/// Runs `pairs` alternating pairs for one configuration.
pub fn compare(
    spec: &WorkloadSpec,
    ses: &Session,
    temp: bool,
    pairs: u32,
    env: &iolab_bench::env::Environment,
) -> Result<BenchRecord> {
    let cmd = fio::command(spec).map_err(|why| super::usage(format!("--vs fio: {why}")))?;
    let prep = prepare_files(spec, ses, temp)?;
    let mut spec = spec.clone();
    if !ses.size_given {
        spec.file_size = prep.files.iter().map(|f| f.len).min().unwrap_or(0);
    }
    let cmd = fio::command(&spec).unwrap_or(cmd);
    let started = unix_ms();
    let (mut runs, mut ours, mut theirs) = (Vec::new(), Vec::new(), Vec::new());
    for p in 0..pairs {
        for side in if p % 2 == 0 { [0, 1] } else { [1, 0] } {
            if ses.stop.load(Ordering::Relaxed) {
                break;
            }
            if side == 0 {
                let resident = prepare::set_cache(&spec, &prep, spec.file_size)?;
                let ctl = RunControl {
                    stop: ses.stop,
                    on_interval: None,
                };
                let m = run_once(
                    &spec,
                    &prep,
                    spec.file_size,
                    resident,
                    RealEngines::shared(),
                    &ctl,
                )?;
                ours.push(Comparable::of_run(&m));
                runs.push(m);
            } else {
                theirs.push(run_fio(&spec, &prep, &cmd)?);
            }
        }
    }
    let mut rec = BenchRecord::new(spec, env.clone(), started, runs);
    rec.vs_fio = Some(FioComparison {
        command: cmd.line(),
        notes: cmd.notes.clone(),
        iolab: ours,
        fio: theirs,
    });
    Ok(rec)
}

/// (max - min) / median of a series, the spread between pairs.
fn spread(v: &[f64]) -> f64 {
    let m = median(v);
    if v.len() < 2 || m == 0.0 || m.is_nan() {
        return 0.0;
    }
    let (lo, hi) = v
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
    (hi - lo) / m
}

/// The side-by-side text of one comparison.
pub fn render(rec: &BenchRecord) -> String {
    let mut o = String::new();
    let Some(c) = &rec.vs_fio else { return o };
    let _ = writeln!(
        o,
        "{}  vs fio, {} pairs, alternating who runs first",
        rec.label,
        c.iolab.len().min(c.fio.len())
    );
    let _ = writeln!(o, "fio command: {}", c.command);
    for n in &c.notes {
        let _ = writeln!(o, "  {n}");
    }
    let _ = writeln!(
        o,
        "{:<8} {:>12} {:>12} {:>10} {:>8}",
        "metric", "iolab", "fio", "iolab/fio", "noise"
    );
    type Get = fn(&Comparable) -> f64;
    let metrics: [(&str, Get, bool); 6] = [
        ("MiB/s", |c| c.mib_per_s, false),
        ("IOPS", |c| c.iops, false),
        ("p50", |c| c.p50_ns, true),
        ("p99", |c| c.p99_ns, true),
        ("p99.9", |c| c.p99_9_ns, true),
        ("cpu %", |c| c.cpu_pct, false),
    ];
    let mut verdicts = Vec::new();
    for (name, get, is_ns) in metrics {
        let a: Vec<f64> = c.iolab.iter().map(get).collect();
        let b: Vec<f64> = c.fio.iter().map(get).collect();
        let (ma, mb) = (median(&a), median(&b));
        let ratio = ma / mb;
        let noise = spread(&a).max(spread(&b));
        let fmt = |v: f64| {
            if is_ns {
                ns(v)
            } else if name == "IOPS" {
                count(v)
            } else {
                format!("{v:.1}")
            }
        };
        let _ = writeln!(
            o,
            "{:<8} {:>12} {:>12} {:>10.3} {:>7.1}%",
            name,
            fmt(ma),
            fmt(mb),
            ratio,
            noise * 100.0
        );
        if ratio.is_finite() && name != "cpu %" && (ratio - 1.0).abs() > noise && a.len() > 1 {
            verdicts.push(format!(
                "{name}: iolab {:+.1} % against fio, more than the noise between pairs ({:.1} %)",
                (ratio - 1.0) * 100.0,
                noise * 100.0
            ));
        }
    }
    if verdicts.is_empty() {
        let _ = writeln!(o, "iolab and fio agree within the noise between pairs.");
    } else {
        for v in verdicts {
            let _ = writeln!(o, "{v}");
        }
    }
    let _ = writeln!(
        o,
        "(cpu: iolab counts the whole process; fio its job threads)"
    );
    o
}
