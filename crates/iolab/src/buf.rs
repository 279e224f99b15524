//! I/O buffers aligned for `O_DIRECT` (and for io_uring registration).

use crate::error::{Error, Result};
use crate::mem::{Backing, MemKind};
use crate::sys::alloc::AlignedAlloc;
use crate::sys::hugebuf::AnonMap;
use std::ops::{Deref, DerefMut};

/// Huge page size assumed for transparent huge pages (x86-64, arm64 4K).
const THP_SIZE: usize = 2 << 20;

/// Where an [`AlignedBuf`]'s bytes live.
enum Storage {
    Heap(AlignedAlloc),
    Map(AnonMap),
}

impl Storage {
    fn as_slice(&self, len: usize) -> &[u8] {
        match self {
            Storage::Heap(a) => a.as_slice(len),
            Storage::Map(m) => m.as_slice(len),
        }
    }
    fn as_mut_slice(&mut self, len: usize) -> &mut [u8] {
        match self {
            Storage::Heap(a) => a.as_mut_slice(len),
            Storage::Map(m) => m.as_mut_slice(len),
        }
    }
    fn as_mut_ptr(&mut self) -> *mut u8 {
        match self {
            Storage::Heap(a) => a.as_mut_ptr(),
            Storage::Map(m) => m.as_mut_ptr(),
        }
    }
}

/// A zero-initialised byte buffer whose start is aligned to a power of two.
pub struct AlignedBuf {
    alloc: Storage,
    len: usize,
    backing: Backing,
}

impl AlignedBuf {
    /// Allocates `len` zero bytes aligned to `align` (a power of two).
    pub fn new(len: usize, align: usize) -> Result<Self> {
        Self::with_mem(len, align, MemKind::Malloc)
    }

    /// Allocates `len` zero bytes aligned to `align` in memory of kind
    /// `mem`, faulted in, and records what backing the kernel gave them.
    pub fn with_mem(len: usize, align: usize, mem: MemKind) -> Result<Self> {
        if !align.is_power_of_two() {
            return Err(Error::Invalid(format!(
                "buffer alignment {align} is not a power of two"
            )));
        }
        let mut alloc = match mem {
            MemKind::Malloc => Storage::Heap(AlignedAlloc::new(len, align).ok_or_else(|| {
                Error::Invalid(format!("cannot allocate {len} bytes aligned to {align}"))
            })?),
            MemKind::Thp => Storage::Map(
                AnonMap::thp(len, THP_SIZE.max(align))
                    .map_err(|e| Error::io("--mem thp: mmap/madvise", e))?,
            ),
            MemKind::Hugetlb => {
                let (huge, free) = crate::mem::hugetlb_info().unwrap_or((THP_SIZE, 0));
                let need = len.max(1).div_ceil(huge) as u64;
                Storage::Map(AnonMap::hugetlb(len, huge.max(align)).map_err(|e| {
                    Error::Unsupported {
                        feature: "--mem hugetlb".into(),
                        why: format!(
                            "{need} huge page(s) of {} KiB needed, {free} free ({e}); reserve them first: echo N > /proc/sys/vm/nr_hugepages",
                            huge / 1024
                        ),
                    }
                })?)
            }
        };
        let addr = alloc.as_mut_ptr() as usize;
        let backing = Backing::measure(mem, addr, len);
        Ok(AlignedBuf {
            alloc,
            len,
            backing,
        })
    }

    /// The backing the buffer got (read from `/proc/self/smaps` when it was made).
    pub fn backing(&self) -> Backing {
        self.backing
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
        Self::with_mem(count, slot_len, align, MemKind::Malloc)
    }

    /// As [`BufPool::new`], in memory of kind `mem`.
    pub fn with_mem(count: usize, slot_len: usize, align: usize, mem: MemKind) -> Result<Self> {
        let align = align.max(64);
        let stride = slot_len.div_ceil(align).max(1) * align;
        let total = stride.checked_mul(count.max(1)).ok_or_else(|| {
            Error::Invalid(format!(
                "buffer pool of {count} x {slot_len} bytes is too large"
            ))
        })?;
        // A slot of at most one base page is one segment for the device
        // whatever backs it, so a huge page cannot help it; faulting 2 MiB
        // per worker made runs of many threads slow to start (256 threads
        // of 4 KiB: 10.3 s against 3.7 s for a 1 s run). The record still
        // says what the buffers got (measured, not assumed).
        let mem = if mem == MemKind::Thp && stride <= crate::os::page_size() {
            MemKind::Malloc
        } else {
            mem
        };
        let mem = AlignedBuf::with_mem(total, align, mem)?;
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

    /// What memory the slots got (asked-for kind, bytes in huge pages).
    pub fn backing(&self) -> Backing {
        self.mem.backing()
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
    fn malloc_pool_is_recorded_as_asked() {
        let p = BufPool::with_mem(4, 4096, 4096, MemKind::Malloc).unwrap();
        let b = p.backing();
        assert_eq!(b.mem, MemKind::Malloc);
        assert_eq!(b.bytes, 4 * 4096);
    }

    #[test]
    fn bad_alignment_is_an_error() {
        assert!(AlignedBuf::new(10, 3).is_err());
    }
}
