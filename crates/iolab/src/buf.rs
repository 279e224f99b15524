//! I/O buffers aligned for `O_DIRECT` (and for io_uring registration).

use crate::error::{Error, Result};
use crate::sys::alloc::AlignedAlloc;
use std::ops::{Deref, DerefMut};

/// A zero-initialised byte buffer whose start is aligned to a power of two.
pub struct AlignedBuf {
    alloc: AlignedAlloc,
    len: usize,
}

impl AlignedBuf {
    /// Allocates `len` zero bytes aligned to `align` (a power of two).
    pub fn new(len: usize, align: usize) -> Result<Self> {
        if !align.is_power_of_two() {
            return Err(Error::Invalid(format!(
                "buffer alignment {align} is not a power of two"
            )));
        }
        let alloc = AlignedAlloc::new(len, align).ok_or_else(|| {
            Error::Invalid(format!("cannot allocate {len} bytes aligned to {align}"))
        })?;
        Ok(AlignedBuf { alloc, len })
    }
}

impl Deref for AlignedBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.alloc.as_slice(self.len)
    }
}

impl DerefMut for AlignedBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        self.alloc.as_mut_slice(self.len)
    }
}

/// Identifies one slot of a [`BufPool`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct BufId(pub u32);

/// `count` equal slots of `slot_len` bytes in one aligned allocation, so an
/// engine can register them with the kernel in one step.
pub struct BufPool {
    mem: AlignedBuf,
    slot_len: usize,
    count: usize,
}

impl BufPool {
    /// A pool of `count` slots of `slot_len` bytes, each slot aligned to
    /// `align` (slot_len is rounded up to a multiple of it).
    pub fn new(count: usize, slot_len: usize, align: usize) -> Result<Self> {
        let align = align.max(64);
        let stride = slot_len.div_ceil(align).max(1) * align;
        let total = stride.checked_mul(count.max(1)).ok_or_else(|| {
            Error::Invalid(format!(
                "buffer pool of {count} x {slot_len} bytes is too large"
            ))
        })?;
        let mem = AlignedBuf::new(total, align)?;
        Ok(BufPool {
            mem,
            slot_len: stride,
            count: count.max(1),
        })
    }

    /// Number of slots.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Length of each slot in bytes.
    pub fn slot_len(&self) -> usize {
        self.slot_len
    }

    /// The bytes of one slot.
    #[inline]
    pub fn slot(&self, id: BufId) -> &[u8] {
        let s = id.0 as usize * self.slot_len;
        &self.mem[s..s + self.slot_len]
    }

    /// The bytes of one slot, mutably.
    #[inline]
    pub fn slot_mut(&mut self, id: BufId) -> &mut [u8] {
        let s = id.0 as usize * self.slot_len;
        &mut self.mem[s..s + self.slot_len]
    }

    /// Raw base pointer, for registering the slots with the kernel.
    pub(crate) fn base_ptr(&mut self) -> *mut u8 {
        self.mem.alloc.as_mut_ptr()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_aligned_and_disjoint() {
        let mut p = BufPool::new(4, 3000, 4096).unwrap();
        assert_eq!(p.slot_len(), 4096);
        for i in 0..4 {
            let s = p.slot_mut(BufId(i));
            assert_eq!(s.as_ptr() as usize % 4096, 0);
            s.fill(i as u8 + 1);
        }
        for i in 0..4 {
            assert!(p.slot(BufId(i)).iter().all(|&b| b == i as u8 + 1));
        }
    }

    #[test]
    fn bad_alignment_is_an_error() {
        assert!(AlignedBuf::new(10, 3).is_err());
    }
}
