//! One owned host allocation for a whole checkpoint, its start on a page
//! (so O_DIRECT reads land in it directly), pages faulted in as they are
//! first written rather than all up front.

/// Alignment of [`HostBuffer`]'s first byte.
pub const HOST_ALIGN: usize = 4096;

/// Zeroed host memory, `len` bytes from a page boundary, owned. Hand it to
/// another language as [`as_ptr`](Self::as_ptr) and [`len`](Self::len)
/// while the `HostBuffer` lives.
pub struct HostBuffer {
    v: Vec<u8>,
    off: usize,
    len: usize,
}

impl std::fmt::Debug for HostBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostBuffer")
            .field("ptr", &self.as_ptr())
            .field("len", &self.len)
            .finish()
    }
}

impl HostBuffer {
    /// `len` zeroed bytes. The zeroes come from the allocator's fresh
    /// mapping (calloc): no page is touched until written.
    pub fn zeroed(len: usize) -> HostBuffer {
        let v = vec![0u8; len + HOST_ALIGN];
        let off = (HOST_ALIGN - v.as_ptr() as usize % HOST_ALIGN) % HOST_ALIGN;
        HostBuffer { v, off, len }
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        &self.v[self.off..self.off + self.len]
    }

    /// The bytes, mutably.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.v[self.off..self.off + self.len]
    }

    /// The address of the first byte (a multiple of [`HOST_ALIGN`]).
    pub fn as_ptr(&self) -> *const u8 {
        self.as_slice().as_ptr()
    }

    /// Bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_on_a_page_and_is_zeroed() {
        for len in [0, 1, 4096, 10_000] {
            let mut b = HostBuffer::zeroed(len);
            assert_eq!(b.as_ptr() as usize % HOST_ALIGN, 0);
            assert_eq!(b.len(), len);
            assert!(b.as_slice().iter().all(|&x| x == 0));
            b.as_mut_slice().fill(1);
        }
    }
}
