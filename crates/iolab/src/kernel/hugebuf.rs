//! Anonymous mappings for I/O buffers backed by huge pages: transparent
//! huge pages (`madvise(MADV_HUGEPAGE)` on a 2 MiB-aligned range) or
//! hugetlbfs pages (`MAP_HUGETLB`). A buffer inside one huge page is
//! physically contiguous, so a large `O_DIRECT` request is one segment for
//! the device instead of one per 4 KiB page.

use std::io;

/// A private anonymous mapping, unmapped on drop. `start..start+len` is the
/// part handed out (aligned as asked); the mapping may be larger.
pub struct AnonMap {
    base: *mut u8,
    map_len: usize,
    start: *mut u8,
    len: usize,
}

// SAFETY: the mapping is uniquely owned plain memory, like a Vec<u8>.
unsafe impl Send for AnonMap {}
// SAFETY: shared access only hands out `&[u8]`.
unsafe impl Sync for AnonMap {}

fn mmap_anon(len: usize, extra_flags: libc::c_int) -> io::Result<*mut u8> {
    // SAFETY: a fresh private anonymous mapping at a kernel-chosen address;
    // no existing memory is affected; failure is checked below.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | extra_flags,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        Err(io::Error::last_os_error())
    } else {
        Ok(p.cast())
    }
}

impl AnonMap {
    /// `len` bytes starting on a `huge`-aligned address, advised
    /// `MADV_HUGEPAGE` and faulted in (so the kernel picks the pages now,
    /// not during the measurement). The mapping keeps at least two 4 KiB
    /// pages of unadvised slack after the range, so it never merges with a
    /// neighbouring advised mapping and `/proc/self/smaps` reports it alone.
    pub fn thp(len: usize, huge: usize) -> io::Result<Self> {
        let m = Self::thp_lazy(len, huge)?;
        m.touch();
        Ok(m)
    }

    /// As [`thp`](Self::thp), without faulting the pages in: each is
    /// faulted (and zeroed) by what first writes it, so several threads
    /// filling their own parts of a large buffer fault in parallel, and a
    /// device's DMA into it needs no earlier pass over it.
    pub fn thp_lazy(len: usize, huge: usize) -> io::Result<Self> {
        let len = len.max(1).div_ceil(huge) * huge;
        let map_len = len + huge + 4096;
        let base = mmap_anon(map_len, 0)?;
        let head = (huge - (base as usize % huge)) % huge;
        // SAFETY: head < huge, so start..start+len lies inside the mapping
        // of len + huge + 4096 bytes.
        let start = unsafe { base.add(head) };
        let m = AnonMap {
            base,
            map_len,
            start,
            len,
        };
        // SAFETY: the range is inside our own live mapping; the advice
        // changes only how the kernel backs it, not its contents.
        let r = unsafe { libc::madvise(start.cast(), len, libc::MADV_HUGEPAGE) };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(m)
    }

    /// `len` bytes of hugetlbfs pages of the default huge page size `huge`
    /// (`MAP_HUGETLB`). Fails with `ENOMEM` when too few are reserved.
    pub fn hugetlb(len: usize, huge: usize) -> io::Result<Self> {
        let len = len.max(1).div_ceil(huge) * huge;
        let base = mmap_anon(len, libc::MAP_HUGETLB)?;
        let m = AnonMap {
            base,
            map_len: len,
            start: base,
            len,
        };
        m.touch();
        Ok(m)
    }

    /// Writes one zero byte per 4 KiB so every page is faulted in.
    fn touch(&self) {
        let mut off = 0;
        while off < self.len {
            // SAFETY: off < len, inside our writable mapping; a volatile
            // write of the zero the page already holds keeps the contents.
            unsafe { std::ptr::write_volatile(self.start.add(off), 0) };
            off += 4096;
        }
    }

    /// The bytes (`len` ≤ the range).
    pub fn as_slice(&self, len: usize) -> &[u8] {
        assert!(len <= self.len);
        // SAFETY: start..start+len is readable, initialised (zero-filled by
        // the kernel) memory owned by self.
        unsafe { std::slice::from_raw_parts(self.start, len) }
    }

    /// The bytes, mutably.
    pub fn as_mut_slice(&mut self, len: usize) -> &mut [u8] {
        assert!(len <= self.len);
        // SAFETY: as above, and &mut self gives exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.start, len) }
    }

    /// Raw pointer to the first byte, for registration with the kernel.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.start
    }
}

impl Drop for AnonMap {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what mmap returned; no borrow outlives self.
        unsafe { libc::munmap(self.base.cast(), self.map_len) };
    }
}

/// A zeroed buffer of whole transparent huge pages, 2 MiB aligned: what the
/// reader's Direct technique and whole-file reads use. The same mapping as
/// `--mem thp`'s pools ([`AnonMap::thp`]), so there is one allocator.
pub struct HugeBuf {
    map: AnonMap,
    len: usize,
}

impl HugeBuf {
    /// Maps `len` bytes rounded up to 2 MiB.
    pub fn new(len: usize) -> crate::error::Result<Self> {
        const HUGE: usize = 2 << 20;
        let len = len.max(1).div_ceil(HUGE) * HUGE;
        let map = AnonMap::thp(len, HUGE)
            .map_err(|e| crate::error::Error::io("mmap huge-page buffer", e))?;
        Ok(HugeBuf { map, len })
    }

    /// Length in bytes (a multiple of 2 MiB).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no bytes (never, once made: kept for `len`'s sake).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes, mutably.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        self.map.as_mut_slice(self.len)
    }
}
