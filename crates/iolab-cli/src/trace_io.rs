//! What the trace commands share: their errors as one line, the
//! `--format` flag of a trace, and a one-line summary of one.

use iolab_trace::{Trace, TraceError, TraceFormat};

/// A trace error as the binary reports it (usage errors exit 2). A trace
/// that cannot be read because of what it is (missing, not a regular file,
/// too large, not this user's to read) is bad input too.
pub fn trace_err(e: TraceError) -> anyhow::Error {
    use std::io::ErrorKind::*;
    let unreadable = matches!(&e, TraceError::Io { source, .. }
        if matches!(source.kind(), NotFound | PermissionDenied | InvalidInput | InvalidData));
    if e.is_usage() || unreadable {
        crate::error::usage(e.to_string())
    } else {
        anyhow::Error::new(e)
    }
}

/// `--format` values.
pub fn parse_format(s: &str) -> Result<TraceFormat, String> {
    s.parse()
}

/// One line summing up a trace.
pub fn summary(t: &Trace) -> String {
    let mut s = format!(
        "{} reads of {} files ({}), {} mappings",
        t.reads.len(),
        t.files.len(),
        iolab_bench::prepare::human(t.total_bytes()),
        t.mappings.len()
    );
    if !t.skipped.is_empty() {
        let left: Vec<String> = t.skipped.iter().map(|(k, v)| format!("{k} {v}")).collect();
        s.push_str(&format!(
            "; reads left out (not of regular files), by kind: {}",
            left.join(", ")
        ));
    }
    s
}
