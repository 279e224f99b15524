//! Sweeps: every configuration of one invocation measured in turn, each
//! record handed to the exporters as it completes (`bench`, the survey),
//! and `--resume`, which skips configurations a JSON-lines file already
//! holds.

use crate::export::{self, Exporters};
use crate::session::{prepare_files, Session};
use anyhow::{Context, Result};
use iolab_bench::env::Environment;
use iolab_bench::measure::{self, Measure};
use iolab_bench::record::{unix_ms, BenchRecord, IntervalSample};
use iolab_bench::spec::WorkloadSpec;
use iolab_bench::BenchError;
use iolab_lab::record::Machine;
use iolab_lab::resume;
use std::path::Path;
use std::sync::atomic::Ordering;

/// Runs every configuration `repeat` times, feeding exporters as records
/// complete. Stops early (keeping what was measured) on Ctrl-C, and at a
/// run that fails: what it measured is recorded and the error handed back
/// next to the records, for the caller to report after printing them.
// Long on purpose: the loop over configurations and repeats reads best
// whole, with its three ways out (Ctrl-C, a failed run, a blocked write).
pub fn execute(
    specs: &[WorkloadSpec],
    ses: &Session,
    temp: bool,
    exporters: &mut Exporters,
    mut each: impl FnMut(&BenchRecord),
) -> Result<(Vec<BenchRecord>, Option<BenchError>)> {
    let mut failed = None;
    let mut env = Environment::capture(
        &specs[0]
            .file
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| ".".into()),
    );
    env.waker = ses.waker.clone();
    let total = specs.len() as u64 * ses.repeat as u64;
    let pb = crate::progress::runs(total);
    let mut records = Vec::new();
    for spec in specs {
        if ses.stop.load(Ordering::Relaxed) {
            break;
        }
        let prep = prepare_files(spec, ses, temp)?;
        if ses.stop.load(Ordering::Relaxed) {
            break;
        }
        let size = if ses.size_given {
            spec.file_size
        } else {
            prep.region_len(spec.offset)
        };
        let mut spec = spec.clone();
        spec.file_size = size;
        let started = unix_ms();
        pb.set_message(spec.label());
        let pb2 = pb.clone();
        let live = |s: &IntervalSample| say(&pb2, export::table::interval_line(s));
        let m = Measure {
            on_interval: if ses.live { Some(&live) } else { None },
            engines: crate::gpu_bench::engines(&spec),
            ..Measure::new(ses.stop, ses.repeat)
        };
        let mut shown = Shown {
            pb: &pb,
            label: export::table::in_words(&spec),
            sequential: spec.pattern == iolab_bench::spec::AccessPattern::Seq,
        };
        let measured = measure::runs(&spec, &prep, &m, &mut shown)?;
        let runs = measured.runs;
        failed = measured.error;
        if runs.is_empty() {
            break;
        }
        let rec = BenchRecord::new(spec.clone(), env.clone(), started, runs);
        let written = exporters.record(&rec);
        each(&rec);
        records.push(rec);
        if let Err(e) = written {
            // A write blocked (a FIFO nobody reads) and Ctrl-C ended it:
            // still print what was measured. Any other failure is an error.
            if ses.stop.load(Ordering::SeqCst) {
                break;
            }
            return Err(e);
        }
        if failed.is_some() {
            break;
        }
    }
    pb.finish_and_clear();
    if let Err(e) = exporters.finish() {
        if !ses.stop.load(Ordering::SeqCst) {
            return Err(e);
        }
    }
    Ok((records, failed))
}

/// `iolab bench --resume`: drops the configurations already in the
/// `--jsonl` file (see [`resume::bench_done`]), saying how many remain.
pub fn resume_bench(
    resume: bool,
    jsonl: Option<&Path>,
    dir: &Path,
    all: Vec<iolab_bench::spec::WorkloadSpec>,
) -> Result<Vec<iolab_bench::spec::WorkloadSpec>> {
    if !resume {
        return Ok(all);
    }
    let Some(path) = jsonl else {
        return Err(crate::error::usage(
            "--resume needs --jsonl FILE (the records to resume from)",
        ));
    };
    let text = match iolab::file::read_bounded(path, iolab::file::RECORDS_MAX_BYTES, "record file")
    {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("read {}", path.display())),
    };
    let done: Vec<iolab_bench::record::BenchRecord> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let where_ = all
        .first()
        .and_then(|s| s.file.parent().map(Path::to_path_buf))
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(|| dir.to_path_buf());
    let machine = Machine::of(&where_);
    let n = all.len();
    let left: Vec<_> = all
        .into_iter()
        .filter(|s| !resume::bench_done(&done, s, &machine))
        .collect();
    if left.len() < n {
        eprintln!(
            "resuming: {} configuration(s) already in {}, {} to go",
            n - left.len(),
            path.display(),
            left.len()
        );
    }
    Ok(left)
}

/// Each run's warnings, and one step of the progress bar.
struct Shown<'a> {
    pb: &'a indicatif::ProgressBar,
    label: String,
    sequential: bool,
}

impl measure::Hooks for Shown<'_> {
    fn after(&mut self, m: &iolab_bench::record::RunMetrics) {
        for w in export::table::warnings(m, self.sequential) {
            say(self.pb, format!("warning: {}: {w}", self.label));
        }
        self.pb.inc(1);
    }
}

/// A line on stderr that does not tear the progress bar (which is hidden,
/// and would swallow the line, when stderr is not a terminal).
fn say(pb: &indicatif::ProgressBar, line: String) {
    if pb.is_hidden() {
        eprintln!("{line}");
    } else {
        pb.println(line);
    }
}
