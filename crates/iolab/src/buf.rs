//! I/O buffers aligned for `O_DIRECT` (and for io_uring registration).

use crate::error::{Error, Result};
use crate::kernel::alloc::AlignedAlloc;
use crate::kernel::hugebuf::AnonMap;
use crate::mem::{Backing, MemKind};
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
/// engine can register them with the kernel in one step. The slots may
/// start `offset` bytes past the alignment ([`BufPool::with_layout`]).
pub struct BufPool {
    mem: AlignedBuf,
    slot_len: usize,
    offset: usize,
    count: usize,
}

/// Where buffered (page-cache) reads land by default: this many bytes past
/// a cache line. The kernel copies a cached page to the caller with `rep
/// movsb`, and on this VM's Xeon a copy into a 64-byte-aligned destination
/// (a page-aligned source, so both aligned) ran 10 % slower: a C loop of
/// 128 KiB `pread` from a cached file, alternating, read 7.8–8.0 GB/s at
/// offsets 0, 64 and 2048 and 8.5–8.8 GB/s at 8, 16, 32, 48, 80 and 1552.
/// fio's buffered buffers are `malloc`ed, not page-aligned (0x…610 here),
/// which is why fio read faster. O_DIRECT buffers stay aligned (offset 0).
pub const BUFFERED_SLOT_OFFSET: usize = 16;

/// The offsets past a page that [`copy_offset_rates`] compares:
/// page-aligned (dd's buffers) and [`BUFFERED_SLOT_OFFSET`] (malloc's).
pub const COPY_OFFSETS: [usize; 2] = [0, BUFFERED_SLOT_OFFSET];

/// Which of [`COPY_OFFSETS`] the kernel's copy out of the page cache
/// fills fastest, and the medians it was chosen on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CopyOffset {
    /// The faster offset past a page, bytes.
    pub offset: usize,
    /// Median MiB/s at each of [`COPY_OFFSETS`], in that order.
    pub mib_s: [f64; 2],
}

/// Times `pread`s of `piece` bytes from the cached `file` (its first
/// `span` bytes) into a destination at each of [`COPY_OFFSETS`] past a
/// page, in alternating order, `rounds` times each, and keeps the offset
/// with the higher median. Which wins is the CPU's copy routine's
/// business (+16 B was 10 % faster on a Xeon here, +0 17 % faster on an
/// AMD EPYC), so it is measured, not assumed.
pub fn copy_offset_rates(
    file: &std::fs::File,
    span: u64,
    piece: usize,
    rounds: usize,
) -> std::io::Result<CopyOffset> {
    use std::os::unix::fs::FileExt;
    const PAGE: usize = 4096;
    let piece = piece.max(PAGE);
    let mut raw = vec![0u8; piece + PAGE + 64];
    let base = (PAGE - raw.as_ptr() as usize % PAGE) % PAGE;
    let mut rates: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    for r in 0..rounds.max(1) {
        for k in 0..2 {
            let i = if r % 2 == 0 { k } else { 1 - k };
            let at = base + COPY_OFFSETS[i];
            let buf = &mut raw[at..at + piece];
            let t = std::time::Instant::now();
            let mut pos = 0u64;
            while pos < span {
                match file.read_at(buf, pos)? {
                    0 => break,
                    n => pos += n as u64,
                }
            }
            let secs = t.elapsed().as_secs_f64().max(1e-9);
            rates[i].push(pos as f64 / secs / (1 << 20) as f64);
        }
    }
    let mib_s = rates.map(|mut v| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    });
    let offset = COPY_OFFSETS[usize::from(mib_s[1] > mib_s[0])];
    Ok(CopyOffset { offset, mib_s })
}

/// Where buffered (page-cache) reads land by default on this machine:
/// whichever of [`COPY_OFFSETS`] [`copy_offset_rates`] found faster on a
/// 4 MiB in-memory file (128 KiB pieces, 7 rounds: about 5 ms, once per
/// process, and only when a buffered pool is built), else
/// [`BUFFERED_SLOT_OFFSET`].
pub fn buffered_slot_offset() -> usize {
    static AT: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *AT.get_or_init(|| probe_copy_offset().map_or(BUFFERED_SLOT_OFFSET, |c| c.offset))
}

/// [`copy_offset_rates`] on an in-memory file made for it.
pub fn probe_copy_offset() -> std::io::Result<CopyOffset> {
    use std::io::Write;
    const LEN: usize = 4 << 20;
    let mut f = crate::kernel::fs::memfd("iolab-copy-probe")?;
    f.write_all(&vec![0x5a; LEN])?;
    copy_offset_rates(&f, LEN as u64, 128 << 10, 7)
}

impl BufPool {
    /// A pool of `count` slots of `slot_len` bytes, each slot aligned to
    /// `align` (slot_len is rounded up to a multiple of it).
    pub fn new(count: usize, slot_len: usize, align: usize) -> Result<Self> {
        Self::with_mem(count, slot_len, align, MemKind::Malloc)
    }

    /// As [`BufPool::new`], in memory of kind `mem`.
    pub fn with_mem(count: usize, slot_len: usize, align: usize, mem: MemKind) -> Result<Self> {
        Self::with_layout(count, slot_len, align, mem, 0)
    }

    /// As [`BufPool::with_mem`], with every slot starting `offset` bytes
    /// (less than `align`) past its alignment: see [`BUFFERED_SLOT_OFFSET`].
    pub fn with_layout(
        count: usize,
        slot_len: usize,
        align: usize,
        mem: MemKind,
        offset: usize,
    ) -> Result<Self> {
        let align = align.max(64);
        if offset >= align {
            return Err(Error::Invalid(format!(
                "buffer offset {offset} is not below the alignment {align}"
            )));
        }
        let stride = slot_len.div_ceil(align).max(1) * align;
        let total = stride
            .checked_mul(count.max(1))
            .and_then(|t| t.checked_add(if offset > 0 { align } else { 0 }))
            .ok_or_else(|| {
                Error::Invalid(format!(
                    "buffer pool of {count} x {slot_len} bytes is too large"
                ))
            })?;
        // A slot of at most one base page is one segment for the device
        // whatever backs it, so a huge page cannot help it; faulting 2 MiB
        // per worker made runs of many threads slow to start (256 threads
        // of 4 KiB: 10.3 s against 3.7 s for a 1 s run). The record still
        // says what the buffers got (measured, not assumed).
        let mem = if mem == MemKind::Thp && stride <= crate::usage::page_size() {
            MemKind::Malloc
        } else {
            mem
        };
        let mem = AlignedBuf::with_mem(total, align, mem)?;
        Ok(BufPool {
            mem,
            slot_len: stride,
            offset,
            count: count.max(1),
        })
    }

    /// Number of slots.
    pub fn count(&self) -> usize {
        self.count
    }

    /// What memory the slots got (asked-for kind, bytes in huge pages,
    /// where the slots start).
    pub fn backing(&self) -> Backing {
        Backing {
            slot_offset: self.offset as u32,
            ..self.mem.backing()
        }
    }

    /// Length of each slot in bytes.
    pub fn slot_len(&self) -> usize {
        self.slot_len
    }

    /// The bytes of one slot.
    #[inline]
    pub fn slot(&self, id: BufId) -> &[u8] {
        let s = self.offset + id.0 as usize * self.slot_len;
        &self.mem[s..s + self.slot_len]
    }

    /// The bytes of one slot, mutably.
    #[inline]
    pub fn slot_mut(&mut self, id: BufId) -> &mut [u8] {
        let s = self.offset + id.0 as usize * self.slot_len;
        &mut self.mem[s..s + self.slot_len]
    }

    /// Raw pointer to the start of slot `i`, for registering the slots
    /// with the kernel.
    pub(crate) fn slot_ptr(&mut self, i: usize) -> *mut u8 {
        self.slot_mut(BufId(i as u32)).as_mut_ptr()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_copy_probe_measures_both_offsets_and_keeps_the_faster() {
        let c = probe_copy_offset().unwrap();
        assert!(c.mib_s.iter().all(|r| *r > 0.0), "{c:?}");
        let i = COPY_OFFSETS.iter().position(|o| *o == c.offset).unwrap();
        assert!(c.mib_s[i] >= c.mib_s[1 - i], "{c:?}");
        // The default is the probe's answer, and the same on every call.
        let d = buffered_slot_offset();
        assert!(COPY_OFFSETS.contains(&d));
        assert_eq!(buffered_slot_offset(), d);
    }

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
    fn offset_slots_start_past_the_alignment_and_stay_disjoint() {
        let mut p = BufPool::with_layout(3, 4096, 4096, MemKind::Malloc, 16).unwrap();
        assert_eq!(p.backing().slot_offset, 16);
        for i in 0..3 {
            let s = p.slot_mut(BufId(i));
            assert_eq!(s.len(), 4096);
            assert_eq!(s.as_ptr() as usize % 4096, 16);
            s.fill(i as u8 + 1);
        }
        for i in 0..3 {
            assert!(p.slot(BufId(i)).iter().all(|&b| b == i as u8 + 1));
        }
        assert!(BufPool::with_layout(1, 4096, 4096, MemKind::Malloc, 4096).is_err());
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
