//! `Stream`: one `pread` per request, straight into the caller's buffer.

use super::{Backend, Result, Src};
use std::sync::Arc;

/// The plainest technique: what `std::fs::File::read_at` gives.
pub(crate) struct Stream {
    src: Arc<Src>,
}

impl Stream {
    pub(crate) fn new(src: Arc<Src>) -> Self {
        Stream { src }
    }

    /// The open file.
    #[inline]
    pub(crate) fn src(&self) -> &Arc<Src> {
        &self.src
    }
}

impl Backend for Stream {
    #[inline]
    fn read_at(&self, off: u64, buf: &mut [u8]) -> Result<usize> {
        self.src.pread_full(off, buf)
    }
}
