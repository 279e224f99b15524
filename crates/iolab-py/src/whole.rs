//! `iolab.read` and `iolab.read_into`: a whole file (or all of it from an
//! offset) in one call, the fastest way the profile knows.

use crate::buffer::{Buffer, Mem, Writable};
use crate::errors::{non_negative, read_error, value_error};
use crate::reader::open;
use crate::warn;
use iolab_reader::{ReadError, Technique};
use pyo3::prelude::*;
use std::path::{Path, PathBuf};

/// Reads all of `path` into `dst` (as long as the file) on the whole-file
/// path, straight into `dst`: O_DIRECT io_uring when the file is not
/// cached, preads on several threads when it is and CPUs are idle.
/// Returns the bytes read.
fn whole_into(path: &Path, dst: &mut [u8]) -> Result<usize, ReadError> {
    let plan = iolab_reader::plan_from(&crate::profile::current(), false);
    iolab_reader::read_into_with(path, &plan, dst)
}

/// Fills `dst` from `offset` of `path` with `technique`: the whole-file
/// path for `auto` from offset 0 with room for the whole file, else one
/// read of a [`iolab_reader::Reader`].
fn fill(
    py: Python<'_>,
    path: PathBuf,
    technique: Technique,
    offset: u64,
    len: u64,
    dst: &mut [u8],
) -> PyResult<usize> {
    if technique == Technique::Auto && offset == 0 && dst.len() as u64 >= len {
        let r = py.detach(|| whole_into(&path, dst)).map_err(read_error);
        return warn::after(py, r);
    }
    let r = open(py, path, technique)?;
    py.detach(|| r.read_at(offset, dst)).map_err(read_error)
}

/// The file's length now (the open's own errors, as `OSError`s).
fn length(py: Python<'_>, path: &Path) -> PyResult<u64> {
    py.detach(|| match iolab::file::length(path) {
        Ok(n) => Ok(n),
        Err(iolab::Error::Io { source, .. }) => Err(ReadError::Open {
            path: path.to_path_buf(),
            source,
        }),
        Err(e) => Err(ReadError::Open {
            path: path.to_path_buf(),
            source: std::io::Error::other(e.to_string()),
        }),
    })
    .map_err(read_error)
}

/// Reads the whole file at `path` and returns a `memoryview` of its bytes,
/// in memory iolab allocated and Python owns from then on (no copy
/// between the read and you). `technique="auto"` reads it the fastest
/// way this machine's profile knows (O_DIRECT io_uring when the file is
/// not cached, parallel copies when it is); any other technique name
/// reads it with one request of an `iolab.Reader`.
///
/// `numpy.frombuffer(view, dtype)` makes an array of it without a copy;
/// `bytes(view)` makes a copy.
#[pyfunction]
#[pyo3(signature = (path, *, technique = "auto"))]
pub(crate) fn read<'py>(
    py: Python<'py>,
    path: PathBuf,
    technique: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let t = crate::technique::parse(technique)?;
    let len = length(py, &path)?;
    let n = usize::try_from(len).map_err(|_| {
        value_error(format!(
            "{}: {len} bytes do not fit in memory here",
            path.display()
        ))
    })?;
    let mut mem = Mem::zeroed(n)?;
    let got = if n == 0 {
        // Still opened: a directory or unreadable file raises as for any size.
        open(py, path, t)?;
        0
    } else {
        fill(py, path, t, 0, len, mem.as_mut_slice())?
    };
    mem.truncate(got);
    Buffer::view(py, mem)
}

/// Reads `path` from file offset `offset` into `buffer` (any writable,
/// C-contiguous buffer: bytearray, memoryview, NumPy array, a torch CPU
/// tensor's `.numpy()`), without a copy, until the buffer is full or the
/// file ends; returns the bytes read.
#[pyfunction]
#[pyo3(signature = (path, buffer, offset = 0, *, technique = "auto"))]
pub(crate) fn read_into(
    py: Python<'_>,
    path: PathBuf,
    buffer: &Bound<'_, PyAny>,
    offset: i64,
    technique: &str,
) -> PyResult<usize> {
    let offset = non_negative("offset", offset)?;
    let t = crate::technique::parse(technique)?;
    let mut w = Writable::get(buffer, "buffer")?;
    let len = length(py, &path)?;
    let dst = w.as_mut_slice();
    let want = (dst.len() as u64).min(len.saturating_sub(offset)) as usize;
    fill(py, path, t, offset, len, &mut dst[..want])
}
