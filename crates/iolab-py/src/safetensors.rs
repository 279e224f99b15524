//! The native half of `iolab.safetensors`: a checkpoint's headers checked,
//! then all its tensor data read the fastest way (the GIL released) into
//! ONE allocation — host memory lent to Python as an `iolab.Buffer`, or
//! GPU memory held by a [`DeviceMemory`] — and each tensor a [`Tensor`]:
//! a view of that allocation which any array library takes without a copy
//! through DLPack (`torch.from_dlpack`, `cupy.from_dlpack`,
//! `numpy.from_dlpack`). The Python module builds NumPy arrays, torch
//! tensors or CuPy arrays of them.

use crate::buffer::{Buffer, Mem};
use crate::dlpack::{self, code, DataType, Export};
use crate::errors::{read_error, value_error};
use crate::warn;
use iolab_reader::gpu::{DeviceBuffer, GpuError, GpuOptions, Stats};
use iolab_reader::safetensors::{Checkpoint, Dtype, LoadError, TensorEntry};
use pyo3::exceptions::{PyBufferError, PyMemoryError, PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use pyo3::IntoPyObjectExt;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// GPU memory holding a loaded checkpoint's tensors: one allocation, freed
/// when the last tensor made from it is gone.
#[pyclass(module = "iolab.safetensors", frozen)]
pub struct DeviceMemory {
    buf: DeviceBuffer,
}

#[pymethods]
impl DeviceMemory {
    /// Bytes held.
    fn __len__(&self) -> usize {
        self.buf.len() as usize
    }

    /// The GPU's number.
    #[getter]
    fn device(&self) -> usize {
        self.buf.device().ordinal()
    }

    fn __repr__(&self) -> String {
        format!(
            "<iolab.safetensors.DeviceMemory of {} bytes on cuda:{}>",
            self.buf.len(),
            self.buf.device().ordinal()
        )
    }
}

/// Where a tensor's bytes are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    Cpu,
    Cuda(usize),
}

impl Place {
    fn dl_device(self) -> (i32, i32) {
        match self {
            Place::Cpu => (dlpack::CPU, 0),
            Place::Cuda(n) => (dlpack::CUDA, n as i32),
        }
    }

    fn name(self) -> String {
        match self {
            Place::Cpu => "cpu".into(),
            Place::Cuda(n) => format!("cuda:{n}"),
        }
    }
}

/// One tensor of a loaded checkpoint: its bytes stay where the load put
/// them (host or GPU memory), and any array library borrows them without
/// a copy through DLPack (`__dlpack__`). The memory lives as long as any
/// tensor or array made from it.
#[pyclass(module = "iolab.safetensors", frozen)]
pub struct Tensor {
    name: String,
    owner: Py<PyAny>,
    offset: u64,
    addr: u64,
    nbytes: u64,
    dtype: Dtype,
    shape: Vec<u64>,
    place: Place,
}

impl Tensor {
    /// The DLPack type of `dtype` and the shape it is exported with
    /// (F4 goes as PyTorch takes it: pairs of values, one per byte).
    fn dl_type(&self) -> Result<(DataType, Vec<u64>), String> {
        use Dtype::*;
        let t = |code, bits, lanes| DataType { code, bits, lanes };
        let bits = self.dtype.bits() as u8;
        let dt = match self.dtype {
            BOOL => t(code::BOOL, 8, 1),
            U8 | U16 | U32 | U64 => t(code::UINT, bits, 1),
            I8 | I16 | I32 | I64 => t(code::INT, bits, 1),
            F16 | F32 | F64 => t(code::FLOAT, bits, 1),
            BF16 => t(code::BFLOAT, 16, 1),
            C64 => t(code::COMPLEX, 64, 1),
            F8_E4M3 => t(code::FLOAT8_E4M3FN, 8, 1),
            F8_E4M3FNUZ => t(code::FLOAT8_E4M3FNUZ, 8, 1),
            F8_E5M2 => t(code::FLOAT8_E5M2, 8, 1),
            F8_E5M2FNUZ => t(code::FLOAT8_E5M2FNUZ, 8, 1),
            F8_E8M0 => t(code::FLOAT8_E8M0FNU, 8, 1),
            F6_E2M3 => t(code::FLOAT6_E2M3FN, 6, 1),
            F6_E3M2 => t(code::FLOAT6_E3M2FN, 6, 1),
            F4 => return Ok((t(code::FLOAT4_E2M1FN, 4, 2), self.byte_shape()?)),
        };
        Ok((dt, self.shape.clone()))
    }

    /// The shape in bytes along the last dimension, for a sub-byte type
    /// whose rows fill whole bytes.
    fn byte_shape(&self) -> Result<Vec<u64>, String> {
        let bits = self.dtype.bits();
        let mut shape = self.shape.clone();
        match shape.last_mut() {
            Some(last) if (*last * bits).is_multiple_of(8) => {
                *last = *last * bits / 8;
                Ok(shape)
            }
            _ => Err(format!(
                "tensor {:?} of {} (packed, {bits} bits a value) has shape {:?}, whose last dimension does not fill whole bytes, so it has no view in bytes",
                self.name, self.dtype, self.shape
            )),
        }
    }

    /// The same bytes as unsigned integers of the element's width, or as
    /// bytes for a packed sub-byte type.
    fn raw_view(&self) -> Result<(Dtype, Vec<u64>), String> {
        Ok(match self.dtype.bits() {
            8 => (Dtype::U8, self.shape.clone()),
            16 => (Dtype::U16, self.shape.clone()),
            32 => (Dtype::U32, self.shape.clone()),
            64 => (Dtype::U64, self.shape.clone()),
            _ => (Dtype::U8, self.byte_shape()?),
        })
    }

    fn with(&self, py: Python<'_>, dtype: Dtype, shape: Vec<u64>) -> Tensor {
        Tensor {
            name: self.name.clone(),
            owner: self.owner.clone_ref(py),
            offset: self.offset,
            addr: self.addr,
            nbytes: self.nbytes,
            dtype,
            shape,
            place: self.place,
        }
    }
}

#[pymethods]
impl Tensor {
    /// The tensor's name in the checkpoint.
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// The element type as safetensors names it (`"BF16"`, `"F32"`, ...).
    #[getter]
    fn dtype(&self) -> &'static str {
        self.dtype.name()
    }

    /// Dimensions, in elements.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.shape)
    }

    /// Bytes.
    #[getter]
    fn nbytes(&self) -> u64 {
        self.nbytes
    }

    /// Offset of its first byte in the checkpoint's one allocation.
    #[getter]
    fn offset(&self) -> u64 {
        self.offset
    }

    /// `"cpu"` or `"cuda:N"`.
    #[getter]
    fn device(&self) -> String {
        self.place.name()
    }

    /// The same bytes as unsigned integers of the element's width (`U16`
    /// for BF16, `U8` for the 8-bit floats, `U32`/`U64` for 4- and 8-byte
    /// types); packed sub-byte types (F4, F6) as bytes, their last
    /// dimension counted in bytes. For libraries that lack the type.
    fn raw(&self, py: Python<'_>) -> PyResult<Tensor> {
        let (dtype, shape) = self.raw_view().map_err(PyValueError::new_err)?;
        Ok(self.with(py, dtype, shape))
    }

    /// `(device type, device id)` as DLPack numbers them: `(1, 0)` for
    /// host memory, `(2, N)` for CUDA GPU N.
    fn __dlpack_device__(&self) -> (i32, i32) {
        self.place.dl_device()
    }

    /// A DLPack capsule of the tensor (versioned when `max_version` asks
    /// for DLPack 1.x). The bytes were all in place before this tensor
    /// existed, so there is nothing for any `stream` to wait for; a copy
    /// (`copy=True`) or another device is refused with `BufferError`.
    #[pyo3(signature = (stream = None, *, max_version = None, dl_device = None, copy = None))]
    fn __dlpack__<'py>(
        &self,
        py: Python<'py>,
        stream: Option<Bound<'py, PyAny>>,
        max_version: Option<(u32, u32)>,
        dl_device: Option<(i32, i32)>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let _ = stream;
        let here = self.place.dl_device();
        if let Some(d) = dl_device.filter(|&d| d != here) {
            return Err(PyBufferError::new_err(format!(
                "tensor {:?} is on {}, DLPack device {here:?}; it cannot be exported to device {d:?} without a copy",
                self.name,
                self.place.name()
            )));
        }
        if copy == Some(true) {
            return Err(PyBufferError::new_err(format!(
                "tensor {:?} is exported as a view of the loaded checkpoint, not copied; copy it after importing",
                self.name
            )));
        }
        let version = max_version.filter(|v| v.0 >= 1).map(|v| {
            (
                1,
                if v.0 > 1 {
                    dlpack::VERSION.1
                } else {
                    v.1.min(dlpack::VERSION.1)
                },
            )
        });
        let (dtype, shape) = self.dl_type().map_err(PyBufferError::new_err)?;
        let shape = shape
            .iter()
            .map(|&d| i64::try_from(d))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| {
                PyBufferError::new_err(format!("tensor {:?}: a dimension passes 2^63", self.name))
            })?;
        let e = Export {
            owner: self.owner.clone_ref(py),
            data: self.addr,
            device: here,
            dtype,
            shape,
            read_only: false,
        };
        dlpack::capsule(py, e, version)
    }

    fn __repr__(&self) -> String {
        let dims: Vec<String> = self.shape.iter().map(u64::to_string).collect();
        let comma = if dims.len() == 1 { "," } else { "" };
        format!(
            "<iolab.safetensors.Tensor {:?} {} ({}{comma}) on {}>",
            self.name,
            self.dtype,
            dims.join(", "),
            self.place.name()
        )
    }
}

/// A loaded checkpoint as Python gets it: the memory, `(name, Tensor)`
/// pairs in the file's order, the `__metadata__`, how it was read.
type Loaded<'py> = (
    Py<PyAny>,
    Bound<'py, PyList>,
    BTreeMap<String, String>,
    Bound<'py, PyDict>,
);

/// Reads the checkpoint at `path` (a `.safetensors` file, a sharded
/// checkpoint's index JSON, or a directory holding either) into host
/// memory, or into GPU `device`'s memory, the GIL released. Every header
/// is checked before any memory is allocated; on any error nothing stays
/// allocated.
#[pyfunction]
#[pyo3(signature = (path, device = None))]
pub(crate) fn _load_safetensors(
    py: Python<'_>,
    path: PathBuf,
    device: Option<usize>,
) -> PyResult<Loaded<'_>> {
    let opts = GpuOptions::from_profile(&crate::profile::current());
    match device {
        None => load_host(py, path, &opts),
        Some(n) => load_device(py, path, n, &opts),
    }
}

fn load_host<'py>(py: Python<'py>, path: PathBuf, opts: &GpuOptions) -> PyResult<Loaded<'py>> {
    let r = py.detach(|| -> PyResult<(Mem, Checkpoint, Stats)> {
        let ck = Checkpoint::open(&path).map_err(load_error)?;
        ck.check_fits_host(&path).map_err(load_error)?;
        let mut mem = Mem::zeroed(ck.size as usize)?;
        let stats = ck.read_into(mem.as_mut_slice(), opts).map_err(load_error)?;
        Ok((mem, ck, stats))
    });
    let (mem, ck, stats) = warn::after(py, r)?;
    let base = mem.addr();
    let owner = Bound::new(py, Buffer::new(mem))?.into_any().unbind();
    let list = tensors(py, &owner, base, Place::Cpu, ck.tensors)?;
    Ok((owner, list, ck.metadata, stats_dict(py, &stats)?))
}

fn load_device<'py>(
    py: Python<'py>,
    path: PathBuf,
    device: usize,
    opts: &GpuOptions,
) -> PyResult<Loaded<'py>> {
    let r = py.detach(|| {
        iolab_reader::safetensors::load_to_device(&path, device, opts).map_err(load_error)
    });
    let ck = warn::after(py, r)?;
    let base = ck.buffer.device_ptr();
    let owner = DeviceMemory { buf: ck.buffer }.into_py_any(py)?;
    let list = tensors(py, &owner, base, Place::Cuda(device), ck.tensors)?;
    Ok((owner, list, ck.metadata, stats_dict(py, &ck.stats)?))
}

/// Frees the page-locked host memory that GPU loads keep for the next
/// one (`iolab.safetensors.free_staging`); returns the bytes freed.
#[pyfunction]
pub(crate) fn _free_staging() -> usize {
    iolab_reader::gpu::free_staging()
}

/// How the data was read, for `Tensors.stats`: the technique, bytes,
/// seconds (the wall time, and read/copy/wait summed over the threads),
/// GB/s, threads, piece size, depth, O_DIRECT, pinned staging.
fn stats_dict<'py>(py: Python<'py>, st: &Stats) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let secs = |ns: u64| ns as f64 / 1e9;
    d.set_item("technique", st.technique.name())?;
    d.set_item("bytes", st.bytes)?;
    d.set_item("seconds", secs(st.elapsed_ns))?;
    d.set_item("gb_per_s", st.gb_per_s())?;
    d.set_item("setup_s", secs(st.setup_ns))?;
    d.set_item("read_s", secs(st.read_ns))?;
    d.set_item("copy_s", secs(st.copy_ns))?;
    d.set_item("wait_s", secs(st.wait_ns))?;
    d.set_item("threads", st.threads)?;
    d.set_item("chunk", st.chunk)?;
    d.set_item("depth", st.depth)?;
    d.set_item("direct", st.direct)?;
    d.set_item("pinned", st.pinned)?;
    Ok(d)
}

/// `(name, Tensor)` pairs viewing `owner`, whose first byte is at `base`.
fn tensors<'py>(
    py: Python<'py>,
    owner: &Py<PyAny>,
    base: u64,
    place: Place,
    entries: Vec<TensorEntry>,
) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for e in entries {
        let t = Tensor {
            name: e.name.clone(),
            owner: owner.clone_ref(py),
            offset: e.offset,
            addr: base + e.offset,
            nbytes: e.len,
            dtype: e.dtype,
            shape: e.shape,
            place,
        };
        list.append((e.name, t))?;
    }
    Ok(list)
}

/// The Python exception for a failed load: a malformed checkpoint is a
/// `ValueError`, a file that cannot be read an `OSError` (with its errno),
/// memory that cannot be had a `MemoryError`, a GPU that cannot be used a
/// `RuntimeError` (a GPU number out of range: `ValueError`).
fn load_error(e: LoadError) -> PyErr {
    match e {
        LoadError::Format(f) => value_error(f.to_string()),
        LoadError::Read(r) => read_error(r),
        LoadError::Gpu(g) => gpu_error(g),
        e @ LoadError::TooLarge { .. } => PyMemoryError::new_err(e.to_string()),
    }
}

fn gpu_error(e: GpuError) -> PyErr {
    let msg = e.to_string();
    match e {
        GpuError::Read(r) => read_error(r),
        GpuError::NoSuchDevice { .. } | GpuError::BadRange { .. } => PyValueError::new_err(msg),
        GpuError::OutOfMemory { .. } => PyMemoryError::new_err(msg),
        GpuError::ShortFile { .. } => PyOSError::new_err(msg),
        GpuError::NoDriver { .. }
        | GpuError::NoGpu { .. }
        | GpuError::Driver { .. }
        | GpuError::CuFile { .. }
        | GpuError::Unavailable { .. }
        | GpuError::OutOfBounds { .. } => PyRuntimeError::new_err(msg),
    }
}
