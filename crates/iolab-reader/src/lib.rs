//! # iolab-reader: read files the way this machine reads fastest
//!
//! The reading library: one [`Reader`] API over every way this machine has
//! to read a file, an adaptive policy ([`Technique::Auto`]) calibrated by
//! `iolab tune`, batches of reads in one call ([`Reader::read_many`]) and
//! whole files ([`read_all`], [`read_into`], and the raw path in [`whole`]).
//! It reaches the kernel only through the `iolab` crate; its one `unsafe`
//! edge is the CUDA module ([`gpu`], feature `cuda`), which moves files
//! into GPU memory. The [`safetensors`] loader reads model checkpoints
//! into one host or device allocation.
//!
//! ```
//! use iolab_reader::{Options, Reader, Technique};
//! # let dir = tempfile::tempdir().unwrap();
//! # let path = dir.path().join("data");
//! std::fs::write(&path, b"hello, reader").unwrap();
//! let r = Reader::open(&path, Options::new(Technique::Mapped)).unwrap();
//! let mut buf = [0u8; 6];
//! r.read_exact_at(7, &mut buf).unwrap();
//! assert_eq!(&buf, b"reader");
//! assert_eq!(r.len().unwrap(), 13);
//! // Reads that cross the end are short; past the end they are empty.
//! assert_eq!(r.read_at(10, &mut [0u8; 8]).unwrap(), 3);
//! assert_eq!(r.read_at(99, &mut [0u8; 8]).unwrap(), 0);
//! ```
//!
//! A `Reader` is `Send + Sync`: share it (`&Reader` or `Arc<Reader>`)
//! between threads and call `read_at` concurrently; no technique takes a
//! lock shared by all reads.
#![deny(unsafe_code)]

mod around;
mod auto;
mod backend;
mod buffered;
mod counter;
mod direct;
mod error;
mod first_read;
pub mod gpu;
pub mod guard;
mod many;
mod mapped;
pub mod policy;
pub mod profile;
mod request;
pub mod safetensors;
mod siblings;
mod stream;
mod technique;
mod thesis;
pub mod tune;
mod uring;
pub mod warn;
pub mod whole;
pub mod xor;

pub use error::{ReadError, Result};
// What the techniques share, named here so each can say `super::Src`.
pub(crate) use backend::{check_kind, Backend, Src};
pub use backend::{mem_available, Hints, Options};
pub use request::ReadReq;
pub use technique::{ParseTechniqueError, Technique};
pub use whole::profiled::{
    plan_from, read_all, read_into, read_into_with, read_whole_with, WholePlan,
};

use std::path::Path;
use std::sync::Arc;

/// A file opened for reading with one [`Technique`].
pub struct Reader {
    technique: Technique,
    imp: Imp,
}

/// A technique's implementation, matched rather than called through a
/// pointer for `stream` and `auto`, which most opens use: `stream` inline
/// (no allocation of its own, and a read inlined down to its `pread`),
/// `auto` boxed (held inline, its 264 bytes were copied at each move of
/// the `Reader`, and replays of a cached tree walk and of Python's
/// imports took 2 to 3 % longer than with the allocation).
///
/// The `Reader` reaches the open file through the implementation, which
/// holds it anyway: a second reference kept by the `Reader` cost each
/// `stream` and `auto` open an atomic count up, and each drop one down.
enum Imp {
    Stream(stream::Stream),
    Auto(Box<first_read::Auto>),
    Other(Arc<Src>, Box<dyn Backend>),
}

impl Imp {
    /// The implementation behind the one interface.
    #[inline]
    fn get(&self) -> &dyn Backend {
        match self {
            Imp::Stream(s) => s,
            Imp::Auto(a) => &**a,
            Imp::Other(_, b) => &**b,
        }
    }

    /// The open file.
    #[inline]
    fn src(&self) -> &Arc<Src> {
        match self {
            Imp::Stream(s) => s.src(),
            Imp::Auto(a) => a.src(),
            Imp::Other(src, _) => src,
        }
    }
}

impl std::fmt::Debug for Reader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reader")
            .field("path", &self.imp.src().path)
            // None until measured (see `Reader::len`).
            .field("len", &self.imp.src().known_len())
            .field("technique", &self.technique)
            .finish()
    }
}

impl Reader {
    /// Opens `path` for reading with `opts.technique`.
    pub fn open(path: impl AsRef<Path>, opts: Options) -> Result<Reader> {
        let path = path.as_ref();
        // One walk of the path: open first (O_NONBLOCK, so a FIFO does not
        // block it), then the descriptor's own fstat says what it is and
        // how long, when that is first needed (see `Reader::len`). A stat
        // of the path before the open cost a replay of python's imports
        // (one small read per file) a third of its time.
        let file = match std::fs::OpenOptions::new()
            .read(true)
            .custom_flags_nonblock()
            .open(path)
        {
            Ok(f) => f,
            Err(e) => {
                // A socket or a vanished path: say which.
                check_kind(path)?;
                return Err(ReadError::Open {
                    path: path.to_path_buf(),
                    source: e,
                });
            }
        };
        let src = Arc::new(Src::new(path, file));
        if !matches!(opts.technique, Technique::Stream | Technique::Auto) {
            src.meta()?;
        }
        let technique = opts.technique;
        let imp = build(src, technique, opts)?;
        Ok(Reader { technique, imp })
    }

    /// Length of the file, bytes, from the one `fstat` of this reader:
    /// made at open by the techniques that size their work by the file,
    /// and on first need by `stream` and `auto` (a file read once with
    /// one `pread` need not pay for it). That `fstat` refuses what cannot
    /// be read at offsets (a directory, FIFO or character device): at
    /// open, or here and at the first read for `stream` and `auto`.
    pub fn len(&self) -> Result<u64> {
        Ok(self.imp.src().meta()?.len)
    }

    /// Whether the file is empty (see [`Reader::len`]).
    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// The path it was opened with.
    pub fn path(&self) -> &Path {
        &self.imp.src().path
    }

    /// The technique it was opened with.
    pub fn technique(&self) -> Technique {
        self.technique
    }

    /// Reads up to `buf.len()` bytes at `offset`; fewer only when the file
    /// ends first (0 at or past the end).
    #[inline]
    pub fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if offset.checked_add(buf.len() as u64).is_none() {
            return Err(ReadError::TooLarge {
                path: self.imp.src().path.to_path_buf(),
                what: format!(
                    "a read of {} bytes at offset {offset} passes the largest offset",
                    buf.len()
                ),
            });
        }
        // Matched, not through `get`: each arm's call is direct (and the
        // `stream` one inlined down to its `pread`).
        match &self.imp {
            Imp::Stream(s) => s.read_at(offset, buf),
            Imp::Auto(a) => a.read_at(offset, buf),
            Imp::Other(_, b) => b.read_at(offset, buf),
        }
    }

    /// Whether `Auto` (its run-time guard) stopped using the technique it
    /// chose for this file and reads it with `pread` now, and why; None
    /// for every other technique, while the choice holds, and once a trial
    /// of the technique after the fall back took it back (a trial under
    /// way still shows the fall back).
    pub fn switched(&self) -> Option<guard::Switch> {
        self.imp.get().switched()
    }

    /// Reads exactly `buf.len()` bytes at `offset`, or fails naming where
    /// the file ended.
    pub fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let n = self.read_at(offset, buf)?;
        if n < buf.len() {
            return Err(ReadError::UnexpectedEof {
                path: self.imp.src().path.to_path_buf(),
                offset,
                wanted: buf.len(),
                got: n,
            });
        }
        Ok(())
    }

    /// Reads every request of the batch (each result lands in its
    /// [`ReadReq::result`]) and returns when all are done. Techniques with
    /// depth (io_uring) keep many in flight and merge neighbours into one
    /// vectored read; the others read them in turn.
    pub fn read_many(&self, reqs: &mut [ReadReq<'_>]) {
        self.read_many_with(reqs, &mut |_, _| {})
    }

    /// Like [`read_many`](Self::read_many), handing each request to `done`
    /// (with its index) as it completes, in completion order.
    pub fn read_many_with(
        &self,
        reqs: &mut [ReadReq<'_>],
        done: &mut dyn FnMut(usize, &ReadReq<'_>),
    ) {
        for r in reqs.iter_mut() {
            r.result = None;
        }
        self.imp.get().read_many(reqs, done)
    }
}

trait NonBlock {
    fn custom_flags_nonblock(&mut self) -> &mut Self;
}

impl NonBlock for std::fs::OpenOptions {
    /// O_NONBLOCK does not change reads of regular files or block devices;
    /// it keeps `open` of a FIFO from hanging (the descriptor's kind then
    /// refuses it).
    fn custom_flags_nonblock(&mut self) -> &mut Self {
        use std::os::unix::fs::OpenOptionsExt;
        self.custom_flags(libc::O_NONBLOCK)
    }
}

fn build(src: Arc<Src>, t: Technique, opts: Options) -> Result<Imp> {
    let other = match t {
        Technique::Stream => return Ok(Imp::Stream(stream::Stream::new(src))),
        Technique::Auto => return Ok(Imp::Auto(Box::new(first_read::Auto::new(src, opts)))),
        Technique::Buffered { block } => {
            Box::new(buffered::Buffered::new(src.clone(), block)) as Box<dyn Backend>
        }
        Technique::Mapped => Box::new(mapped::Mapped::new(src.clone())?),
        Technique::Direct => Box::new(direct::Direct::new(src.clone())?),
        Technique::Uring { depth } => Box::new(uring::UringReader::new(src.clone(), depth)),
        Technique::ThesisRules => Box::new(thesis::Thesis::new(src.clone(), &opts)?),
    };
    Ok(Imp::Other(src, other))
}
