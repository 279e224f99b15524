//! `Direct`: `O_DIRECT` reads, no page cache. A request is widened to the
//! device's alignment and read through a per-thread bounce buffer of huge
//! pages (4 MiB; [`crate::sys::hugebuf`]), then the asked-for bytes are
//! copied out. Batches go through io_uring on the same descriptor.

use super::many::ReadReq;
use super::{Backend, ReadError, Result, Src};
use crate::sys::hugebuf::HugeBuf;
use std::cell::RefCell;
use std::fs::File;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::sync::Arc;

const BOUNCE: usize = 4 << 20;

thread_local! {
    static BOUNCE_BUF: RefCell<Option<HugeBuf>> = const { RefCell::new(None) };
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
        let a = crate::file::dio_alignment(&src.path).map_err(|e| unsupported(e.to_string()))?;
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

impl Backend for Direct {
    fn read_at(&self, off: u64, buf: &mut [u8]) -> Result<usize> {
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
