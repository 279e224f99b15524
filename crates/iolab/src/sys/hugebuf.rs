//! Buffers backed by transparent huge pages: anonymous memory aligned to
//! 2 MiB and advised `MADV_HUGEPAGE` before it is first touched, so the
//! kernel can back it with 2 MiB pages. `O_DIRECT` reads into such a buffer
//! pin one page per 2 MiB instead of 512, which on this VM roughly doubled
//! direct-read throughput (issue 9). The reader's Direct technique uses it;
//! the buffer-memory issue (`--mem thp`) needs the same thing, so this is
//! the one place to merge the two.

use crate::error::{Error, Result};

const HUGE: usize = 2 << 20;

/// Zeroed anonymous memory aligned to 2 MiB, advised to use huge pages.
pub(crate) struct HugeBuf {
    map: *mut u8,
    map_len: usize,
    ptr: *mut u8,
    len: usize,
}

// SAFETY: uniquely owned anonymous memory, like a Vec<u8>.
unsafe impl Send for HugeBuf {}
// SAFETY: shared access hands out only &[u8].
unsafe impl Sync for HugeBuf {}

impl HugeBuf {
    /// Maps `len` bytes (rounded up to 2 MiB), aligned to 2 MiB.
    pub(crate) fn new(len: usize) -> Result<Self> {
        let len = len.max(1).div_ceil(HUGE) * HUGE;
        let map_len = len + HUGE;
        // SAFETY: a fresh private anonymous mapping; failure checked below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(Error::last_os("mmap huge-page buffer"));
        }
        let map = p.cast::<u8>();
        let pad = (HUGE - map as usize % HUGE) % HUGE;
        let ptr = map.wrapping_add(pad);
        // SAFETY: ptr..ptr+len lies inside the mapping just made (pad < HUGE
        // and map_len = len + HUGE); the advice changes no contents. Failure
        // (THP disabled) just leaves 4 KiB pages.
        unsafe { libc::madvise(ptr.cast(), len, libc::MADV_HUGEPAGE) };
        Ok(HugeBuf {
            map,
            map_len,
            ptr,
            len,
        })
    }

    /// Length in bytes (a multiple of 2 MiB).
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The bytes, mutably.
    pub(crate) fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: ptr..ptr+len is inside our live mapping, zero-initialised
        // by the kernel; &mut self gives exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for HugeBuf {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what mmap returned; no borrow outlives self.
        unsafe { libc::munmap(self.map.cast(), self.map_len) };
    }
}
