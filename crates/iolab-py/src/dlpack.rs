//! DLPack, the C structs through which array libraries (PyTorch, CuPy,
//! NumPy, JAX) borrow each other's memory without a copy: a tensor is
//! handed out as a `PyCapsule` holding a `DLManagedTensor` (the legacy
//! form, capsule name `dltensor`) or a `DLManagedTensorVersioned` (DLPack
//! 1.x, `dltensor_versioned`). The consumer renames the capsule when it
//! takes the tensor and calls its deleter when it is done with it; a
//! capsule never taken calls the deleter itself when Python frees it.
//!
//! Each capsule holds a strong reference to the Python object that owns
//! the memory (an `iolab.Buffer`, or the GPU memory of a checkpoint), so
//! the memory lives until the last tensor made from it is freed, whatever
//! the consumer's thread. Every `unsafe` of this module is the layout and
//! lifetime contract of those structs.

use pyo3::ffi;
use pyo3::prelude::*;
use std::ffi::{c_void, CStr};

/// `DLDeviceType::kDLCPU`.
pub(crate) const CPU: i32 = 1;
/// `DLDeviceType::kDLCUDA`.
pub(crate) const CUDA: i32 = 2;

/// `DLDataTypeCode` values (dlpack.h, version 1.1).
#[allow(missing_docs)]
pub(crate) mod code {
    pub const INT: u8 = 0;
    pub const UINT: u8 = 1;
    pub const FLOAT: u8 = 2;
    pub const BFLOAT: u8 = 4;
    pub const COMPLEX: u8 = 5;
    pub const BOOL: u8 = 6;
    pub const FLOAT8_E4M3FN: u8 = 10;
    pub const FLOAT8_E4M3FNUZ: u8 = 11;
    pub const FLOAT8_E5M2: u8 = 12;
    pub const FLOAT8_E5M2FNUZ: u8 = 13;
    pub const FLOAT8_E8M0FNU: u8 = 14;
    pub const FLOAT6_E2M3FN: u8 = 15;
    pub const FLOAT6_E3M2FN: u8 = 16;
    pub const FLOAT4_E2M1FN: u8 = 17;
}

/// The newest DLPack version these structs follow.
pub(crate) const VERSION: (u32, u32) = (1, 1);

/// `DLPACK_FLAG_BITMASK_READ_ONLY`.
const READ_ONLY: u64 = 1;

const LEGACY_NAME: &CStr = c"dltensor";
const VERSIONED_NAME: &CStr = c"dltensor_versioned";

/// `DLDataType`: a type code, bits per lane, lanes per element.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DataType {
    pub(crate) code: u8,
    pub(crate) bits: u8,
    pub(crate) lanes: u16,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct Device {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
struct DLTensor {
    data: *mut c_void,
    device: Device,
    ndim: i32,
    dtype: DataType,
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
}

#[repr(C)]
struct DLManagedTensor {
    dl_tensor: DLTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

#[repr(C)]
struct DLManagedTensorVersioned {
    version: [u32; 2],
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    flags: u64,
    dl_tensor: DLTensor,
}

/// What one capsule describes.
pub(crate) struct Export {
    /// The Python object that owns the memory (kept alive by the capsule).
    pub(crate) owner: Py<PyAny>,
    /// Address of the first byte (host or device).
    pub(crate) data: u64,
    /// `(device type, device id)`.
    pub(crate) device: (i32, i32),
    /// Element type.
    pub(crate) dtype: DataType,
    /// Dimensions, in elements of `dtype`.
    pub(crate) shape: Vec<i64>,
    /// Whether the consumer may not write.
    pub(crate) read_only: bool,
}

/// A strong reference to the owner, released with the GIL taken on
/// whatever thread the consumer frees its tensor.
struct OwnerRef(*mut ffi::PyObject);

impl Drop for OwnerRef {
    fn drop(&mut self) {
        // SAFETY: self.0 is a strong reference this struct holds (taken in
        // `capsule`). Python may already be finalised when a consumer frees
        // a tensor late; then the reference is left, as NumPy's deleter
        // does. Otherwise the GIL is taken (re-entrantly, if this thread
        // holds it) for the decref, and given back.
        unsafe {
            if ffi::Py_IsInitialized() == 0 {
                return;
            }
            let g = ffi::PyGILState_Ensure();
            ffi::Py_DecRef(self.0);
            ffi::PyGILState_Release(g);
        }
    }
}

/// What the structs point into, kept as long as they are.
struct Keep {
    _shape: Box<[i64]>,
    _strides: Box<[i64]>,
    _owner: OwnerRef,
}

/// A legacy capsule's allocation: the struct the consumer sees first.
#[repr(C)]
struct Legacy {
    managed: DLManagedTensor,
    keep: Keep,
}

/// A versioned capsule's allocation.
#[repr(C)]
struct Versioned {
    managed: DLManagedTensorVersioned,
    keep: Keep,
}

unsafe extern "C" fn delete_legacy(p: *mut DLManagedTensor) {
    if !p.is_null() {
        // SAFETY: p is the first field of a Box<Legacy> leaked by
        // `capsule` (repr(C): same address), and the DLPack contract has
        // the deleter called once.
        drop(unsafe { Box::from_raw(p.cast::<Legacy>()) });
    }
}

unsafe extern "C" fn delete_versioned(p: *mut DLManagedTensorVersioned) {
    if !p.is_null() {
        // SAFETY: as in delete_legacy, for a Box<Versioned>.
        drop(unsafe { Box::from_raw(p.cast::<Versioned>()) });
    }
}

/// Frees a capsule's tensor when no consumer took it (a consumer renames
/// the capsule, and then owns the tensor).
unsafe extern "C" fn capsule_destructor(capsule: *mut ffi::PyObject) {
    // SAFETY: Python calls this with the capsule being freed. IsValid
    // checks the name without raising; a capsule still bearing its
    // original name was never taken, so its pointer is the struct made in
    // `capsule`, freed here once.
    unsafe {
        if ffi::PyCapsule_IsValid(capsule, LEGACY_NAME.as_ptr()) == 1 {
            let p = ffi::PyCapsule_GetPointer(capsule, LEGACY_NAME.as_ptr());
            delete_legacy(p.cast());
        } else if ffi::PyCapsule_IsValid(capsule, VERSIONED_NAME.as_ptr()) == 1 {
            let p = ffi::PyCapsule_GetPointer(capsule, VERSIONED_NAME.as_ptr());
            delete_versioned(p.cast());
        }
    }
}

/// Row-major strides, in elements, of `shape`.
fn strides(shape: &[i64]) -> Box<[i64]> {
    let mut s = vec![1i64; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1].max(1);
    }
    s.into_boxed_slice()
}

/// The managed struct (legacy, or versioned at `version`) holding
/// `tensor` and what it points into, moved to the heap and leaked: its
/// address and the capsule name it goes under.
fn leak(
    tensor: DLTensor,
    keep: Keep,
    version: Option<(u32, u32)>,
    read_only: bool,
) -> (*mut c_void, &'static CStr) {
    // The boxed slices in `keep` do not move when it does: the tensor's
    // pointers into them stay valid for as long as the allocation.
    match version {
        None => {
            let b = Box::into_raw(Box::new(Legacy {
                managed: DLManagedTensor {
                    dl_tensor: tensor,
                    manager_ctx: std::ptr::null_mut(),
                    deleter: Some(delete_legacy),
                },
                keep,
            }));
            // SAFETY: b is the live allocation just leaked.
            unsafe { (*b).managed.manager_ctx = b.cast() };
            (b.cast(), LEGACY_NAME)
        }
        Some((major, minor)) => {
            let b = Box::into_raw(Box::new(Versioned {
                managed: DLManagedTensorVersioned {
                    version: [major, minor],
                    manager_ctx: std::ptr::null_mut(),
                    deleter: Some(delete_versioned),
                    flags: if read_only { READ_ONLY } else { 0 },
                    dl_tensor: tensor,
                },
                keep,
            }));
            // SAFETY: b is the live allocation just leaked.
            unsafe { (*b).managed.manager_ctx = b.cast() };
            (b.cast(), VERSIONED_NAME)
        }
    }
}

/// A DLPack capsule for `e`: versioned at `version` (a `(1, minor)` the
/// consumer asked for), legacy when `None`.
pub(crate) fn capsule<'py>(
    py: Python<'py>,
    e: Export,
    version: Option<(u32, u32)>,
) -> PyResult<Bound<'py, PyAny>> {
    let mut shape = e.shape.into_boxed_slice();
    let mut strides = strides(&shape);
    let tensor = DLTensor {
        data: e.data as usize as *mut c_void,
        device: Device {
            device_type: e.device.0,
            device_id: e.device.1,
        },
        ndim: shape.len() as i32,
        dtype: e.dtype,
        shape: shape.as_mut_ptr(),
        strides: strides.as_mut_ptr(),
        byte_offset: 0,
    };
    let keep = Keep {
        _shape: shape,
        _strides: strides,
        _owner: OwnerRef(e.owner.into_ptr()),
    };
    let (ptr, name) = leak(tensor, keep, version, e.read_only);
    // SAFETY: ptr is the struct made above and name a static C string; on
    // success the capsule owns ptr (freed by capsule_destructor or by the
    // consumer through the deleter), on failure nothing does yet, so it is
    // freed here.
    unsafe {
        let cap = ffi::PyCapsule_New(ptr, name.as_ptr(), Some(capsule_destructor));
        if cap.is_null() {
            let err = PyErr::fetch(py);
            if version.is_none() {
                delete_legacy(ptr.cast());
            } else {
                delete_versioned(ptr.cast());
            }
            return Err(err);
        }
        Ok(Bound::from_owned_ptr(py, cap))
    }
}
