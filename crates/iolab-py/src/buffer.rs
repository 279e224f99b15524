//! Memory shared with Python through the buffer protocol, both ways:
//! [`Buffer`] is memory this package allocated and Python borrows (what
//! `iolab.read` returns a view of), [`Writable`] is a caller's buffer this
//! package writes into (a `bytearray`, a NumPy array, ...), and
//! [`FreshBatch`] is new `bytes` objects a batch of reads fills. Every
//! `unsafe` of the package is here, but for the DLPack structs
//! (`dlpack.rs`).

use iolab::kernel::alloc::AlignedAlloc;
use iolab::kernel::hugebuf::AnonMap;
use pyo3::buffer::PyUntypedBuffer;
use pyo3::exceptions::{PyBufferError, PyMemoryError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};
use pyo3::{ffi, IntoPyObjectExt};
use std::ffi::c_int;
use std::ptr::NonNull;

/// From this size on, memory comes in transparent huge pages: 2 MiB
/// aligned (as O_DIRECT wants), and one page fault per 2 MiB.
const HUGE_FROM: usize = 2 << 20;

/// Where a [`Mem`]'s bytes live. Held only to be freed on drop.
enum Storage {
    Heap(#[allow(dead_code)] AlignedAlloc),
    Huge(#[allow(dead_code)] AnonMap),
}

/// Zeroed memory of `len` bytes, aligned to at least 4096.
pub(crate) struct Mem {
    _storage: Storage,
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: `Mem` owns plain memory (like a Vec<u8>); the pointer is into
// its own storage, which lives as long as it does.
unsafe impl Send for Mem {}
// SAFETY: Rust hands out `&mut [u8]` only through `&mut Mem`; once a
// `Buffer` shares it, only Python writes it, through the buffer protocol,
// exactly as a `bytearray`'s bytes are written.
unsafe impl Sync for Mem {}

impl Mem {
    /// `len` zeroed bytes (`MemoryError` when they cannot be had).
    pub(crate) fn zeroed(len: usize) -> PyResult<Mem> {
        let no_mem = || PyMemoryError::new_err(format!("cannot allocate {len} bytes"));
        let (storage, ptr) = if len < HUGE_FROM {
            let mut a = AlignedAlloc::new(len, 4096).ok_or_else(no_mem)?;
            let p = a.as_mut_ptr();
            (Storage::Heap(a), p)
        } else {
            // Not faulted in here: the read faults each page as it fills
            // it, on as many threads as read.
            let mut h = AnonMap::thp_lazy(len, HUGE_FROM).map_err(|_| no_mem())?;
            let p = h.as_mut_ptr();
            (Storage::Huge(h), p)
        };
        Ok(Mem {
            _storage: storage,
            ptr: NonNull::new(ptr).ok_or_else(no_mem)?,
            len,
        })
    }

    /// The bytes, to fill before they are shared.
    pub(crate) fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: ptr is valid for len initialised (zeroed) bytes owned by
        // self, and &mut self gives exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// The address of the first byte.
    pub(crate) fn addr(&self) -> u64 {
        self.ptr.as_ptr() as u64
    }

    /// Keeps the first `len` bytes (what the file turned out to hold).
    pub(crate) fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }
}

/// Bytes read by iolab, in memory iolab allocated (2 MiB aligned
/// transparent huge pages for large ones), lent to Python through the
/// buffer protocol without a copy. `iolab.read` returns a `memoryview` of
/// one; `numpy.frombuffer(view, dtype)` and `torch.frombuffer` wrap it
/// without a copy too. The memory is freed when the last view of it is
/// gone.
#[pyclass(module = "iolab", frozen)]
pub struct Buffer {
    mem: Mem,
}

impl Buffer {
    /// A `Buffer` owning `mem`.
    pub(crate) fn new(mem: Mem) -> Buffer {
        Buffer { mem }
    }

    /// A `memoryview` of `mem` (the view keeps the `Buffer` alive).
    pub(crate) fn view(py: Python<'_>, mem: Mem) -> PyResult<Bound<'_, PyAny>> {
        let b = Bound::new(py, Buffer { mem })?;
        // SAFETY: b is a live object supporting the buffer protocol; the
        // call returns a new reference or NULL with an exception set.
        unsafe { Bound::from_owned_ptr_or_err(py, ffi::PyMemoryView_FromObject(b.as_ptr())) }
    }
}

#[pymethods]
impl Buffer {
    /// Bytes held.
    fn __len__(&self) -> usize {
        self.mem.len
    }

    /// Lends the bytes, writable, one-dimensional, format "B".
    ///
    /// # Safety
    ///
    /// Called by Python with a `Py_buffer` to fill.
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut ffi::Py_buffer,
        flags: c_int,
    ) -> PyResult<()> {
        let (ptr, len) = (slf.get().mem.ptr.as_ptr(), slf.get().mem.len);
        // SAFETY: `view` is the Py_buffer Python asked us to fill; ptr..len
        // is memory owned by the Buffer, which PyBuffer_FillInfo keeps
        // alive by taking a reference to it as the view's `obj` (released
        // by PyBuffer_Release). The memory is never freed or moved while
        // the Buffer lives.
        let r = unsafe {
            ffi::PyBuffer_FillInfo(
                view,
                slf.as_ptr(),
                ptr.cast(),
                len as ffi::Py_ssize_t,
                0,
                flags,
            )
        };
        if r < 0 {
            return Err(PyErr::fetch(slf.py()));
        }
        Ok(())
    }

    /// Nothing to do: the view's reference to the Buffer is what kept the
    /// memory alive, and Python drops it.
    ///
    /// # Safety
    ///
    /// Called by Python with a `Py_buffer` this class filled.
    unsafe fn __releasebuffer__(&self, _view: *mut ffi::Py_buffer) {}

    fn __repr__(&self) -> String {
        format!("<iolab.Buffer of {} bytes>", self.mem.len)
    }
}

/// A caller's writable, C-contiguous buffer of any item type (bytes
/// land as the file holds them), held for as long as this lives.
pub(crate) struct Writable {
    buf: PyUntypedBuffer,
}

impl Writable {
    /// Borrows `obj`'s buffer for writing; `TypeError` when it has none or
    /// it is read-only, `BufferError` when it is not contiguous.
    pub(crate) fn get(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Writable> {
        let buf = PyUntypedBuffer::get(obj).map_err(|_| {
            PyTypeError::new_err(format!(
                "{what} must be a writable buffer (bytearray, memoryview, NumPy array), not {}",
                type_name(obj)
            ))
        })?;
        if buf.readonly() {
            return Err(PyTypeError::new_err(format!(
                "{what} must be a writable buffer, and this {} is read-only",
                type_name(obj)
            )));
        }
        if !buf.is_c_contiguous() {
            return Err(PyBufferError::new_err(format!(
                "{what} must be C-contiguous (numpy.ascontiguousarray makes it so)"
            )));
        }
        Ok(Writable { buf })
    }

    /// The buffer's bytes.
    pub(crate) fn as_mut_slice(&mut self) -> &mut [u8] {
        let len = self.buf.len_bytes();
        if len == 0 {
            return &mut [];
        }
        // SAFETY: the exporter guarantees buf_ptr..len is valid, writable
        // (checked above) and contiguous memory for as long as the buffer
        // is held, which is as long as self, and &mut self borrows it
        // exclusively on this side. Other Python threads could write it at
        // the same time, as with any buffer-protocol consumer; that is a
        // race in the caller's program, and bytes are bytes.
        unsafe { std::slice::from_raw_parts_mut(self.buf.buf_ptr().cast::<u8>(), len) }
    }
}

/// `obj`'s type name, for messages.
pub(crate) fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map_or_else(|_| "object".into(), |n| n.to_string())
}

/// New `bytes` objects for a batch of reads: made (zeroed) with the GIL,
/// filled through [`slices`](Self::slices) (with the GIL released too),
/// handed to Python by [`into_list`](Self::into_list). No one else has
/// them until then, so writing them is no one else's business.
pub(crate) struct FreshBatch<'py> {
    objs: Vec<Bound<'py, PyBytes>>,
    spans: Vec<(*mut u8, usize)>,
}

impl<'py> FreshBatch<'py> {
    /// One zeroed `bytes` per length.
    pub(crate) fn zeroed(py: Python<'py>, lens: impl Iterator<Item = usize>) -> PyResult<Self> {
        let mut objs = Vec::new();
        let mut spans = Vec::new();
        for len in lens {
            let obj = PyBytes::new_with(py, len, |_| Ok(()))?;
            // SAFETY: obj is a live bytes object; PyBytes_AsString returns
            // its storage (len bytes and a terminating NUL).
            let ptr = unsafe { ffi::PyBytes_AsString(obj.as_ptr()) }.cast::<u8>();
            spans.push((ptr, len));
            objs.push(obj);
        }
        Ok(FreshBatch { objs, spans })
    }

    /// Each object's bytes, to fill; they can be sent to the thread (or
    /// the released-GIL section) that reads into them.
    pub(crate) fn slices(&mut self) -> Vec<&mut [u8]> {
        self.spans
            .iter()
            .map(|&(ptr, len)| -> &mut [u8] {
                if len == 0 {
                    return &mut [];
                }
                // SAFETY: ptr..len is the zeroed storage of a bytes object
                // held in self.objs, distinct from every other span, and
                // not yet shared with Python; the slices borrow self
                // mutably, so they end before the objects are handed out.
                unsafe { std::slice::from_raw_parts_mut(ptr, len) }
            })
            .collect()
    }

    /// The objects as a list, each cut to its count of bytes read.
    pub(crate) fn into_list(
        self,
        py: Python<'py>,
        counts: &[usize],
    ) -> PyResult<Bound<'py, PyList>> {
        let items = self
            .objs
            .into_iter()
            .zip(counts)
            .map(|(o, &n)| prefix(o, n))
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, items)
    }
}

/// `obj`, or a copy of its first `n` bytes when it holds more (a read cut
/// short by a file that shrank since it was opened).
pub(crate) fn prefix(obj: Bound<'_, PyBytes>, n: usize) -> PyResult<Bound<'_, PyAny>> {
    if n >= obj.as_bytes().len() {
        return Ok(obj.into_any());
    }
    let py = obj.py();
    PyBytes::new(py, &obj.as_bytes()[..n]).into_bound_py_any(py)
}
