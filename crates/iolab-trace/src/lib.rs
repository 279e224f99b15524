//! Traces of what a real program read, and their replay.
//!
//! A [`Trace`] is the file reads (and file mappings) one program made, in
//! order, with thread and time. It comes from one of four text formats
//! ([`TraceFormat`]): iolab's own CSV, fio's `read_iolog` (v2, v3), the
//! default text output of `blkparse`, or an `strace -f -tt -T -y` log, and
//! is detected from the first line. From there: [`stats`] describes it,
//! [`place`] makes the files it names under a directory, [`replay`] issues
//! its reads through any [`replay::ReplayReader`] and [`session`] compares
//! readers.
//!
//! ```
//! use iolab_trace::{parse, TraceFormat};
//! let t = parse("file,offset,len\n/data/a,0,4096\n/data/a,4096,4096\n", "t.csv", None).unwrap();
//! assert_eq!(t.format, TraceFormat::Csv);
//! assert_eq!(t.reads.len(), 2);
//! assert_eq!(t.file_size(0), 8192);
//! ```
#![forbid(unsafe_code)]

pub mod blkparse;
pub mod capture;
pub mod csv;
pub mod iolog;
mod model;
pub mod place;
pub mod readers;
pub mod replay;
pub mod session;
pub mod stats;
pub mod strace;

pub(crate) use model::num;
pub use model::{Trace, TraceBuilder, TraceError, TraceFormat, TraceMapping, TraceOp, TraceRead};

use std::path::Path;

/// Which format `first_line` is in, if it says.
pub fn detect(first_line: &str) -> Option<TraceFormat> {
    let l = first_line.trim_start_matches('\u{feff}').trim();
    if l.starts_with("fio version 2 iolog") || l.starts_with("fio version 3 iolog") {
        return Some(TraceFormat::Iolog);
    }
    if csv::is_header(l) {
        return Some(TraceFormat::Csv);
    }
    if blkparse::looks_like(l) {
        return Some(TraceFormat::Blkparse);
    }
    if strace::looks_like(l) {
        return Some(TraceFormat::Strace);
    }
    None
}

/// Parses trace text. `name` is used in error messages; `format` forces the
/// format (otherwise it is detected from the first non-empty line).
pub fn parse(text: &str, name: &str, format: Option<TraceFormat>) -> Result<Trace, TraceError> {
    let format = match format {
        Some(f) => f,
        None => {
            let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            detect(first).ok_or_else(|| TraceError::Unknown {
                name: name.to_string(),
            })?
        }
    };
    match format {
        TraceFormat::Csv => csv::parse(text, name),
        TraceFormat::Iolog => iolog::parse(text, name),
        TraceFormat::Blkparse => blkparse::parse(text, name),
        TraceFormat::Strace => strace::parse(text, name),
    }
}

/// The most bytes of a trace read: a larger one does not fit a replay.
pub const TRACE_MAX_BYTES: u64 = 1 << 30;

/// Reads and parses the trace at `path` (a regular file of at most
/// [`TRACE_MAX_BYTES`]).
pub fn load(path: &Path, format: Option<TraceFormat>) -> Result<Trace, TraceError> {
    let bytes = iolab::file::read_bounded(path, TRACE_MAX_BYTES, "trace").map_err(|source| {
        TraceError::Io {
            path: path.to_path_buf(),
            source,
        }
    })?;
    let text = String::from_utf8_lossy(&bytes);
    parse(&text, &path.display().to_string(), format)
}
