//! Device memory as a [`Target`]: each lane has huge-page staging memory
//! page-locked with `cuMemHostRegister` (an O_DIRECT read into a 2 MiB
//! page is one segment for the disk, and a page-locked source is what lets
//! the copy engine DMA it while the CPU reads on), its own stream, and one
//! event per staging buffer recorded after the buffer's copy: the buffer
//! is handed out again only once its event has completed. Page-locked
//! staging outlives its lane in a process-wide pool ([`STAGING_KEEP`]
//! bytes at most), so a later transfer skips the locking.

use super::driver::{check, Device};
use super::memory::DeviceBuffer;
use crate::gpu::error::GpuError;
use crate::gpu::pool::Pool;
use crate::gpu::target::{CopyNow, Lane, Target};
use cudarc::driver::sys::{self, CUresult};
use iolab::kernel::hugebuf::HugeBuf;
use std::sync::Arc;

/// A [`DeviceBuffer`] as the pipeline's destination.
pub struct DeviceTarget<'a> {
    buf: &'a DeviceBuffer,
}

impl<'a> DeviceTarget<'a> {
    /// `buf` as the destination.
    pub fn new(buf: &'a DeviceBuffer) -> Self {
        DeviceTarget { buf }
    }
}

impl<'a> Target for DeviceTarget<'a> {
    type Lane<'s>
        = CudaLane<'a>
    where
        Self: 's;

    fn len(&self) -> u64 {
        self.buf.len()
    }

    fn lane(&self, slots: usize, slot_len: usize, pinned: bool) -> Result<CudaLane<'a>, GpuError> {
        let slots = slots.max(1);
        let device = self.buf.device();
        let _in = device.enter()?;
        let mem = Lent::new(device, slots * slot_len, pinned)?;
        let stream = Stream::new(device)?;
        let events = (0..slots)
            .map(|_| Event::new(device))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(CudaLane {
            q: Queue {
                device: device.clone(),
                buf: self.buf,
                stream,
                events,
                pending: vec![false; slots],
            },
            mem,
            slot_len,
        })
    }
}

/// Host memory in huge pages, page-locked for the GPU's DMA when the
/// driver allows it (unregistered before it is unmapped): a lane's staging
/// memory, and on its own a source for measuring copy rates.
pub struct PinnedBuf(Staging);

impl PinnedBuf {
    /// `len` bytes (rounded up to 2 MiB), zeroed, page-locked for `device`
    /// unless the driver refuses ([`is_pinned`](Self::is_pinned) says).
    pub fn new(device: &Arc<Device>, len: usize) -> Result<PinnedBuf, GpuError> {
        Staging::new(device, len, true).map(PinnedBuf)
    }

    /// The bytes.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        self.0.map.as_mut_slice()
    }

    /// Bytes (a multiple of 2 MiB).
    pub fn len(&self) -> usize {
        self.0.map.len()
    }

    /// Whether it holds no bytes (never: kept for `len`'s sake).
    pub fn is_empty(&self) -> bool {
        self.0.map.is_empty()
    }

    /// Whether the driver page-locked it.
    pub fn is_pinned(&self) -> bool {
        self.0.registered
    }
}

/// The most page-locked staging memory kept between transfers: room for
/// the built-in settings' 12 threads × 3 buffers × 2 MiB (72 MiB) with a
/// cold file's ring beside them, or for 16 threads of 4 MiB pieces.
pub const STAGING_KEEP: usize = 192 << 20;

/// Page-locked staging memory of finished lanes, by GPU number and size.
static KEPT: Pool<(usize, usize), Staging> = Pool::new(STAGING_KEEP);

/// Frees the page-locked staging memory kept between transfers (see
/// [`STAGING_KEEP`]); returns the bytes freed. For a process that has
/// finished loading and wants its host memory unlocked.
pub fn free_staging() -> usize {
    let kept = KEPT.drain();
    kept.iter().map(|s| s.map.len()).sum()
}

/// Bytes of page-locked staging memory kept now for later transfers.
pub fn staging_kept() -> usize {
    KEPT.bytes()
}

/// A lane's staging memory: taken from the pool when page-locked memory
/// of its size on its GPU is kept there, and given back to it on drop
/// (after the lane's stream, dropped first, was synchronised); kept by
/// the length asked for.
struct Lent(Option<Staging>, usize);

impl Lent {
    fn new(device: &Arc<Device>, len: usize, pin: bool) -> Result<Lent, GpuError> {
        if pin {
            if let Some(s) = KEPT.take(&(device.ordinal(), len)) {
                return Ok(Lent(Some(s), len));
            }
        }
        Staging::new(device, len, pin).map(|s| Lent(Some(s), len))
    }

    fn get(&self) -> &Staging {
        self.0
            .as_ref()
            .unwrap_or_else(|| unreachable!("emptied only by drop"))
    }

    fn get_mut(&mut self) -> &mut Staging {
        self.0
            .as_mut()
            .unwrap_or_else(|| unreachable!("emptied only by drop"))
    }
}

impl Drop for Lent {
    fn drop(&mut self) {
        if let Some(s) = self.0.take() {
            if s.registered {
                // Handed back (and dropped here) when the pool is full.
                drop(KEPT.put((s.device.ordinal(), self.1), s.map.len(), s));
            }
        }
    }
}

/// Host memory in huge pages, page-locked for DMA when the driver allows
/// it (unregistered before it is unmapped).
struct Staging {
    map: HugeBuf,
    registered: bool,
    device: Arc<Device>,
}

impl Staging {
    fn new(device: &Arc<Device>, len: usize, pin: bool) -> Result<Staging, GpuError> {
        let mut map = HugeBuf::new(len)
            .map_err(|e| GpuError::layer(std::path::Path::new("staging buffers"), e))?;
        let mut registered = false;
        if pin {
            let _in = device.enter()?;
            let ptr = map.as_mut_slice().as_mut_ptr();
            // SAFETY: ptr..ptr+map.len() is our own live mapping, which
            // stays mapped until Drop unregisters it first.
            let r = unsafe {
                sys::cuMemHostRegister_v2(ptr.cast(), map.len(), sys::CU_MEMHOSTREGISTER_PORTABLE)
            };
            // Refused (no page-locking allowed here): pageable copies,
            // slower, which the lane reports.
            registered = r == CUresult::CUDA_SUCCESS;
        }
        Ok(Staging {
            map,
            registered,
            device: device.clone(),
        })
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if self.registered {
            let _in = self.device.enter();
            let ptr = self.map.as_mut_slice().as_mut_ptr();
            // SAFETY: the range registered in `new`; the lane's stream was
            // synchronised (its queue is dropped first), so no copy reads it.
            unsafe {
                sys::cuMemHostUnregister(ptr.cast());
            }
        }
    }
}

/// A stream, synchronised before it is destroyed.
pub(super) struct Stream {
    pub(super) s: sys::CUstream,
    device: Arc<Device>,
}

impl Stream {
    /// A non-blocking stream on `device`.
    pub(super) fn new(device: &Arc<Device>) -> Result<Stream, GpuError> {
        let _in = device.enter()?;
        let mut s: sys::CUstream = std::ptr::null_mut();
        // SAFETY: writes the handle to a local; the context is current.
        check("cuStreamCreate", unsafe {
            sys::cuStreamCreate(&mut s, sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32)
        })?;
        Ok(Stream {
            s,
            device: device.clone(),
        })
    }

    /// Waits for everything queued on the stream.
    pub(super) fn sync(&self) -> Result<(), GpuError> {
        let _in = self.device.enter()?;
        // SAFETY: s is a live stream of this context.
        check("cuStreamSynchronize", unsafe {
            sys::cuStreamSynchronize(self.s)
        })
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        let _ = self.sync();
        let _in = self.device.enter();
        // SAFETY: s is live and destroyed once; its work has ended (above).
        unsafe {
            sys::cuStreamDestroy_v2(self.s);
        }
    }
}

/// An event marking the end of one staging buffer's copy.
struct Event(sys::CUevent, Arc<Device>);

impl Event {
    fn new(device: &Arc<Device>) -> Result<Event, GpuError> {
        let _in = device.enter()?;
        let mut e: sys::CUevent = std::ptr::null_mut();
        // Blocking sync: a thread waiting for a copy sleeps, leaving its
        // CPU to the readers; no timing: cheaper to record.
        let flags = sys::CUevent_flags::CU_EVENT_BLOCKING_SYNC as u32
            | sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32;
        // SAFETY: writes the handle to a local; the context is current.
        check("cuEventCreate", unsafe {
            sys::cuEventCreate(&mut e, flags)
        })?;
        Ok(Event(e, device.clone()))
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        let _in = self.1.enter();
        // SAFETY: a live event, destroyed once.
        unsafe {
            sys::cuEventDestroy_v2(self.0);
        }
    }
}

/// One lane's copies: its stream, an event per staging buffer and which
/// buffers have a copy that may not have ended. It borrows the device
/// allocation, so the allocation outlives every copy into it.
pub struct Queue<'a> {
    device: Arc<Device>,
    buf: &'a DeviceBuffer,
    stream: Stream,
    events: Vec<Event>,
    pending: Vec<bool>,
}

// SAFETY: the stream and event handles may be used from any thread once
// the context is bound (every method binds first); the queue is used by
// one thread at a time (`&mut self`).
unsafe impl Send for Queue<'_> {}

impl Queue<'_> {
    /// Refuses a copy that would pass the end of the device allocation.
    fn bounds(&self, at: u64, n: usize) -> Result<(), GpuError> {
        match at.checked_add(n as u64) {
            Some(end) if end <= self.buf.len() => Ok(()),
            _ => Err(GpuError::OutOfBounds {
                at,
                len: n as u64,
                cap: self.buf.len(),
            }),
        }
    }

    /// Waits until the copy last started from buffer `i` has ended.
    fn wait(&mut self, i: usize) -> Result<(), GpuError> {
        if !self.pending[i] {
            return Ok(());
        }
        let _in = self.device.enter()?;
        let e = self.events[i].0;
        // SAFETY: e is a live event of this context.
        match unsafe { sys::cuEventQuery(e) } {
            CUresult::CUDA_SUCCESS => {}
            CUresult::CUDA_ERROR_NOT_READY => {
                // SAFETY: as above.
                check("cuEventSynchronize", unsafe { sys::cuEventSynchronize(e) })?
            }
            r => check("cuEventQuery", r)?,
        }
        self.pending[i] = false;
        Ok(())
    }

    /// Queues the copy of `n` bytes at `src` (staging buffer `i`) to `at`
    /// and records buffer `i`'s event after it.
    ///
    /// The caller (`CudaLane`) guarantees that `src..src+n` lies in its
    /// staging memory, which outlives the stream and is written only
    /// through `slot(i)` (which waits for this event) or `split` (which
    /// synchronises the stream).
    fn start(&mut self, i: usize, src: *const u8, n: usize, at: u64) -> Result<(), GpuError> {
        self.bounds(at, n)?;
        let _in = self.device.enter()?;
        // SAFETY: the destination lies inside the live allocation (checked
        // above); the source stays valid and unwritten until the event
        // recorded next completes (the caller's guarantee, see above).
        check("cuMemcpyHtoDAsync", unsafe {
            sys::cuMemcpyHtoDAsync_v2(self.buf.device_ptr() + at, src.cast(), n, self.stream.s)
        })?;
        self.pending[i] = true;
        // SAFETY: a live event and stream of this context.
        let r = check("cuEventRecord", unsafe {
            sys::cuEventRecord(self.events[i].0, self.stream.s)
        });
        if r.is_err() {
            // Without its event the copy could not be waited for: wait for
            // the whole stream now, so the buffer is never handed out early.
            let _ = self.stream.sync();
        }
        r
    }

    /// Waits for every copy queued.
    fn finish(&mut self) -> Result<(), GpuError> {
        self.stream.sync()?;
        self.pending.iter_mut().for_each(|p| *p = false);
        Ok(())
    }
}

impl CopyNow for Queue<'_> {
    fn copy_now(&mut self, src: &[u8], at: u64) -> Result<(), GpuError> {
        self.bounds(at, src.len())?;
        if src.is_empty() {
            return Ok(());
        }
        let _in = self.device.enter()?;
        // SAFETY: the destination lies inside the live allocation (checked
        // above); `src` is borrowed for this whole call and the stream is
        // synchronised before it returns, so the copy has ended by then.
        check("cuMemcpyHtoDAsync", unsafe {
            sys::cuMemcpyHtoDAsync_v2(
                self.buf.device_ptr() + at,
                src.as_ptr().cast(),
                src.len(),
                self.stream.s,
            )
        })?;
        self.stream.sync()
    }
}

/// One thread's staging memory and copies into device memory.
pub struct CudaLane<'a> {
    // Dropped first: its stream is synchronised before the staging memory
    // it copies from is unregistered and unmapped.
    q: Queue<'a>,
    mem: Lent,
    slot_len: usize,
}

impl Lane for CudaLane<'_> {
    fn slot(&mut self, i: usize) -> Result<&mut [u8], GpuError> {
        self.q.wait(i)?;
        let start = i * self.slot_len;
        Ok(&mut self.mem.get_mut().map.as_mut_slice()[start..start + self.slot_len])
    }

    fn send(&mut self, i: usize, n: usize, at: u64) -> Result<(), GpuError> {
        assert!(n <= self.slot_len, "a copy longer than its staging buffer");
        // A buffer sent again without being refilled: one copy at a time.
        self.q.wait(i)?;
        let src = self.mem.get_mut().map.as_mut_slice()[i * self.slot_len..].as_ptr();
        self.q.start(i, src, n, at)
    }

    fn finish(&mut self) -> Result<(), GpuError> {
        self.q.finish()
    }

    fn split(&mut self) -> Result<(&mut [u8], &mut dyn CopyNow), GpuError> {
        self.q.finish()?;
        let len = self.q.pending.len() * self.slot_len;
        Ok((
            &mut self.mem.get_mut().map.as_mut_slice()[..len],
            &mut self.q,
        ))
    }

    fn pinned(&self) -> bool {
        self.mem.get().registered
    }
}
