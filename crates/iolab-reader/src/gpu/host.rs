//! Host memory as a [`Target`]: the same pipeline as the GPU's, with
//! copies done by the CPU. It is a destination in its own right and the
//! stand-in that tests the pipeline (order, buffer reuse, ranges, errors)
//! on machines without a GPU: [`HostTarget::with_late_copies`] lets each
//! copy end only when its buffer is wanted again, as a device's
//! asynchronous copies may.

use super::error::GpuError;
use super::target::{CopyNow, Lane, Target};
use iolab::kernel::hugebuf::HugeBuf;
use std::sync::Mutex;

/// Destination bytes per lock: threads copying to different stripes never
/// wait for each other.
const STRIPE: usize = 1 << 20;

/// A caller's buffer as the pipeline's destination.
pub struct HostTarget<'a> {
    stripes: Vec<Mutex<&'a mut [u8]>>,
    len: u64,
    late: bool,
}

impl<'a> HostTarget<'a> {
    /// `buf` as the destination; each copy is done when `send` returns.
    pub fn new(buf: &'a mut [u8]) -> Self {
        HostTarget {
            len: buf.len() as u64,
            stripes: buf.chunks_mut(STRIPE).map(Mutex::new).collect(),
            late: false,
        }
    }

    /// `buf` as the destination, each copy done only when its staging
    /// buffer is asked for again or the lane finishes: the latest a
    /// device's asynchronous copy may end. A pipeline that reused a buffer
    /// or returned without waiting would lose bytes here.
    pub fn with_late_copies(buf: &'a mut [u8]) -> Self {
        HostTarget {
            late: true,
            ..HostTarget::new(buf)
        }
    }

    /// Copies `src` to `at`, stripe by stripe.
    fn write(&self, src: &[u8], at: u64) -> Result<(), GpuError> {
        let oob = || GpuError::OutOfBounds {
            at,
            len: src.len() as u64,
            cap: self.len,
        };
        let end = at.checked_add(src.len() as u64).ok_or_else(oob)?;
        if end > self.len {
            return Err(oob());
        }
        let mut at = at as usize;
        let mut src = src;
        while !src.is_empty() {
            let (s, o) = (at / STRIPE, at % STRIPE);
            let mut stripe = self.stripes[s].lock().unwrap_or_else(|p| p.into_inner());
            let n = src.len().min(stripe.len() - o);
            stripe[o..o + n].copy_from_slice(&src[..n]);
            src = &src[n..];
            at += n;
        }
        Ok(())
    }
}

impl<'a> Target for HostTarget<'a> {
    type Lane<'s>
        = HostLane<'s, 'a>
    where
        Self: 's;

    fn len(&self) -> u64 {
        self.len
    }

    fn lane(
        &self,
        slots: usize,
        slot_len: usize,
        _pinned: bool,
    ) -> Result<HostLane<'_, 'a>, GpuError> {
        let slots = slots.max(1);
        let mem = HugeBuf::new(slots * slot_len)
            .map_err(|e| GpuError::layer(std::path::Path::new("staging buffers"), e))?;
        Ok(HostLane {
            mem,
            slot_len,
            q: HostQueue {
                target: self,
                pending: vec![None; slots],
            },
        })
    }
}

/// The copies of one [`HostLane`]: those not yet done (late copies), by
/// staging buffer.
pub struct HostQueue<'s, 'a> {
    target: &'s HostTarget<'a>,
    pending: Vec<Option<(usize, u64)>>,
}

impl CopyNow for HostQueue<'_, '_> {
    fn copy_now(&mut self, src: &[u8], at: u64) -> Result<(), GpuError> {
        self.target.write(src, at)
    }
}

/// One thread's staging buffers (in huge pages, as the GPU's) and copies.
pub struct HostLane<'s, 'a> {
    mem: HugeBuf,
    slot_len: usize,
    q: HostQueue<'s, 'a>,
}

impl HostLane<'_, '_> {
    /// Ends the copy out of buffer `i`, if one is outstanding.
    fn end_copy(&mut self, i: usize) -> Result<(), GpuError> {
        if let Some((n, at)) = self.q.pending[i].take() {
            let start = i * self.slot_len;
            let src = &self.mem.as_mut_slice()[start..start + n];
            self.q.target.write(src, at)?;
        }
        Ok(())
    }
}

impl Lane for HostLane<'_, '_> {
    fn slot(&mut self, i: usize) -> Result<&mut [u8], GpuError> {
        self.end_copy(i)?;
        let start = i * self.slot_len;
        Ok(&mut self.mem.as_mut_slice()[start..start + self.slot_len])
    }

    fn send(&mut self, i: usize, n: usize, at: u64) -> Result<(), GpuError> {
        assert!(n <= self.slot_len, "a copy longer than its staging buffer");
        // A buffer sent twice without being refilled: the first copy ends now.
        self.end_copy(i)?;
        if self.q.target.late {
            self.q.pending[i] = Some((n, at));
            return Ok(());
        }
        let start = i * self.slot_len;
        let src = &self.mem.as_mut_slice()[start..start + n];
        self.q.target.write(src, at)
    }

    fn finish(&mut self) -> Result<(), GpuError> {
        for i in 0..self.q.pending.len() {
            self.end_copy(i)?;
        }
        Ok(())
    }

    fn split(&mut self) -> Result<(&mut [u8], &mut dyn CopyNow), GpuError> {
        self.finish()?;
        let len = self.q.pending.len() * self.slot_len;
        Ok((&mut self.mem.as_mut_slice()[..len], &mut self.q))
    }

    fn pinned(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_cross_stripes_and_refuse_to_pass_the_end() {
        let mut buf = vec![0u8; 3 * STRIPE + 10];
        let t = HostTarget::new(&mut buf);
        let src: Vec<u8> = (0..STRIPE + 20).map(|i| (i % 251) as u8).collect();
        t.write(&src, STRIPE as u64 - 10).unwrap();
        let e = t.write(&[1, 2, 3], 3 * STRIPE as u64 + 8).unwrap_err();
        assert!(e.to_string().contains("passes the end"), "{e}");
        assert!(t.write(&[1], u64::MAX).is_err());
        drop(t);
        assert_eq!(&buf[STRIPE - 10..2 * STRIPE + 10], &src[..]);
        assert!(buf[..STRIPE - 10].iter().all(|&b| b == 0));
    }

    #[test]
    fn late_copies_land_when_the_buffer_is_wanted_again_or_at_finish() {
        let mut buf = vec![0u8; 64];
        let t = HostTarget::with_late_copies(&mut buf);
        let mut lane = t.lane(2, 8, true).unwrap();
        assert!(!lane.pinned());
        lane.slot(0).unwrap()[..4].copy_from_slice(b"abcd");
        lane.send(0, 4, 0).unwrap();
        lane.slot(1).unwrap()[..4].copy_from_slice(b"efgh");
        lane.send(1, 4, 10).unwrap();
        // Asking for buffer 0 again ends its copy, before it is refilled.
        lane.slot(0).unwrap()[..2].copy_from_slice(b"zz");
        lane.send(0, 2, 20).unwrap();
        lane.finish().unwrap();
        drop(lane);
        drop(t);
        assert_eq!(&buf[0..4], b"abcd");
        assert_eq!(&buf[10..14], b"efgh");
        assert_eq!(&buf[20..22], b"zz");
    }
}
