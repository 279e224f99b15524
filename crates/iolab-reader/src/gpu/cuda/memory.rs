//! Device memory: one allocation, owned, freed when the owner goes.

use super::driver::{check, Device};
use crate::gpu::error::GpuError;
use cudarc::driver::sys::{self, CUresult};
use std::sync::Arc;

/// One allocation of device memory, freed on drop. It keeps its GPU's
/// context alive, so it may outlive everything else (a Python tensor
/// holding it, say).
pub struct DeviceBuffer {
    device: Arc<Device>,
    ptr: sys::CUdeviceptr,
    len: u64,
}

impl std::fmt::Debug for DeviceBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceBuffer")
            .field("device", &self.device.ordinal())
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .field("len", &self.len)
            .finish()
    }
}

impl DeviceBuffer {
    /// `len` bytes on `device` (contents undefined until written). A
    /// zero-length buffer allocates nothing and has pointer 0.
    pub fn alloc(device: &Arc<Device>, len: u64) -> Result<DeviceBuffer, GpuError> {
        let mut buf = DeviceBuffer {
            device: device.clone(),
            ptr: 0,
            len: 0,
        };
        if len == 0 {
            return Ok(buf);
        }
        let size = usize::try_from(len).map_err(|_| oom(device, len))?;
        let _in = device.enter()?;
        let mut ptr: sys::CUdeviceptr = 0;
        // SAFETY: writes the new allocation's address to a local; the
        // context is current on this thread.
        match unsafe { sys::cuMemAlloc_v2(&mut ptr, size) } {
            CUresult::CUDA_SUCCESS => {
                (buf.ptr, buf.len) = (ptr, len);
                Ok(buf)
            }
            CUresult::CUDA_ERROR_OUT_OF_MEMORY => Err(oom(device, len)),
            r => check("cuMemAlloc", r).map(|_| buf),
        }
    }

    /// The device address of the first byte (0 when empty).
    pub fn device_ptr(&self) -> u64 {
        self.ptr
    }

    /// Bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether it holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The GPU it is on.
    pub fn device(&self) -> &Arc<Device> {
        &self.device
    }

    /// Copies `out.len()` bytes from `offset` back to host memory
    /// (synchronously): to check what a transfer wrote.
    pub fn copy_to_host(&self, offset: u64, out: &mut [u8]) -> Result<(), GpuError> {
        let end = offset.checked_add(out.len() as u64);
        if end.is_none_or(|e| e > self.len) {
            return Err(GpuError::OutOfBounds {
                at: offset,
                len: out.len() as u64,
                cap: self.len,
            });
        }
        if out.is_empty() {
            return Ok(());
        }
        let _in = self.device.enter()?;
        // SAFETY: offset..offset+out.len() lies inside this live allocation
        // (checked above); `out` is writable host memory of that length,
        // and the synchronous copy has ended when the call returns.
        check("cuMemcpyDtoH", unsafe {
            sys::cuMemcpyDtoH_v2(out.as_mut_ptr().cast(), self.ptr + offset, out.len())
        })
    }

    /// Copies `src` to `offset` (synchronously: the copy has ended when
    /// the call returns). From page-locked memory ([`PinnedBuf`](super::PinnedBuf))
    /// it runs at the link's speed, from any other memory the driver
    /// stages it first: what `iolab tune` compares.
    pub fn copy_from_host(&self, offset: u64, src: &[u8]) -> Result<(), GpuError> {
        let end = offset.checked_add(src.len() as u64);
        if end.is_none_or(|e| e > self.len) {
            return Err(GpuError::OutOfBounds {
                at: offset,
                len: src.len() as u64,
                cap: self.len,
            });
        }
        if src.is_empty() {
            return Ok(());
        }
        let _in = self.device.enter()?;
        // SAFETY: offset..offset+src.len() lies inside this live allocation
        // (checked above); `src` is readable for its length, and the
        // synchronous copy has ended when the call returns.
        check("cuMemcpyHtoD", unsafe {
            sys::cuMemcpyHtoD_v2(self.ptr + offset, src.as_ptr().cast(), src.len())
        })
    }

    /// All of it, copied back to a new vector.
    pub fn to_vec(&self) -> Result<Vec<u8>, GpuError> {
        let n = usize::try_from(self.len).map_err(|_| GpuError::OutOfBounds {
            at: 0,
            len: self.len,
            cap: usize::MAX as u64,
        })?;
        let mut v = vec![0u8; n];
        self.copy_to_host(0, &mut v)?;
        Ok(v)
    }
}

/// The out-of-memory error for `len` bytes, with what the GPU has.
fn oom(device: &Device, len: u64) -> GpuError {
    let (free, total) = device.memory().unwrap_or((0, 0));
    GpuError::OutOfMemory {
        device: device.ordinal(),
        wanted: len,
        free,
        total,
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        if self.ptr == 0 {
            return;
        }
        // Every lane that copied into it synchronised its stream before it
        // went; cuMemFree waits for any other work on the memory.
        let _in = self.device.enter();
        // SAFETY: ptr came from cuMemAlloc in this context and is freed once.
        unsafe {
            sys::cuMemFree_v2(self.ptr);
        }
    }
}
