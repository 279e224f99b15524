//! `iolab record -o trace.csv -- PROGRAM ARGS...`: what a program reads,
//! recorded under strace and written as an iolab CSV trace.

use crate::export::target::{Mode, OutputTarget};
use crate::trace_io::{summary, trace_err};
use anyhow::Result;
use iolab_trace::{self as trace, capture as record};
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

/// Arguments of `iolab record`.
#[derive(clap::Args, Debug)]
pub struct RecordArgs {
    /// The trace to write (iolab CSV).
    #[arg(
        short = 'o',
        long = "output",
        value_name = "FILE",
        default_value = "trace.csv"
    )]
    pub output: PathBuf,
    /// Replace FILE if it exists.
    #[arg(long)]
    pub overwrite: bool,
    /// Convert an existing `strace -f -tt -T -y` log instead of running a program.
    #[arg(long, value_name = "LOG")]
    pub from_strace: Option<PathBuf>,
    /// The program and its arguments (after `--`).
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "PROGRAM"
    )]
    pub program: Vec<OsString>,
}

/// Runs `iolab record`.
pub fn run(a: &RecordArgs, _stop: &AtomicBool) -> Result<i32> {
    if let Some(p) = &a.from_strace {
        crate::limits::check_input_file("--from-strace", p)?;
    }
    let mut out = OutputTarget::check("-o", &a.output, a.overwrite, Mode::Replace, &[])?;
    let (t, status) = match (&a.from_strace, a.program.is_empty()) {
        (Some(_), false) => {
            return Err(super::usage(
                "record: give either --from-strace LOG or a program to run after --, not both",
            ))
        }
        (Some(log), true) => (
            trace::load(log, Some(trace::TraceFormat::Strace)).map_err(trace_err)?,
            None,
        ),
        (None, true) => {
            return Err(super::usage(
                "record: name the program to run after --, e.g. iolab record -o t.csv -- grep -r x src (or --from-strace LOG)",
            ))
        }
        (None, false) => {
            let dir = tempfile::tempdir()?;
            let log = dir.path().join("strace.log");
            let r = record::record(&a.program, &log).map_err(trace_err)?;
            (r.trace, Some(r.status))
        }
    };
    let mut t = t;
    clip_mappings(&mut t);
    out.write_all_atomically(&t.to_csv())?;
    eprintln!("recorded {} into {}", summary(&t), a.output.display());
    if let Some(st) = status {
        match st {
            Some(0) => {}
            Some(c) => eprintln!("note: the program exited with status {c}"),
            None => eprintln!("note: the program was killed by a signal"),
        }
    }
    Ok(0)
}

/// `mmap` lengths are whole pages, so a mapping of a file's end reaches
/// past it; the program can read only the file's bytes. Each mapping of a
/// file that is here is cut to them, so the trace says what was read and
/// `replay --in-place` accepts the very files it was recorded from.
fn clip_mappings(t: &mut trace::Trace) {
    let lens: Vec<Option<u64>> = t
        .files
        .iter()
        .map(|f| {
            std::fs::metadata(f)
                .ok()
                .filter(|m| m.is_file())
                .map(|m| m.len())
        })
        .collect();
    for m in &mut t.mappings {
        if let Some(Some(len)) = lens.get(m.file as usize) {
            m.len = m.len.min(len.saturating_sub(m.offset));
        }
    }
    t.mappings.retain(|m| m.len > 0);
}
