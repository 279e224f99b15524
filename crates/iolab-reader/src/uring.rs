//! `Uring`: io_uring, one ring per thread; a request larger than 1 MiB is
//! split into 1 MiB pieces with up to `depth` in flight, and `read_many`
//! keeps `depth` requests in flight, merging neighbours. Where io_uring is
//! unavailable it falls back to `pread` (and a thread pool for batches).

use super::many::{self, ReadReq};
use super::{Backend, Result, Src};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The io_uring technique.
pub(crate) struct UringReader {
    src: Arc<Src>,
    depth: u32,
    /// Set once io_uring failed to set up here: use the fallback from then on.
    missing: AtomicBool,
}

impl UringReader {
    pub(crate) fn new(src: Arc<Src>, depth: u32) -> Self {
        UringReader {
            src,
            depth: depth.max(1),
            missing: AtomicBool::new(false),
        }
    }
}

impl Backend for UringReader {
    fn read_at(&self, off: u64, buf: &mut [u8]) -> Result<usize> {
        if !self.missing.load(Ordering::Relaxed) {
            let mut one = [ReadReq::new(off, buf)];
            if many::via_ring(&self.src, &mut one, self.depth, false, &mut |_, _| {}) {
                return one[0].result.take().unwrap_or(Ok(0));
            }
            self.missing.store(true, Ordering::Relaxed);
            let [r] = one;
            return self.src.pread_full(off, r.buf);
        }
        self.src.pread_full(off, buf)
    }

    fn read_many(&self, reqs: &mut [ReadReq<'_>], done: &mut dyn FnMut(usize, &ReadReq<'_>)) {
        if !self.missing.load(Ordering::Relaxed)
            && many::via_ring(&self.src, reqs, self.depth, true, done)
        {
            return;
        }
        self.missing.store(true, Ordering::Relaxed);
        let plain = super::stream::Stream::new(self.src.clone());
        many::via_threads(&plain, reqs, (self.depth as usize).min(16), done)
    }
}
