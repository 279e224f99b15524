//! The CUDA driver, loaded at run time: is it there, how many GPUs, and a
//! [`Device`] (a GPU's primary context, the one the CUDA runtime and
//! PyTorch use too, so device pointers pass between them).

use crate::gpu::error::GpuError;
use cudarc::driver::sys::{self, CUresult};
use std::sync::Arc;

/// `Ok` for `CUDA_SUCCESS`, else the call's error with the driver's name
/// for it.
pub(crate) fn check(call: &'static str, r: CUresult) -> Result<(), GpuError> {
    if r == CUresult::CUDA_SUCCESS {
        return Ok(());
    }
    Err(GpuError::Driver {
        call,
        name: format!("{r:?}"),
        code: r as u32,
    })
}

/// Why the driver is not usable, kept for the process.
#[derive(Clone)]
enum Unusable {
    NoDriver(String),
    NoDevice,
}

/// Loads and initialises the driver once per process; the answer is kept.
fn init() -> Result<(), GpuError> {
    static INIT: std::sync::OnceLock<Result<(), Unusable>> = std::sync::OnceLock::new();
    let r = INIT.get_or_init(|| {
        // SAFETY: only tries to dlopen the driver's library names; loading
        // libcuda runs no code of ours.
        if !unsafe { sys::is_culib_present() } {
            return Err(Unusable::NoDriver("libcuda.so could not be loaded".into()));
        }
        // SAFETY: cuInit takes flags (must be 0) and touches no memory of ours.
        match unsafe { sys::cuInit(0) } {
            CUresult::CUDA_SUCCESS => Ok(()),
            CUresult::CUDA_ERROR_NO_DEVICE => Err(Unusable::NoDevice),
            CUresult::CUDA_ERROR_STUB_LIBRARY => Err(Unusable::NoDriver(
                "the libcuda.so found is the CUDA toolkit's stub, not the driver".into(),
            )),
            other => Err(Unusable::NoDriver(format!(
                "cuInit failed: {other:?} ({})",
                other as u32
            ))),
        }
    });
    match r.clone() {
        Ok(()) => Ok(()),
        Err(Unusable::NoDevice) => Err(GpuError::NoGpu {
            why: "cuInit: CUDA_ERROR_NO_DEVICE".into(),
        }),
        Err(Unusable::NoDriver(why)) => Err(GpuError::NoDriver { why }),
    }
}

/// How many GPUs the driver sees; the errors say why there are none.
pub fn device_count() -> Result<usize, GpuError> {
    init()?;
    let mut n: std::ffi::c_int = 0;
    // SAFETY: writes one int to a local.
    check("cuDeviceGetCount", unsafe { sys::cuDeviceGetCount(&mut n) })?;
    Ok(n.max(0) as usize)
}

/// One GPU with its primary context retained (released when the last
/// handle goes).
pub struct Device {
    ordinal: usize,
    dev: sys::CUdevice,
    ctx: sys::CUcontext,
}

// SAFETY: a CUDA context handle may be made current on, and used from, any
// thread (the driver API is thread-safe); the handle itself is immutable.
unsafe impl Send for Device {}
// SAFETY: as above; no method mutates the struct.
unsafe impl Sync for Device {}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Device")
            .field("ordinal", &self.ordinal)
            .finish()
    }
}

impl Device {
    /// GPU number `ordinal`: fails with one line when there is no driver,
    /// no GPU, or no GPU of that number.
    pub fn open(ordinal: usize) -> Result<Arc<Device>, GpuError> {
        let count = device_count()?;
        if count == 0 {
            return Err(GpuError::NoGpu {
                why: "cuDeviceGetCount: 0".into(),
            });
        }
        if ordinal >= count {
            return Err(GpuError::NoSuchDevice {
                asked: ordinal,
                count,
            });
        }
        let mut dev: sys::CUdevice = 0;
        // SAFETY: writes the device handle to a local; ordinal < count.
        check("cuDeviceGet", unsafe {
            sys::cuDeviceGet(&mut dev, ordinal as std::ffi::c_int)
        })?;
        let mut ctx: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: writes the context handle to a local; released in Drop.
        check("cuDevicePrimaryCtxRetain", unsafe {
            sys::cuDevicePrimaryCtxRetain(&mut ctx, dev)
        })?;
        Ok(Arc::new(Device { ordinal, dev, ctx }))
    }

    /// The GPU's number.
    pub fn ordinal(&self) -> usize {
        self.ordinal
    }

    /// The GPU's name (e.g. "NVIDIA H200").
    pub fn name(&self) -> Result<String, GpuError> {
        let mut buf = [0 as std::ffi::c_char; 256];
        // SAFETY: the driver writes at most 256 bytes, NUL-terminated, into buf.
        check("cuDeviceGetName", unsafe {
            sys::cuDeviceGetName(buf.as_mut_ptr(), buf.len() as std::ffi::c_int, self.dev)
        })?;
        // SAFETY: buf is NUL-terminated (the driver's contract, and the last
        // byte is never written past the length given).
        let s = unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) };
        Ok(s.to_string_lossy().into_owned())
    }

    /// Free and total device memory, bytes.
    pub fn memory(&self) -> Result<(u64, u64), GpuError> {
        let _in = self.enter()?;
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: writes two sizes to locals; the context is current.
        check("cuMemGetInfo", unsafe {
            sys::cuMemGetInfo_v2(&mut free, &mut total)
        })?;
        Ok((free as u64, total as u64))
    }

    /// Makes this GPU's context current on the calling thread until the
    /// returned guard goes, which puts back the context that was current
    /// before: every call into the driver is made inside one, so the
    /// caller's thread is left as it was found (PyTorch keeps its current
    /// device there).
    pub(crate) fn enter(&self) -> Result<Entered, GpuError> {
        let mut prev: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: writes the current context (or null) to a local.
        let saved = unsafe { sys::cuCtxGetCurrent(&mut prev) } == CUresult::CUDA_SUCCESS;
        // SAFETY: ctx is a retained primary context, alive while self is.
        check("cuCtxSetCurrent", unsafe { sys::cuCtxSetCurrent(self.ctx) })?;
        Ok(Entered(saved.then_some(prev)))
    }
}

/// Puts the context that was current before [`Device::enter`] back.
pub(crate) struct Entered(Option<sys::CUcontext>);

impl Drop for Entered {
    fn drop(&mut self) {
        if let Some(prev) = self.0 {
            // SAFETY: prev was current on this thread a moment ago (or is
            // null, which makes no context current); the guard is not Send,
            // so this runs on the thread that saved it.
            unsafe {
                sys::cuCtxSetCurrent(prev);
            }
        }
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        // SAFETY: releases the retain made in `open`; every buffer, stream
        // and event of this context holds an Arc to self, so none is left.
        unsafe {
            sys::cuDevicePrimaryCtxRelease_v2(self.dev);
        }
    }
}
