//! `iolab replay TRACE`: a recorded trace's reads, issued through every
//! reading technique, compared.

use crate::export::flags::OutputArgs;
use crate::export::table::ns;
use crate::export::{Exportable, Exporters};
use crate::trace_io::summary;
use crate::trace_io::trace_err;
use anyhow::Result;
use iolab_reader::{Hints, Technique};
use iolab_trace::place::{self, Placed};
use iolab_trace::readers;
use iolab_trace::replay::{self as rp, ReplayReader, Threads, Timing};
use iolab_trace::session::{self, Cache, ReaderResult, SessionOpts};
use iolab_trace::{self as tr, TraceFormat};
use serde::Serialize;
use std::collections::HashMap;
use std::fmt::Write;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

/// Arguments of `iolab replay`.
#[derive(clap::Args, Debug)]
pub struct ReplayArgs {
    /// The trace (iolab CSV, fio iolog, blkparse text or strace log).
    pub trace: PathBuf,
    /// The trace's format (default: detected from the first line).
    #[arg(long, value_parser = crate::trace_io::parse_format)]
    pub format: Option<TraceFormat>,
    /// Readers to compare, comma-separated, or `all`: stream, buffered\[:4m\],
    /// mapped, direct, uring\[:32\], thesis (the fixed rules of the study
    /// that iolab reproduces: per-file hints from the trace), auto (the
    /// adaptive reader), pread (a plain pread loop).
    #[arg(long, default_value = "all", value_name = "LIST")]
    pub reader: String,
    /// Page-cache state before each replay: cold (the files evicted), warm
    /// (the files read whole) or rerun (evicted, then the trace replayed
    /// once untimed: what a program run a second time finds cached).
    #[arg(long, default_value = "cold", value_parser = ["cold", "warm", "rerun"])]
    pub cache: String,
    /// Issue reads as soon as possible, or at their recorded times.
    #[arg(long, default_value = "asap", value_parser = ["asap", "recorded", "original"])]
    pub timing: String,
    /// Replay threads: one per recorded thread, or N.
    #[arg(long, default_value = "recorded", value_name = "recorded|N")]
    pub threads: String,
    /// Replays per reader (in rotating order); the median is reported.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub repeat: u64,
    /// Directory the trace's files are made in (missing ones are created
    /// at their recorded sizes, existing ones reused). Default: a temporary
    /// directory here, removed afterwards.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Read the trace's own paths, read-only, instead of files under --dir.
    #[arg(long, conflicts_with = "dir")]
    pub in_place: bool,
    /// Merge adjacent reads of one thread into requests of up to SIZE (as
    /// the study iolab reproduces prepared its traces); SIZE defaults to 1m.
    #[arg(long, value_name = "SIZE", num_args = 0..=1, default_missing_value = "1m", value_parser = crate::parse::size)]
    pub coalesce: Option<u64>,
    /// Check every byte read against the pattern iolab filled the file with.
    #[arg(long)]
    pub verify: bool,
    #[command(flatten)]
    pub out: OutputArgs,
}

/// The readers `--reader all` compares: every technique of the reading
/// library (`auto` last) and the plain `pread` loop.
pub fn reader_names() -> Vec<String> {
    let mut v: Vec<String> = readers::all().iter().map(|t| t.to_string()).collect();
    v.push("pread".into());
    v
}

/// Builds the readers `list` names (technique names as `iolab cat` takes
/// them: stream, buffered\[:4m\], mapped, direct, uring\[:32\], thesis, auto;
/// and pread, and auto:builtin for `Auto` without the machine's profile); `hints` are the thesis reader's per-file hints.
pub fn build_readers(
    list: &str,
    hints: &HashMap<PathBuf, Hints>,
) -> Result<Vec<Box<dyn ReplayReader>>> {
    let names: Vec<String> = if list.trim() == "all" {
        reader_names()
    } else {
        list.split(',').map(|s| s.trim().to_string()).collect()
    };
    let mut out: Vec<Box<dyn ReplayReader>> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for n in names {
        let r: Box<dyn ReplayReader> = if n == "pread" {
            Box::new(rp::PreadReader)
        } else if n == readers::AUTO_BUILTIN {
            Box::new(readers::TechniqueReader::auto_builtin())
        } else {
            // Accept the short spellings too: buffered4k, mmap, uring32.
            let alias = match n.as_str() {
                "mmap" => "mapped".to_string(),
                s if s.starts_with("buffered") && !s.contains(':') && s.len() > 8 => {
                    format!("buffered:{}", &s[8..])
                }
                s if s.starts_with("uring") && !s.contains(':') && s.len() > 5 => {
                    format!("uring:{}", &s[5..])
                }
                s => s.to_string(),
            };
            let t: Technique = alias
                .parse()
                .map_err(|e: iolab_reader::ParseTechniqueError| {
                    super::usage(format!(
                        "--reader {n}: {e}, pread, {}, or all",
                        readers::AUTO_BUILTIN
                    ))
                })?;
            Box::new(readers::TechniqueReader::new(t, hints.clone()))
        };
        if !seen.insert(r.name()) {
            return Err(super::usage(format!("--reader {n}: named twice")));
        }
        out.push(r);
    }
    if out.is_empty() {
        return Err(super::usage("--reader: name at least one reader"));
    }
    Ok(out)
}

/// The whole result, as `--json` prints it.
#[derive(Serialize)]
struct Doc<'a> {
    schema_version: u32,
    kind: &'static str,
    trace: String,
    format: TraceFormat,
    files: usize,
    requests: usize,
    bytes: u64,
    threads: usize,
    cache: Cache,
    timing: &'a str,
    repeat: u64,
    coalesce: Option<u64>,
    results: &'a [ReaderResult],
}

fn table(d: &Doc) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "replay of {}: {}, {}, {}, {}; cache {}, timing {}, {} asked",
        d.trace,
        plural(d.requests as u64, "request"),
        iolab_bench::prepare::human(d.bytes),
        plural(d.files as u64, "file"),
        plural(d.threads as u64, "thread"),
        d.cache.name(),
        d.timing,
        plural(d.repeat, "round")
    );
    let _ = writeln!(
        o,
        "{:<14} {:>10} {:>8} {:>10} {:>10} {:>10} {:>7} {:>5}",
        "reader", "time", "x best", "MiB/s", "p50", "p99", "cpu", "runs"
    );
    for r in d.results {
        let _ = writeln!(
            o,
            "{:<14} {:>10} {:>7.2}{} {:>10.1} {:>10} {:>10} {:>6.0}% {:>5}",
            r.reader,
            ns(r.median_ns),
            r.relative,
            if r.winner { "*" } else { " " },
            r.mib_per_s,
            ns(r.latency.p50_ns as f64),
            ns(r.latency.p99_ns as f64),
            r.cpu_percent,
            r.runs.len()
        );
    }
    let _ = writeln!(
        o,
        "time = median over the runs; * winner (shortest median time); x best = time / winner's time"
    );
    for r in d.results.iter().filter(|r| !r.switches.is_empty()) {
        let files: Vec<u64> = r.runs.iter().map(|x| x.fell_back).collect();
        let _ = writeln!(
            o,
            "{}: the run-time guard fell back to pread on up to {} file(s) a run; e.g. {}",
            r.reader,
            files.iter().max().unwrap_or(&0),
            r.switches[0]
        );
    }
    o
}

/// "1 file", "2 files".
fn plural(n: u64, one: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {one}s")
    }
}

/// One reader's result as the file formats write it: a JSON line with the
/// trace, cache state and timing beside it, and one CSV row.
struct ReplayRow<'a> {
    doc: &'a Doc<'a>,
    r: &'a ReaderResult,
}

impl Exportable for ReplayRow<'_> {
    fn to_json(&self) -> Result<serde_json::Value> {
        let d = self.doc;
        let mut v = serde_json::to_value(self.r)?;
        v["schema_version"] = d.schema_version.into();
        v["kind"] = "replay".into();
        v["trace"] = d.trace.clone().into();
        v["cache"] = serde_json::to_value(d.cache)?;
        v["timing"] = d.timing.into();
        Ok(v)
    }

    fn csv_header(&self) -> Vec<String> {
        [
            "reader",
            "median_ns",
            "relative",
            "winner",
            "mib_per_s",
            "bytes",
            "requests",
            "p50_ns",
            "p90_ns",
            "p99_ns",
            "max_ns",
            "cpu_percent",
            "runs",
            "cache",
            "timing",
            "trace",
        ]
        .map(String::from)
        .to_vec()
    }

    fn csv_rows(&self) -> Vec<Vec<String>> {
        let (d, r) = (self.doc, self.r);
        vec![vec![
            r.reader.clone(),
            format!("{:.0}", r.median_ns),
            format!("{:.4}", r.relative),
            r.winner.to_string(),
            format!("{:.2}", r.mib_per_s),
            r.bytes.to_string(),
            r.requests.to_string(),
            r.latency.p50_ns.to_string(),
            r.latency.p90_ns.to_string(),
            r.latency.p99_ns.to_string(),
            r.latency.max_ns.to_string(),
            format!("{:.1}", r.cpu_percent),
            r.runs.len().to_string(),
            d.cache.name().into(),
            d.timing.to_string(),
            d.trace.clone(),
        ]]
    }
}

/// Runs `iolab replay`.
pub fn run(a: &ReplayArgs, stop: &AtomicBool) -> Result<i32> {
    let (t, threads) = load_checked(a)?;
    // Outputs are checked before any file is made.
    let targets = a.out.check(&measured_paths(a, &t))?;
    let (placed, temp) = place_files(a, &t, stop)?;
    check_verifiable(a, &placed)?;
    let hints = readers::hints_for(&t, &placed.paths);
    let readers = build_readers(&a.reader, &hints)?;
    let plan = rp::plan(&t, threads, a.coalesce);
    let opts = session_opts(a);
    let pb = crate::progress::runs(a.repeat * readers.len() as u64);
    let results = session::compare(
        &plan,
        &placed.paths,
        &placed.sizes,
        &placed.patterns,
        &readers,
        opts,
        stop,
        &mut |name, round| {
            pb.set_message(format!("{name} round {}", round + 1));
            pb.inc(1);
        },
    )
    .map_err(trace_err);
    pb.finish_and_clear();
    drop(temp);
    let results = results?;
    let doc = Doc {
        schema_version: iolab_bench::record::SCHEMA_VERSION,
        kind: "replay",
        trace: a.trace.display().to_string(),
        format: t.format,
        files: t.files.len(),
        requests: plan.requests(),
        bytes: plan.bytes(),
        threads: plan.threads.len(),
        cache: opts.cache,
        timing: if a.timing == "asap" {
            "asap"
        } else {
            "recorded"
        },
        repeat: a.repeat,
        coalesce: a.coalesce,
        results: &results,
    };
    write_outputs(a, &doc, &results, targets)?;
    Ok(0)
}

/// The paths the replay will read, where they are known before placing
/// (`--dir` or `--in-place`), so that no output may overwrite them.
fn measured_paths(a: &ReplayArgs, t: &tr::Trace) -> Vec<PathBuf> {
    match (&a.dir, a.in_place) {
        (Some(d), _) => t.files.iter().map(|f| place::map_path(d, f)).collect(),
        (None, true) => t.files.iter().map(PathBuf::from).collect(),
        _ => Vec::new(),
    }
}

/// With `--verify`, refuses files iolab did not make: the bytes they
/// should hold are unknown.
fn check_verifiable(a: &ReplayArgs, placed: &Placed) -> Result<()> {
    if a.verify {
        if let Some(i) = placed.patterns.iter().position(|p| p.is_none()) {
            return Err(super::usage(format!(
                "--verify: {} was not made by iolab, so the bytes it should hold are unknown",
                placed.paths[i].display()
            )));
        }
    }
    Ok(())
}

/// The flags checked and the trace loaded: refused before any file is
/// made when a flag is bad, a reader unknown, or the trace has no reads.
fn load_checked(a: &ReplayArgs) -> Result<(tr::Trace, Threads)> {
    crate::limits::check_input_file("replay", &a.trace)?;
    let threads = threads_of(&a.threads)?;
    if a.coalesce == Some(0) || a.coalesce.is_some_and(|c| c > 1 << 30) {
        return Err(super::usage(
            "--coalesce: the merged request size must be 1 byte to 1 GiB",
        ));
    }
    // Names are checked before the trace is read.
    build_readers(&a.reader, &HashMap::new())?;
    let t = tr::load(&a.trace, a.format).map_err(trace_err)?;
    if t.reads.is_empty() {
        return Err(super::usage(format!(
            "{}: the trace has no reads to replay ({})",
            a.trace.display(),
            summary(&t)
        )));
    }
    Ok((t, threads))
}

/// How the session runs: repeats, cache state, timing, verification.
fn session_opts(a: &ReplayArgs) -> SessionOpts {
    SessionOpts {
        repeat: a.repeat as usize,
        // The parser admits only the names `Cache` knows.
        cache: a.cache.parse().unwrap_or(Cache::Cold),
        timing: if a.timing == "asap" {
            Timing::Asap
        } else {
            Timing::Recorded
        },
        verify: a.verify,
    }
}

/// `--threads`: as recorded, or a count.
fn threads_of(s: &str) -> Result<Threads> {
    Ok(match s {
        "recorded" | "as-recorded" => Threads::Recorded,
        n => match n.parse::<usize>() {
            Ok(k) if (1..=4096).contains(&k) => Threads::Count(k),
            _ => {
                return Err(super::usage(format!(
                    "--threads {n}: expected 'recorded' or a count from 1 to 4096"
                )))
            }
        },
    })
}

/// Makes the trace's files (under `--dir` or a temporary folder removed
/// when the returned guard drops) or, with `--in-place`, finds them.
fn place_files(
    a: &ReplayArgs,
    t: &tr::Trace,
    stop: &AtomicBool,
) -> Result<(Placed, Option<tempfile::TempDir>)> {
    let mut temp = None;
    let placed: Placed = if a.in_place {
        place::in_place(t).map_err(trace_err)?
    } else {
        let dir = match &a.dir {
            Some(d) => {
                crate::work_dir::ensure("--dir", d)?;
                d.clone()
            }
            None => {
                let d = tempfile::Builder::new()
                    .prefix(".iolab-replay-")
                    .tempdir_in(".")?;
                let p = d.path().to_path_buf();
                // Removed on every way out, a forced one included.
                if let Some(id) = iolab::file::FileIdent::of_path(&p) {
                    crate::cleanup::register_created(&p, id);
                }
                temp = Some(d);
                p
            }
        };
        let made = place::place(t, &dir, stop, &mut |_, _| {}).map_err(trace_err)?;
        if made.created > 0 && a.dir.is_some() {
            eprintln!("made {} file(s) under {}", made.created, dir.display());
        }
        made
    };
    Ok((placed, temp))
}

/// The CSV, JSON lines and the table or JSON on stdout.
fn write_outputs(
    a: &ReplayArgs,
    doc: &Doc,
    results: &[ReaderResult],
    targets: crate::export::flags::Targets,
) -> Result<()> {
    let mut exporters = Exporters::new(targets);
    for r in results {
        exporters.record(&ReplayRow { doc, r })?;
    }
    exporters.finish()?;
    if a.out.json {
        crate::export::stdout(&format!("{}\n", serde_json::to_string_pretty(doc)?))?;
    } else {
        crate::export::stdout(&table(doc))?;
    }
    Ok(())
}
