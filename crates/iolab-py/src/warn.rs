//! The reader's warnings (no profile, a profile measured on another
//! device) as Python warnings of category `iolab.ProfileWarning`. The
//! reader may warn on any thread, with or without the GIL, so its sink
//! only queues the line; every call of the package says what is queued,
//! with the GIL, before it returns.

use pyo3::prelude::*;
use std::ffi::CString;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Mutex;

pyo3::create_exception!(
    iolab,
    ProfileWarning,
    pyo3::exceptions::PyUserWarning,
    "Something about the profile iolab decides with: none was found (the built-in defaults are used; run iolab.tune), or it was measured on another device."
);

static PENDING: Mutex<Vec<String>> = Mutex::new(Vec::new());
static ANY: AtomicBool = AtomicBool::new(false);

fn sink(msg: &str) {
    let msg = msg.strip_prefix("warning: ").unwrap_or(msg);
    PENDING
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(msg.to_string());
    ANY.store(true, Relaxed);
}

/// Sends the reader's warnings to the queue this module empties.
pub(crate) fn install() {
    iolab_reader::warn::set_sink(sink);
}

/// Says every queued warning through Python's `warnings` (an error when
/// the filters turn warnings into errors).
pub(crate) fn flush(py: Python<'_>) -> PyResult<()> {
    if !ANY.swap(false, Relaxed) {
        return Ok(());
    }
    let msgs = std::mem::take(&mut *PENDING.lock().unwrap_or_else(|p| p.into_inner()));
    let ty = py.get_type::<ProfileWarning>();
    for m in msgs {
        let c = CString::new(m.replace('\0', " ")).unwrap_or_default();
        PyErr::warn(py, &ty, &c, 1)?;
    }
    Ok(())
}

/// `r`, after saying the queued warnings (a warning turned error is
/// raised only when `r` itself succeeded).
pub(crate) fn after<T>(py: Python<'_>, r: PyResult<T>) -> PyResult<T> {
    let w = flush(py);
    let v = r?;
    w?;
    Ok(v)
}
