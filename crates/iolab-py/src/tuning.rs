//! `iolab.tune` and `iolab.profile`: measure this machine's storage into
//! the profile `auto` decides with, and show the profile in force.

use crate::errors::os_error;
use crate::warn;
use iolab_reader::profile::Profile;
use iolab_reader::tune::Step;
use pyo3::exceptions::{PyKeyboardInterrupt, PyOSError};
use pyo3::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;

/// The profile as a dict (through its JSON form).
fn to_dict<'py>(py: Python<'py>, p: &Profile) -> PyResult<Bound<'py, PyAny>> {
    py.import("json")?.call_method1("loads", (p.to_json(),))
}

/// The profile `technique="auto"` decides with in this process, as a
/// dict: the one `iolab.tune` or `iolab tune` wrote (at
/// `$IOLAB_PROFILE`, else `~/.config/iolab/profile.json`), or the built-in
/// defaults (with an `iolab.ProfileWarning`) when there is none.
#[pyfunction]
pub(crate) fn profile(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    let p = py.detach(crate::profile::current);
    warn::after(py, Ok(()))?;
    to_dict(py, &p)
}

/// One line for `progress`.
fn describe(s: &Step<'_>) -> Option<String> {
    match s {
        Step::Writing { done, total } if done == total => {
            Some(format!("wrote the test file ({} MiB)", total >> 20))
        }
        Step::Writing { .. } => None,
        Step::Measuring { case, index, of } => {
            Some(format!("[{}/{of}] {}", index + 1, case.label()))
        }
        Step::Skipped { case, why } => Some(format!("skipped {}: {why}", case.label())),
    }
}

/// Where the profile goes, checked before anything is measured: our own
/// earlier profile may be replaced, anything else only with `overwrite`.
fn check_out(out: &Option<PathBuf>, overwrite: bool) -> PyResult<PathBuf> {
    let path = out
        .clone()
        .unwrap_or_else(iolab_reader::profile::default_path);
    if let Ok(s) = std::fs::read_to_string(&path) {
        if Profile::from_json(&s).is_err() && !overwrite {
            return Err(os_error(
                Some(libc::EEXIST),
                "exists and is not an iolab profile; pass overwrite=True to replace it".into(),
                &path,
            ));
        }
    } else if path.is_dir() {
        return Err(os_error(
            Some(libc::EISDIR),
            "the profile must be a file".into(),
            &path,
        ));
    }
    Ok(path)
}

/// Writes `text` to `path` through a temporary file beside it and a
/// rename, so a reader never sees half a profile.
fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp-{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// Measures the storage holding `dir` (a test file of 1 GiB, 256 MiB with
/// `quick=True`, made there and removed), writes the profile to `out`
/// (default `$IOLAB_PROFILE`, else `~/.config/iolab/profile.json`; a file
/// that is not an iolab profile is replaced only with `overwrite=True`),
/// makes it the profile of this process, and returns it as a dict. Takes
/// about five minutes (one with `quick=True`); `progress`, if given, is
/// called with one line per step. Ctrl-C stops it (`KeyboardInterrupt`).
#[pyfunction]
#[pyo3(
    signature = (dir = PathBuf::from("."), *, quick = false, out = None, overwrite = false, progress = None),
    text_signature = "(dir='.', *, quick=False, out=None, overwrite=False, progress=None)"
)]
pub(crate) fn tune<'py>(
    py: Python<'py>,
    dir: PathBuf,
    quick: bool,
    out: Option<PathBuf>,
    overwrite: bool,
    progress: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    if !dir.exists() {
        return Err(os_error(
            Some(libc::ENOENT),
            "no such directory".into(),
            &dir,
        ));
    }
    if !dir.is_dir() {
        return Err(os_error(
            Some(libc::ENOTDIR),
            "not a directory".into(),
            &dir,
        ));
    }
    let out = check_out(&out, overwrite)?;
    let progress = progress.map(|p| p.unbind());
    let stop = AtomicBool::new(false);
    let mut raised: Option<PyErr> = None;
    let res = py.detach(|| {
        iolab_reader::tune::run(&dir, quick, &stop, &mut |s| {
            // Between steps: hand Ctrl-C and the progress line to Python.
            Python::attach(|py| {
                let r = py
                    .check_signals()
                    .and_then(|()| match (&progress, describe(&s)) {
                        (Some(f), Some(line)) => f.bind(py).call1((line,)).map(drop),
                        _ => Ok(()),
                    });
                if let Err(e) = r {
                    raised.get_or_insert(e);
                    stop.store(true, Relaxed);
                }
            })
        })
    });
    if let Some(e) = raised {
        return Err(e);
    }
    let p = match res {
        Ok(p) => p,
        Err(iolab::Error::Cancelled) => return Err(PyKeyboardInterrupt::new_err("tune stopped")),
        Err(iolab::Error::Io { what, source }) => {
            return Err(os_error(source.raw_os_error(), what, &dir))
        }
        Err(e) => return Err(PyOSError::new_err(e.to_string())),
    };
    write_atomically(&out, &p.to_json())
        .map_err(|e| os_error(e.raw_os_error(), format!("write the profile: {e}"), &out))?;
    crate::profile::set(Arc::new(p.clone()));
    warn::after(py, Ok(()))?;
    to_dict(py, &p)
}
