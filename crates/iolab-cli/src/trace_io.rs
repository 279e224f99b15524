//! What the trace commands share: their errors as one line, the
//! `--format` flag of a trace, and a one-line summary of one.

use iolab_trace::{Trace, TraceError, TraceFormat};

/// A trace error as the binary reports it (usage errors exit 2).
pub fn trace_err(e: TraceError) -> anyhow::Error {
    if e.is_usage() {
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
        s.push_str(&format!("; left out: {}", left.join(", ")));
    }
    s
}
