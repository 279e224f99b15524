//! Aligned, zeroed heap allocation for I/O buffers.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::ptr::NonNull;

/// An owned, zero-initialised allocation of `len` bytes aligned to `align`.
pub struct AlignedAlloc {
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: the allocation is uniquely owned plain memory; moving it to another
// thread is no different from moving a Vec<u8>.
unsafe impl Send for AlignedAlloc {}
// SAFETY: shared access only hands out `&[u8]`, which is Sync for u8.
unsafe impl Sync for AlignedAlloc {}

impl AlignedAlloc {
    /// Allocates; `align` must be a power of two, `len` may be zero.
    pub fn new(len: usize, align: usize) -> Option<Self> {
        let layout = Layout::from_size_align(len.max(1), align).ok()?;
        // SAFETY: the layout has a non-zero size (len.max(1)).
        let p = unsafe { alloc_zeroed(layout) };
        NonNull::new(p).map(|ptr| AlignedAlloc { ptr, layout })
    }

    /// The bytes.
    pub fn as_slice(&self, len: usize) -> &[u8] {
        assert!(len <= self.layout.size());
        // SAFETY: ptr is valid for layout.size() initialised (zeroed) bytes
        // for the lifetime of &self, and len <= that size.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), len) }
    }

    /// The bytes, mutably.
    pub fn as_mut_slice(&mut self, len: usize) -> &mut [u8] {
        assert!(len <= self.layout.size());
        // SAFETY: as above, and &mut self guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), len) }
    }

    /// Raw pointer to the first byte, for registration with the kernel.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }
}

impl Drop for AlignedAlloc {
    fn drop(&mut self) {
        // SAFETY: ptr was returned by alloc_zeroed with exactly this layout.
        unsafe { dealloc(self.ptr.as_ptr(), self.layout) }
    }
}
