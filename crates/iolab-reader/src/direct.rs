//! `Direct`: `O_DIRECT` reads, no page cache. A request is widened to the
//! device's alignment and read through a per-thread bounce buffer of huge
//! pages (4 MiB; [`iolab::kernel::hugebuf`]), then the asked-for bytes are
//! copied out. Batches go through io_uring on the same descriptor.

use super::many::ReadReq;
use super::{Backend, ReadError, Result, Src};
use iolab::kernel::hugebuf::HugeBuf;
use std::cell::RefCell;
use std::fs::File;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
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
}

/// The O_DIRECT technique.
pub(crate) struct Direct {
    src: Arc<Src>,
    /// The same file opened with O_DIRECT.
    dfile: File,
    align: usize,
}

impl Direct {
    pub(crate) fn new(src: Arc<Src>) -> Result<Self> {
        let unsupported = |why: String| ReadError::Unsupported {
            path: src.path.clone(),
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
                        path: src.path.clone(),
                        source: e,
                    }
                }
            })?;
        let a = iolab::file::dio_alignment(&src.path).map_err(|e| unsupported(e.to_string()))?;
        Ok(Direct {
            src,
            dfile,
            align: a.required.max(512),
        })
    }

    /// Reads `buf` at `off` (any alignment) through the bounce buffer.
    fn read_bounced(&self, bounce: &mut HugeBuf, off: u64, buf: &mut [u8]) -> Result<usize> {
        let a = self.align as u64;
        let mut done = 0usize;
        while done < buf.len() {
            let want_off = off + done as u64;
            let start = want_off / a * a;
            let skip = (want_off - start) as usize;
            let want = (buf.len() - done + skip).div_ceil(self.align) * self.align;
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
                    path: self.src.path.clone(),
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
                path: src.path.clone(),
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
