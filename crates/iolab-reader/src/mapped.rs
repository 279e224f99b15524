//! `Mapped`: a shared read-only mapping of the whole file (or, for
//! `Auto`'s copies of a header, of its first page); a read is a copy out
//! of it. The copy is guarded ([`iolab::kernel::guard`]): if another
//! process truncates the file, the SIGBUS is turned into a short read and
//! the rest is read with `pread` (which sees the new end). Bytes beyond the
//! length mapped at open (the file grew) are read with `pread` too.
//!
//! Once one copy has faulted, the file is known to have shrunk and every
//! later read uses `pread`. Before that, a read that lies wholly inside
//! the page holding the new end sees zeros past it (the page is still
//! mapped; only whole pages beyond the end fault): that window is
//! inherent to mappings.

use super::policy;
use super::{Backend, ReadError, Result, Src};
use iolab::kernel::{
    guard,
    mman::{Advice, Mapping},
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The memory-mapped technique.
pub(crate) struct Mapped {
    src: Arc<Src>,
    /// None on targets without the guard: then every read is a pread.
    map: Option<Mapping>,
    /// Set once a copy faulted: the file shrank, use pread from now on.
    shrunk: AtomicBool,
}

impl Mapped {
    /// A mapping of the whole file.
    pub(crate) fn new(src: Arc<Src>) -> Result<Self> {
        let len = src.len();
        Self::prefix(src, len)
    }

    /// A mapping of the file's first `len` bytes (at most the whole file);
    /// reads past them are `pread`s. What a mapping costs to make, touch
    /// and let go grows with its length, so a reader that only copies a
    /// header maps only the header's page.
    pub(crate) fn prefix(src: Arc<Src>, len: u64) -> Result<Self> {
        let len = len.min(src.len());
        let len = usize::try_from(len).map_err(|_| ReadError::TooLarge {
            path: src.path.to_path_buf(),
            what: format!("{len} bytes cannot be mapped on this machine"),
        })?;
        let map = if guard::available() {
            Some(
                Mapping::new(&src.file, len).map_err(|e| ReadError::Unsupported {
                    path: src.path.to_path_buf(),
                    technique: "mapped".into(),
                    why: e.to_string(),
                })?,
            )
        } else {
            None
        };
        Ok(Mapped {
            src,
            map,
            shrunk: AtomicBool::new(false),
        })
    }
}

impl Mapped {
    /// A mapping of the file's first page alone ([`policy::HEAD_MAP_MAX`]),
    /// for copies of a header read again, advised random: a fault on a page
    /// the cache let go reads that page alone, not the read-around window
    /// about it, so the copies are safe whatever the rest of the file is.
    pub(crate) fn head(src: Arc<Src>) -> Result<Self> {
        let m = Self::prefix(src, policy::HEAD_MAP_MAX)?;
        if let Some(map) = &m.map {
            // Advice only: without it a fault reads around the page.
            let _ = map.advise(Advice::Random);
        }
        Ok(m)
    }

    /// How long reading the byte at `off` through the mapping took, ns
    /// (None where there is no mapping, `off` is past it, or the page is
    /// gone): a few hundred ns where it is mapped already, microseconds
    /// where it faults.
    pub(crate) fn touch_ns(&self, off: u64) -> Option<u64> {
        let map = self.map.as_ref()?;
        let off = usize::try_from(off).ok().filter(|&o| o < map.len())?;
        let mut b = [0u8; 1];
        let t = std::time::Instant::now();
        let n = guard::guarded_copy(map, off, &mut b);
        let ns = t.elapsed().as_nanos() as u64;
        (n == 1).then_some(ns)
    }
}

impl Backend for Mapped {
    fn read_at(&self, off: u64, buf: &mut [u8]) -> Result<usize> {
        let Some(map) = &self.map else {
            return self.src.pread_full(off, buf);
        };
        let mlen = map.len() as u64;
        if off >= mlen || self.shrunk.load(Ordering::Relaxed) {
            return self.src.pread_full(off, buf);
        }
        let n = buf.len().min((mlen - off) as usize);
        let copied = guard::guarded_copy(map, off as usize, &mut buf[..n]);
        if copied < n {
            self.shrunk.store(true, Ordering::Relaxed);
        }
        if copied < n || n < buf.len() {
            // Truncated under us (copied < n) or asked past the mapped end:
            // the kernel's pread knows the file's current length.
            let rest = self
                .src
                .pread_full(off + copied as u64, &mut buf[copied..])?;
            return Ok(copied + rest);
        }
        Ok(n)
    }
}
