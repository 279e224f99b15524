//! Each completed read of a benchmark engine copied into GPU memory
//! ([`DeviceCopy`], the copier of [`CopyEach`]): the engine's own buffer
//! slots are page-locked for the GPU (`cuMemHostRegister`) so each copy
//! is a DMA at the link's speed, each slot has its own region of one
//! device allocation, and the copies of one reaped batch are queued on a
//! stream and waited for together before the completions are handed back.

use super::driver::{check, Device};
use super::lane::Stream;
use super::memory::DeviceBuffer;
use crate::gpu::each_read::{CopyEach, OpCopy};
use crate::gpu::error::GpuError;
use cudarc::driver::sys::{self, CUresult};
use iolab::buf::{BufId, BufPool};
use iolab::engine::Engine;
use std::sync::Arc;

/// Copies reads out of an engine's buffer slots into GPU memory.
pub struct DeviceCopy {
    // Dropped in this order: the stream (synchronised) before the
    // registration, and both before the device allocation.
    stream: Stream,
    registered: Option<Registered>,
    dst: DeviceBuffer,
    slot_len: usize,
    count: usize,
}

// SAFETY: the stream handle may be used from any thread once the context
// is bound (every call binds it first); the copier is used by one thread
// at a time (`&mut self`), and the registered range is only unregistered.
unsafe impl Send for DeviceCopy {}

impl DeviceCopy {
    /// Whether the engine's buffers are page-locked (`false`: the driver
    /// refused, and each copy is staged through the driver's own pinned
    /// memory first, slower).
    pub fn pinned(&self) -> bool {
        self.registered.is_some()
    }

    /// The GPU copies go to.
    pub fn device(&self) -> usize {
        self.dst.device().ordinal()
    }
}

impl OpCopy for DeviceCopy {
    fn copy(&mut self, pool: &BufPool, reads: &[(BufId, usize)]) -> Result<(), GpuError> {
        let device = self.dst.device().clone();
        let _in = device.enter()?;
        for &(id, n) in reads {
            let i = id.0 as usize;
            if i >= self.count || n > self.slot_len || n > pool.slot_len() {
                return Err(GpuError::OutOfBounds {
                    at: (i * self.slot_len) as u64,
                    len: n as u64,
                    cap: self.dst.len(),
                });
            }
            let src = pool.slot(id)[..n].as_ptr();
            let at = self.dst.device_ptr() + (i * self.slot_len) as u64;
            // SAFETY: the destination is slot i's region, inside the live
            // allocation (checked above); the source is n readable bytes of
            // the pool, borrowed for this whole call, and the stream is
            // synchronised below before the call returns, so every copy has
            // ended before the engine can write into the slot again.
            let r = unsafe { sys::cuMemcpyHtoDAsync_v2(at, src.cast(), n, self.stream.s) };
            if let Err(e) = check("cuMemcpyHtoDAsync", r) {
                // The copies queued so far still read the pool: wait.
                let _ = self.stream.sync();
                return Err(e);
            }
        }
        self.stream.sync()
    }

    fn name(&self) -> String {
        format!("GPU {}", self.device())
    }
}

/// Host memory page-locked with `cuMemHostRegister`, unregistered on drop.
struct Registered {
    ptr: *mut u8,
    device: Arc<Device>,
}

impl Drop for Registered {
    fn drop(&mut self) {
        let _in = self.device.enter();
        // SAFETY: ptr is the start of a range this struct registered, still
        // mapped (its owner outlives this registration, see `copy_each_read`)
        // and unregistered once; no copy is in flight (the stream was
        // synchronised when its copier dropped it, before this).
        unsafe {
            sys::cuMemHostUnregister(self.ptr.cast());
        }
    }
}

/// `inner` with every completed read copied into GPU `device`'s memory
/// before its completion is handed back: one device allocation of a region
/// per buffer slot, the engine's slots page-locked when the driver allows
/// ([`DeviceCopy::pinned`] says). Fails with one line when there is no
/// driver, no such GPU or no room on it.
pub fn copy_each_read(
    inner: Box<dyn Engine>,
    device: usize,
) -> Result<CopyEach<DeviceCopy>, GpuError> {
    let dev = Device::open(device)?;
    let pool = inner.pool();
    let (count, slot_len) = (pool.count(), pool.slot_len());
    let dst = DeviceBuffer::alloc(&dev, (count * slot_len) as u64)?;
    let stream = Stream::new(&dev)?;
    let first = pool.slot(BufId(0)).as_ptr();
    let registered = register(&dev, first.cast_mut(), count * slot_len);
    let copier = DeviceCopy {
        stream,
        registered,
        dst,
        slot_len,
        count,
    };
    // `CopyEach` drops the copier (and so the registration) before the
    // engine that owns the registered memory.
    Ok(CopyEach::new(inner, copier))
}

/// Page-locks `len` bytes at `ptr` for `device`, or `None` if the driver
/// refuses.
fn register(device: &Arc<Device>, ptr: *mut u8, len: usize) -> Option<Registered> {
    let _in = device.enter().ok()?;
    // SAFETY: ptr..ptr+len are the engine's buffer slots, one live mapping
    // that stays mapped until after the registration is dropped (the
    // copier, which holds it, is dropped before the engine: `CopyEach`).
    // Registering neither reads nor writes the bytes.
    let r = unsafe { sys::cuMemHostRegister_v2(ptr.cast(), len, sys::CU_MEMHOSTREGISTER_PORTABLE) };
    (r == CUresult::CUDA_SUCCESS).then(|| Registered {
        ptr,
        device: device.clone(),
    })
}
