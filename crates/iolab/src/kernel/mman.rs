//! Memory mappings of files, madvise and mincore.

use crate::error::{Error, Result};
use std::os::fd::AsRawFd;

/// A read-only shared mapping of a whole file, unmapped on drop.
pub struct Mapping {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is read-only memory; sharing or moving the pointer
// between threads is sound (the kernel keeps it valid until munmap).
unsafe impl Send for Mapping {}
// SAFETY: only shared `&[u8]` views are handed out.
unsafe impl Sync for Mapping {}

/// Access advice for a mapping (madvise).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Advice {
    /// No advice (`MADV_NORMAL`): the kernel's default read-around.
    Normal,
    /// Random access (`MADV_RANDOM`): no read-around on a fault.
    Random,
    /// Sequential access (`MADV_SEQUENTIAL`): aggressive read-ahead.
    Sequential,
}

impl Mapping {
    /// Maps `len` bytes of `file` read-only and shared. `len` of zero gives an
    /// empty mapping without a system call.
    pub fn new(file: &impl AsRawFd, len: usize) -> Result<Self> {
        Self::new_at(file, 0, len)
    }

    /// Maps `len` bytes of `file` from `offset`, which must be a multiple of
    /// the page size (mmap's rule), read-only and shared.
    pub fn new_at(file: &impl AsRawFd, offset: u64, len: usize) -> Result<Self> {
        let Ok(off) = libc::off_t::try_from(offset) else {
            return Err(Error::Invalid(format!("offset {offset} does not fit")));
        };
        if !offset.is_multiple_of(page_size() as u64) {
            return Err(Error::Invalid(format!(
                "mapping offset {offset} is not a multiple of the page size"
            )));
        }
        if len == 0 {
            return Ok(Mapping {
                ptr: std::ptr::NonNull::dangling().as_ptr(),
                len: 0,
            });
        }
        // SAFETY: a fresh mapping at a kernel-chosen address; the fd is open
        // for the duration of the call; failure is checked below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                off,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(Error::last_os("mmap"));
        }
        Ok(Mapping { ptr: p.cast(), len })
    }

    /// The mapped bytes. Reading them may fault pages in from the file; if
    /// another process truncates the file the access raises SIGBUS, which is
    /// why iolab only maps files it sized itself or the user named.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: ptr..ptr+len is a live PROT_READ mapping owned by self.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// Start of the mapping (for guarded copies that may fault).
    pub fn ptr(&self) -> *const u8 {
        self.ptr
    }

    /// Length of the mapping in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the mapping is empty (a file of length 0).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Applies access advice to the whole mapping.
    pub fn advise(&self, a: Advice) -> Result<()> {
        if self.len == 0 {
            return Ok(());
        }
        let adv = match a {
            Advice::Normal => libc::MADV_NORMAL,
            Advice::Random => libc::MADV_RANDOM,
            Advice::Sequential => libc::MADV_SEQUENTIAL,
        };
        // SAFETY: the range is exactly our live mapping; madvise does not
        // change its contents.
        let r = unsafe { libc::madvise(self.ptr.cast(), self.len, adv) };
        if r != 0 {
            return Err(Error::last_os("madvise"));
        }
        Ok(())
    }

    /// Number of pages of the mapping resident in the page cache, and the
    /// total page count (mincore).
    pub fn residency(&self) -> Result<(u64, u64)> {
        self.residency_pages(0, usize::MAX)
    }

    /// As [`Mapping::residency`], for at most `pages` pages from page
    /// `first` (clamped to the mapping): mincore's cost grows with the
    /// pages asked about, so a large file can be sampled.
    pub fn residency_pages(&self, first: usize, pages: usize) -> Result<(u64, u64)> {
        let page = page_size();
        let total = self.len.div_ceil(page);
        let first = first.min(total);
        let pages = pages.min(total - first);
        if pages == 0 {
            return Ok((0, 0));
        }
        let mut vec = vec![0u8; pages];
        let bytes = (pages * page).min(self.len - first * page);
        // SAFETY: pages first..first + pages lie inside the live mapping
        // (clamped above), so the start is page aligned and the range
        // mapped; vec has one byte per page of it, as mincore requires.
        let r =
            unsafe { libc::mincore(self.ptr.add(first * page).cast(), bytes, vec.as_mut_ptr()) };
        if r != 0 {
            return Err(Error::last_os("mincore"));
        }
        let resident = vec.iter().filter(|&&v| v & 1 != 0).count() as u64;
        Ok((resident, pages as u64))
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        if self.len > 0 {
            // SAFETY: unmapping exactly the region mmap returned; no borrow
            // of it can outlive self.
            unsafe { libc::munmap(self.ptr.cast(), self.len) };
        }
    }
}

/// The system page size.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as usize
    } else {
        4096
    }
}
