//! `Direct`: `O_DIRECT` reads, no page cache. A request is widened to the
//! device's alignment and read through a per-thread bounce buffer of huge
//! pages (4 MiB; [`iolab::kernel::hugebuf`]), then the asked-for bytes are
//! copied out. Batches go through io_uring on the same descriptor.

use super::many::ReadReq;
use super::{Backend, ReadError, Result, Src};
use iolab::kernel::hugebuf::HugeBuf;
use std::cell::{Cell, RefCell};
use std::fs::File;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

const BOUNCE: usize = 4 << 20;
/// Requests at least this large are read in pieces of this size, several
/// in flight (io_uring), into per-thread huge-page slots.
const PIECE: usize = 1 << 20;
/// Pieces in flight for large requests.
const DEPTH: usize = 8;

thread_local! {
    static BOUNCE_BUF: RefCell<Option<HugeBuf>> = const { RefCell::new(None) };
    static SLOTS: RefCell<Option<HugeBuf>> = const { RefCell::new(None) };
    /// What this thread's bounce buffer holds past the end of its last
    /// request, when that read kept a tail ([`Direct::keep_tails`]).
    static KEPT: Cell<Kept> = const { Cell::new(Kept::NONE) };
}

/// Bytes `[from, to)` of the file of the [`Direct`] numbered `id`, in the
/// bounce buffer from `at` (the file offset of its first byte).
#[derive(Clone, Copy)]
struct Kept {
    id: u64,
    at: u64,
    from: u64,
    to: u64,
}

impl Kept {
    const NONE: Kept = Kept {
        id: 0,
        at: 0,
        from: 0,
        to: 0,
    };
}

/// Numbers every [`Direct`] (from 1), so a kept tail is never taken for
/// another file's.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The O_DIRECT technique.
pub(crate) struct Direct {
    src: Arc<Src>,
    /// The same file opened with O_DIRECT.
    dfile: File,
    align: usize,
    id: u64,
    /// Read [`policy::DIRECT_TAIL`](super::policy::DIRECT_TAIL) bytes past
    /// each request and keep them for the next read ([`Direct::take_kept`]).
    keep: AtomicBool,
}

impl Direct {
    pub(crate) fn new(src: Arc<Src>) -> Result<Self> {
        let unsupported = |why: String| ReadError::Unsupported {
            path: src.path.to_path_buf(),
            technique: "direct".into(),
            why,
        };
        let dfile = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECT)
            .open(&src.path)
            .map_err(|e| {
                if e.raw_os_error() == Some(libc::EINVAL) {
                    unsupported("the file system refuses O_DIRECT".into())
                } else {
                    ReadError::Open {
                        path: src.path.to_path_buf(),
                        source: e,
                    }
                }
            })?;
        let a = iolab::file::dio_alignment(&src.path).map_err(|e| unsupported(e.to_string()))?;
        Ok(Direct {
            src,
            dfile,
            align: a.required.max(512),
            id: NEXT_ID.fetch_add(1, Relaxed),
            keep: AtomicBool::new(false),
        })
    }

    /// Whether the next reads also read
    /// [`policy::DIRECT_TAIL`](super::policy::DIRECT_TAIL) bytes past their
    /// end (in the same request) and keep them for [`Direct::take_kept`].
    pub(crate) fn keep_tails(&self, on: bool) {
        if self.keep.load(Relaxed) != on {
            self.keep.store(on, Relaxed);
        }
    }

    /// Copies a read of `buf.len()` bytes at `off` out of the tail this
    /// thread's last read of this file kept, when it lies within it; once
    /// (a read of this file lets the tail go either way). The bytes are as
    /// that read found them, a moment before: what a buffered reader's own
    /// buffer holds.
    pub(crate) fn take_kept(&self, off: u64, buf: &mut [u8]) -> Option<usize> {
        let k = KEPT.with(|c| c.get());
        if k.id != self.id {
            return None;
        }
        KEPT.with(|c| c.set(Kept::NONE));
        let end = off.checked_add(buf.len() as u64)?;
        if off < k.from || end > k.to {
            return None;
        }
        BOUNCE_BUF.with(|c| {
            let mut c = c.borrow_mut();
            let bounce = c.as_mut()?;
            let at = (off - k.at) as usize;
            buf.copy_from_slice(&bounce.as_mut_slice()[at..at + buf.len()]);
            Some(buf.len())
        })
    }

    /// Reads `buf` at `off` (any alignment) through the bounce buffer.
    fn read_bounced(&self, bounce: &mut HugeBuf, off: u64, buf: &mut [u8]) -> Result<usize> {
        let a = self.align as u64;
        let extra = if self.keep.load(Relaxed) {
            super::policy::DIRECT_TAIL
        } else {
            0
        };
        // The bounce buffer is about to change: no tail is kept in it now.
        KEPT.with(|c| c.set(Kept::NONE));
        let mut done = 0usize;
        while done < buf.len() {
            let want_off = off + done as u64;
            let start = want_off / a * a;
            let skip = (want_off - start) as usize;
            let want = (buf.len() - done + skip + extra).div_ceil(self.align) * self.align;
            let n = want.min(bounce.len());
            let b = &mut bounce.as_mut_slice()[..n];
            let got = loop {
                match self.dfile.read_at(b, start) {
                    Ok(g) => break g,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(ReadError::io(&self.src.path, start, n, e)),
                }
            };
            if got <= skip {
                break;
            }
            let take = (got - skip).min(buf.len() - done);
            buf[done..done + take].copy_from_slice(&b[skip..skip + take]);
            done += take;
            if extra > 0 && done == buf.len() && got > skip + take {
                let kept = Kept {
                    id: self.id,
                    at: start,
                    from: off + done as u64,
                    to: start + got as u64,
                };
                KEPT.with(|c| c.set(kept));
            }
            if got < n {
                break; // end of file
            }
        }
        Ok(done)
    }
}

impl Direct {
    /// A large request: aligned pieces through io_uring, copied out in
    /// order. None if io_uring is unavailable.
    fn read_large(&self, off: u64, buf: &mut [u8]) -> Option<Result<usize>> {
        let a = self.align as u64;
        let start = off / a * a;
        let end = (off + buf.len() as u64).min(self.src.len().max(off));
        let end = end.div_ceil(a) * a;
        SLOTS.with(|c| {
            let mut c = c.borrow_mut();
            if c.is_none() {
                *c = HugeBuf::new(PIECE * DEPTH).ok();
            }
            let slots = c.as_mut()?;
            let mut done = 0usize;
            let r = iolab::kernel::ring::stream_file(
                &self.dfile,
                start,
                end,
                PIECE,
                DEPTH as u32,
                slots.as_mut_slice(),
                true,
                &mut |poff, bytes| {
                    // This piece covers [poff, poff+len); copy the part we want.
                    let lo = off.max(poff);
                    let hi = (off + buf.len() as u64).min(poff + bytes.len() as u64);
                    if hi > lo {
                        let dst = (lo - off) as usize;
                        let src = (lo - poff) as usize;
                        let n = (hi - lo) as usize;
                        buf[dst..dst + n].copy_from_slice(&bytes[src..src + n]);
                        done = done.max(dst + n);
                    }
                    true
                },
            );
            match r {
                Ok(_) => Some(Ok(done)),
                Err(iolab::kernel::ring::StreamError::Setup) => None,
                Err(iolab::kernel::ring::StreamError::Read(o, e)) => {
                    Some(Err(ReadError::io(&self.src.path, o, PIECE, e)))
                }
            }
        })
    }
}

impl Backend for Direct {
    fn read_at(&self, off: u64, buf: &mut [u8]) -> Result<usize> {
        if buf.len() >= 2 * PIECE && off < self.src.len() {
            if let Some(r) = self.read_large(off, buf) {
                return r;
            }
        }
        BOUNCE_BUF.with(|c| {
            let mut c = c.borrow_mut();
            if c.is_none() {
                *c = Some(HugeBuf::new(BOUNCE).map_err(|e| ReadError::Unsupported {
                    path: self.src.path.to_path_buf(),
                    technique: "direct".into(),
                    why: e.to_string(),
                })?);
            }
            self.read_bounced(c.as_mut().expect("set above"), off, buf)
        })
    }

    fn read_many(&self, reqs: &mut [ReadReq<'_>], done: &mut dyn FnMut(usize, &ReadReq<'_>)) {
        // Synchronous by nature; a small pool of threads overlaps the device's
        // latency without a page cache.
        super::many::via_threads(self, reqs, 4, done)
    }
}

/// Sequential reads of a large cold file: O_DIRECT pieces read ahead of
/// the caller through io_uring ([`iolab::kernel::ahead::Ahead`]), requests
/// copied out of them. `Auto`'s choice [`Choice::Ahead`](super::policy::Choice::Ahead).
/// The stream (a ring and `chunk * depth` bytes of buffers) is made at the
/// first read and let go once a read reaches the file's end, so a program
/// that keeps many files open after reading them holds no buffers for them.
pub(crate) struct DirectAhead {
    src: Arc<Src>,
    chunk: usize,
    depth: usize,
    inner: std::sync::Mutex<Option<iolab::kernel::ahead::Ahead>>,
}

impl DirectAhead {
    /// `chunk`-byte pieces (rounded to the O_DIRECT alignment), `depth` in
    /// flight. Fails where O_DIRECT is refused.
    pub(crate) fn new(src: Arc<Src>, chunk: usize, depth: usize) -> Result<Self> {
        let d = Direct::new(src.clone())?;
        let chunk = chunk.max(d.align).div_ceil(d.align) * d.align;
        let inner = Self::stream(&src, d.dfile, chunk, depth)?;
        Ok(DirectAhead {
            src,
            chunk,
            depth,
            inner: std::sync::Mutex::new(Some(inner)),
        })
    }

    fn stream(
        src: &Src,
        dfile: File,
        chunk: usize,
        depth: usize,
    ) -> Result<iolab::kernel::ahead::Ahead> {
        iolab::kernel::ahead::Ahead::new(dfile, src.len(), chunk, depth).map_err(|e| {
            ReadError::Unsupported {
                path: src.path.to_path_buf(),
                technique: "direct read-ahead".into(),
                why: e.to_string(),
            }
        })
    }
}

impl DirectAhead {
    /// Serves a read out of order from the stream's window when all of it
    /// is there (see [`iolab::kernel::ahead::Ahead::read_within`]),
    /// without moving the stream; None when it is not (or there is no
    /// stream yet).
    pub(crate) fn read_within(&self, off: u64, buf: &mut [u8]) -> Option<Result<usize>> {
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let a = g.as_mut()?;
        match a.read_within(off, buf) {
            Ok(Some(n)) => Some(Ok(n)),
            Ok(None) => None,
            Err(e) => Some(Err(ReadError::io(&self.src.path, off, buf.len(), e))),
        }
    }
}

impl Backend for DirectAhead {
    fn read_at(&self, off: u64, buf: &mut [u8]) -> Result<usize> {
        if off >= self.src.len() {
            return Ok(0);
        }
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if g.is_none() {
            let d = Direct::new(self.src.clone())?;
            *g = Some(Self::stream(&self.src, d.dfile, self.chunk, self.depth)?);
        }
        let a = g.as_mut().expect("made above");
        let n = a
            .read_at(off, buf)
            .map_err(|e| ReadError::io(&self.src.path, off, buf.len(), e))?;
        if off + n as u64 >= self.src.len() {
            *g = None; // read to the end: let the buffers go
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::DIRECT_TAIL;

    fn direct_of(path: &std::path::Path) -> Direct {
        let src = Arc::new(Src::new(path, File::open(path).unwrap()));
        src.meta().unwrap();
        Direct::new(src).unwrap()
    }

    #[test]
    fn a_kept_tail_serves_the_next_read_within_it_once_and_only_for_its_file() {
        let d = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..1u32 << 20).map(|i| (i % 251) as u8).collect();
        let (pa, pb) = (d.path().join("a"), d.path().join("b"));
        std::fs::write(&pa, &data).unwrap();
        std::fs::write(&pb, vec![7u8; data.len()]).unwrap();
        let (a, b) = (direct_of(&pa), direct_of(&pb));
        let (off, len) = (12_345usize, 100_000usize);
        let mut big = vec![0u8; len];
        let mut tail = vec![0u8; 4096];
        let end = (off + len) as u64;
        // Not asked to keep: nothing kept.
        assert_eq!(a.read_at(off as u64, &mut big).unwrap(), len);
        assert!(big[..] == data[off..off + len]);
        assert_eq!(a.take_kept(end, &mut tail), None);
        // Asked to: the next read at the end is copied, once, and only by
        // the file that read it.
        a.keep_tails(true);
        assert_eq!(a.read_at(off as u64, &mut big).unwrap(), len);
        assert!(big[..] == data[off..off + len]);
        assert_eq!(b.take_kept(end, &mut tail), None, "another file's tail");
        assert_eq!(a.take_kept(end, &mut tail), Some(4096));
        assert!(tail[..] == data[off + len..off + len + 4096]);
        assert_eq!(a.take_kept(end, &mut tail), None, "served twice");
        // A read larger than what was kept is not served.
        assert_eq!(a.read_at(off as u64, &mut big).unwrap(), len);
        let mut large = vec![0u8; 2 * DIRECT_TAIL];
        assert_eq!(a.take_kept(end, &mut large), None);
        // Another read's bounce lets the tail go.
        assert_eq!(a.read_at(off as u64, &mut big).unwrap(), len);
        assert_eq!(b.read_at(0, &mut big).unwrap(), len);
        assert_eq!(
            a.take_kept(end, &mut tail),
            None,
            "a tail outlived its bytes"
        );
        // At the file's end only what the file holds is kept.
        let n = data.len();
        let mut last = vec![0u8; 4000];
        assert_eq!(a.read_at((n - 5000) as u64, &mut last).unwrap(), 4000);
        let mut rest = vec![0u8; 1000];
        assert_eq!(a.take_kept((n - 1000) as u64, &mut rest), Some(1000));
        assert!(rest[..] == data[n - 1000..]);
        assert_eq!(a.read_at((n - 5000) as u64, &mut last).unwrap(), 4000);
        assert_eq!(
            a.take_kept((n - 1000) as u64, &mut tail),
            None,
            "past the end"
        );
    }
}
