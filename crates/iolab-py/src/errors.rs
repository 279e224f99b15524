//! The reader's errors as Python users expect them: `OSError` with the
//! kernel's errno (so Python picks `FileNotFoundError`, `PermissionError`,
//! `IsADirectoryError`, ...) and the file name, `ValueError` for a request
//! that cannot be made.

use iolab_reader::ReadError;
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::PyErr;
use std::path::Path;

/// `OSError(errno, message, path)`: Python's `OSError` constructor turns
/// it into the subclass the errno names (ENOENT: `FileNotFoundError`).
pub(crate) fn os_error(errno: Option<i32>, message: String, path: &Path) -> PyErr {
    let file = path.to_string_lossy().into_owned();
    match errno {
        Some(n) => PyOSError::new_err((n, message, file)),
        None => PyOSError::new_err(format!("{message}: {file}")),
    }
}

/// The kernel's words for an I/O error, without std's " (os error N)".
fn strerror(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.rfind(" (os error ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// Maps one [`ReadError`] to the Python exception for it.
pub(crate) fn read_error(e: ReadError) -> PyErr {
    match &e {
        ReadError::Open { path, source } => os_error(source.raw_os_error(), strerror(source), path),
        ReadError::Io {
            path,
            offset,
            len,
            source,
        } => os_error(
            source.raw_os_error(),
            format!(
                "read at offset {offset} ({len} bytes): {}",
                strerror(source)
            ),
            path,
        ),
        ReadError::NotReadable { path, what } => {
            // A directory is EISDIR (IsADirectoryError), as open() says;
            // a FIFO, socket or character device cannot be read at
            // offsets, as pread() says with ESPIPE.
            let errno = if *what == "a directory" {
                libc::EISDIR
            } else {
                libc::ESPIPE
            };
            os_error(
                Some(errno),
                format!("{what}; iolab reads regular files and block devices"),
                path,
            )
        }
        ReadError::Unsupported {
            path,
            technique,
            why,
        } => os_error(
            Some(libc::EOPNOTSUPP),
            format!("{technique} is not available here: {why}"),
            path,
        ),
        ReadError::UnexpectedEof { .. } | ReadError::TooLarge { .. } => {
            PyValueError::new_err(e.to_string())
        }
    }
}

/// `ValueError` naming what was wrong.
pub(crate) fn value_error(msg: impl Into<String>) -> PyErr {
    PyValueError::new_err(msg.into())
}

/// A Python int that must be a byte offset or count: `ValueError` naming
/// `what` when negative.
pub(crate) fn non_negative(what: &str, v: i64) -> Result<u64, PyErr> {
    u64::try_from(v).map_err(|_| value_error(format!("{what} must be 0 or more, got {v}")))
}
