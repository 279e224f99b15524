//! Where the library's warnings go (a profile missing or measured on
//! another device): one line on stderr, unless the program has its own
//! channel for warnings and installs a [`set_sink`] (the Python package
//! hands them to Python's `warnings`).

use std::sync::OnceLock;

static SINK: OnceLock<fn(&str)> = OnceLock::new();

/// Sends every later warning to `sink` instead of stderr. The first sink
/// set stays; returns whether this one was set.
pub fn set_sink(sink: fn(&str)) -> bool {
    SINK.set(sink).is_ok()
}

/// Says `msg` (one line, starting "warning: ") where warnings go.
pub(crate) fn emit(msg: &str) {
    match SINK.get() {
        Some(sink) => sink(msg),
        None => eprintln!("{msg}"),
    }
}
