//! `iolab trace stats FILE`: what a trace reads, how, how much again, and
//! what the reading policies would choose for each file.

use crate::trace_io::parse_format;
use crate::trace_io::trace_err;
use anyhow::Result;
use iolab_bench::prepare::human;
use iolab_trace::stats::{self, Advice, FileStats, TraceStats};
use iolab_trace::{self as tr, TraceFormat};
use std::fmt::Write;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

/// Arguments of `iolab trace`.
#[derive(clap::Args, Debug)]
pub struct TraceArgs {
    #[command(subcommand)]
    cmd: TraceCmd,
}

#[derive(clap::Subcommand, Debug)]
enum TraceCmd {
    /// Files, bytes, request sizes, sequential and re-read fractions,
    /// working set, and the policies' choice per file.
    Stats(StatsArgs),
}

/// Arguments of `iolab trace stats`.
#[derive(clap::Args, Debug)]
pub struct StatsArgs {
    /// The trace (iolab CSV, fio iolog, blkparse text or strace log).
    pub file: PathBuf,
    /// The trace's format (default: detected from the first line).
    #[arg(long, value_parser = parse_format)]
    pub format: Option<TraceFormat>,
    /// Print one JSON document instead of the text.
    #[arg(long)]
    pub json: bool,
}

/// What the policies would choose for a file.
pub fn advise(f: &FileStats) -> Vec<Advice> {
    iolab_trace::readers::advise(f)
}

fn pct(x: f64) -> String {
    format!("{:.0} %", x * 100.0)
}

/// The text report.
pub fn text(s: &TraceStats) -> String {
    let mut o = String::new();
    summary(&mut o, s);
    size_histogram(&mut o, s);
    threads(&mut o, s);
    files(&mut o, s);
    o
}

/// The trace as a whole: what it read, over how long, how sequential,
/// how much again, the working set against memory, and what was left out.
fn summary(o: &mut String, s: &TraceStats) {
    let _ = writeln!(
        o,
        "{} trace: {} files, {} reads, {} read, {} mappings ({} mapped)",
        s.format.name(),
        s.files,
        s.reads,
        human(s.bytes),
        s.mappings,
        human(s.mapped_bytes)
    );
    if let Some(d) = s.duration_ns {
        let _ = writeln!(o, "recorded over {:.3} s", d as f64 / 1e9);
    }
    let _ = writeln!(
        o,
        "sequential {}   re-read {}   working set {} ({:.1} % of memory {}, {} available now)",
        pct(s.sequential_fraction),
        pct(s.reread_fraction),
        human(s.working_set),
        s.working_set as f64 / s.mem_total.max(1) as f64 * 100.0,
        human(s.mem_total),
        human(s.mem_available)
    );
    if !s.skipped.is_empty() {
        let v: Vec<String> = s.skipped.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let _ = writeln!(o, "left out: {}", v.join(", "));
    }
}

/// Request sizes as a bar chart, the longest bar 40 characters.
fn size_histogram(o: &mut String, s: &TraceStats) {
    let _ = writeln!(o, "\nrequest sizes");
    let max = s.size_histogram.iter().map(|x| x.1).max().unwrap_or(1);
    for (b, n) in &s.size_histogram {
        let bar = "#".repeat(((*n as f64 / max as f64) * 40.0).ceil() as usize);
        let _ = writeln!(o, "  <= {:>9}  {:>9}  {bar}", human(*b), n);
    }
}

/// One line per thread, when more than one thread read.
fn threads(o: &mut String, s: &TraceStats) {
    if s.per_thread.len() > 1 {
        let _ = writeln!(o, "\nthreads");
        for t in &s.per_thread {
            let _ = writeln!(
                o,
                "  {:>8}  {:>8} reads  {:>10}  sequential {}",
                t.thread,
                t.reads,
                human(t.bytes),
                pct(t.sequential_fraction)
            );
        }
    }
}

/// The files that read the most (at most 20), each with the policies'
/// choice for it.
fn files(o: &mut String, s: &TraceStats) {
    let _ = writeln!(o, "\nfiles (largest reads first)");
    let mut files: Vec<&FileStats> = s.per_file.iter().collect();
    files.sort_by_key(|f| std::cmp::Reverse(f.bytes));
    const SHOWN: usize = 20;
    let more = files.len().saturating_sub(SHOWN);
    for f in files.into_iter().take(SHOWN) {
        let _ = writeln!(
            o,
            "  {}\n    size {}  {} reads  {} read  mean {}  sequential {}  re-read {}{}",
            f.path,
            human(f.size),
            f.reads,
            human(f.bytes),
            human(f.mean_request as u64),
            pct(f.sequential_fraction),
            pct(f.reread_fraction),
            if f.mapped {
                "  mapped (faults not traced)"
            } else {
                ""
            }
        );
        for a in &f.advice {
            let _ = writeln!(o, "    {:<6} -> {:<12} {}", a.policy, a.technique, a.reason);
        }
    }
    if more > 0 {
        let _ = writeln!(o, "  ... and {more} more files (--json lists every one)");
    }
}

/// Runs `iolab trace ...`.
pub fn run(a: &TraceArgs, _stop: &AtomicBool) -> Result<i32> {
    match &a.cmd {
        TraceCmd::Stats(s) => {
            let t = tr::load(&s.file, s.format).map_err(trace_err)?;
            let st = stats::compute(&t, &advise);
            if s.json {
                let mut v = serde_json::to_value(&st)?;
                v["schema_version"] = iolab_bench::record::SCHEMA_VERSION.into();
                crate::export::stdout(&format!("{}\n", serde_json::to_string_pretty(&v)?))?;
            } else {
                crate::export::stdout(&text(&st))?;
            }
            Ok(0)
        }
    }
}
