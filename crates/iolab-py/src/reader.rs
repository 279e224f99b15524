//! `iolab.Reader`: one open file, read at offsets from any number of
//! Python threads at once, every read with the GIL released.

use crate::buffer::{prefix, FreshBatch, Writable};
use crate::errors::{non_negative, read_error, value_error};
use crate::requests::{self, Req};
use crate::warn;
use iolab_reader::{Options, ReadReq, Technique};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};
use std::path::PathBuf;
use std::sync::{Arc, RwLock};

/// A file opened for reading at offsets with one technique (`"auto"`
/// decides per request from this machine's profile). Use it from many
/// threads at once: every read releases the GIL, and no read waits for
/// another. A context manager: leaving the `with` block closes the file
/// (reads still in flight on other threads finish first).
///
/// Raises `FileNotFoundError`, `PermissionError`, `IsADirectoryError`
/// (and other `OSError`s) when the file cannot be opened, `ValueError`
/// for an unknown technique.
#[pyclass(module = "iolab", frozen)]
pub struct Reader {
    inner: RwLock<Option<Arc<iolab_reader::Reader>>>,
    path: PathBuf,
    technique: Technique,
    len: u64,
}

impl Reader {
    /// The open reader, or `ValueError` once closed.
    fn get(&self) -> PyResult<Arc<iolab_reader::Reader>> {
        self.inner
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .ok_or_else(|| PyValueError::new_err("I/O operation on closed iolab.Reader"))
    }
}

/// Opens `path` with `technique` (the GIL released: an open may wait on a
/// slow file system).
pub(crate) fn open(
    py: Python<'_>,
    path: PathBuf,
    technique: Technique,
) -> PyResult<iolab_reader::Reader> {
    let opts = Options::new(technique).profile(crate::profile::current());
    let r = py
        .detach(|| iolab_reader::Reader::open(&path, opts))
        .map_err(read_error);
    warn::after(py, r)
}

#[pymethods]
impl Reader {
    #[new]
    #[pyo3(signature = (path, *, technique = "auto"))]
    fn new(py: Python<'_>, path: PathBuf, technique: &str) -> PyResult<Self> {
        let t = crate::technique::parse(technique)?;
        let r = open(py, path.clone(), t)?;
        // Measured at open (one `fstat`, which refuses a directory or a
        // FIFO here rather than at the first read), as Python's `open` does.
        let len = r.len().map_err(read_error)?;
        Ok(Reader {
            len,
            inner: RwLock::new(Some(Arc::new(r))),
            path,
            technique: t,
        })
    }

    /// Length of the file when it was opened, bytes.
    fn __len__(&self) -> PyResult<usize> {
        usize::try_from(self.len).map_err(|_| value_error("file too large for len()"))
    }

    /// The path it was opened with.
    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// The technique, as iolab names it (`pread` is named `stream`).
    #[getter]
    fn technique(&self) -> String {
        self.technique.to_string()
    }

    /// Whether `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.inner
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .is_none()
    }

    /// Closes the file; reads in flight on other threads finish first.
    /// Closing twice is allowed.
    fn close(&self) {
        self.inner.write().unwrap_or_else(|p| p.into_inner()).take();
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.close();
        false
    }

    fn __repr__(&self) -> String {
        format!(
            "<iolab.Reader {:?} {} bytes technique={}{}>",
            self.path.display().to_string(),
            self.len,
            self.technique,
            if self.closed() { " closed" } else { "" }
        )
    }

    /// Reads `n` bytes at `offset` and returns them as `bytes` (fewer
    /// where the file ends first; `b""` at or past the end), as
    /// `os.pread` does.
    fn read_at<'py>(&self, py: Python<'py>, offset: i64, n: i64) -> PyResult<Bound<'py, PyAny>> {
        let offset = non_negative("offset", offset)?;
        let n = non_negative("n", n)?;
        let r = self.get()?;
        // No bigger than what the file holds after `offset`.
        let want = n.min(self.len.saturating_sub(offset)) as usize;
        let mut got = 0;
        let b = PyBytes::new_with(py, want, |buf| {
            got = py.detach(|| r.read_at(offset, buf)).map_err(read_error)?;
            Ok(())
        })?;
        prefix(b, got)
    }

    /// Reads into `buffer` (any writable, C-contiguous buffer: bytearray,
    /// memoryview, NumPy array, a torch CPU tensor's `.numpy()`) from
    /// file offset `offset`, without a copy; returns the bytes read
    /// (fewer than the buffer holds only where the file ends).
    fn read_into(&self, py: Python<'_>, offset: i64, buffer: &Bound<'_, PyAny>) -> PyResult<usize> {
        let offset = non_negative("offset", offset)?;
        let r = self.get()?;
        let mut w = Writable::get(buffer, "buffer")?;
        let dst = w.as_mut_slice();
        py.detach(|| r.read_at(offset, dst)).map_err(read_error)
    }

    /// Reads a batch: `requests` is a sequence of `(offset, length)` pairs
    /// or an integer array of shape (N, 2). All are handed to the reader
    /// at once (io_uring keeps many in flight where the policy chooses
    /// it). Returns a list of `bytes`, one per request in order (shorter
    /// where the file ends); with `out`, fills that one writable buffer
    /// with the results back to back and returns the list of counts.
    #[pyo3(signature = (requests, out = None))]
    fn read_many<'py>(
        &self,
        py: Python<'py>,
        requests: &Bound<'py, PyAny>,
        out: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let reqs = requests::parse(requests)?;
        let r = self.get()?;
        match out {
            Some(out) => many_into(py, &r, &reqs, out),
            None => many_bytes(py, &r, &reqs),
        }
    }
}

/// Runs `reqs` and returns each one's count, or the first error (naming
/// the request).
fn run_batch(r: &iolab_reader::Reader, reqs: &mut [ReadReq<'_>]) -> Result<Vec<usize>, PyErr> {
    r.read_many(reqs);
    reqs.iter_mut()
        .map(|q| match q.result.take() {
            Some(Ok(n)) => Ok(n),
            Some(Err(e)) => Err(read_error(e)),
            None => Err(value_error("a request of the batch was not read")),
        })
        .collect()
}

/// `read_many` into one caller's buffer, results back to back.
fn many_into<'py>(
    py: Python<'py>,
    r: &iolab_reader::Reader,
    reqs: &[Req],
    out: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyList>> {
    let need: usize = reqs.iter().map(|q| q.len).sum();
    let mut w = Writable::get(out, "out")?;
    let mut dst = w.as_mut_slice();
    if dst.len() < need {
        return Err(value_error(format!(
            "out holds {} bytes, the requests need {need}",
            dst.len()
        )));
    }
    let mut batch = Vec::with_capacity(reqs.len());
    for q in reqs {
        let (head, rest) = std::mem::take(&mut dst).split_at_mut(q.len);
        batch.push(ReadReq::new(q.offset, head));
        dst = rest;
    }
    let counts = py.detach(|| run_batch(r, &mut batch))?;
    PyList::new(py, counts)
}

/// `read_many` into new `bytes` objects, one per request.
fn many_bytes<'py>(
    py: Python<'py>,
    r: &iolab_reader::Reader,
    reqs: &[Req],
) -> PyResult<Bound<'py, PyList>> {
    let len = r.len().map_err(read_error)?;
    // No bigger than what the file holds after each offset.
    let lens = reqs
        .iter()
        .map(|q| q.len.min(len.saturating_sub(q.offset) as usize));
    let mut fresh = FreshBatch::zeroed(py, lens)?;
    let slices = fresh.slices();
    let counts = py.detach(move || {
        let mut batch: Vec<ReadReq<'_>> = reqs
            .iter()
            .zip(slices)
            .map(|(q, b)| ReadReq::new(q.offset, b))
            .collect();
        run_batch(r, &mut batch)
    })?;
    fresh.into_list(py, &counts)
}
