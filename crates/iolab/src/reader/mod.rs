//! The reading library: one [`Reader`] API over every way this machine has
//! to read a file, an adaptive policy ([`Technique::Auto`]) calibrated by
//! `iolab tune`, batches of reads in one call ([`Reader::read_many`]) and
//! whole files ([`read_all`], [`read_into`]).
//!
//! ```
//! use iolab::reader::{Options, Reader, Technique};
//! # let dir = tempfile::tempdir().unwrap();
//! # let path = dir.path().join("data");
//! std::fs::write(&path, b"hello, reader").unwrap();
//! let r = Reader::open(&path, Options::new(Technique::Mapped)).unwrap();
//! let mut buf = [0u8; 6];
//! r.read_exact_at(7, &mut buf).unwrap();
//! assert_eq!(&buf, b"reader");
//! assert_eq!(r.len(), 13);
//! // Reads that cross the end are short; past the end they are empty.
//! assert_eq!(r.read_at(10, &mut [0u8; 8]).unwrap(), 3);
//! assert_eq!(r.read_at(99, &mut [0u8; 8]).unwrap(), 0);
//! ```
//!
//! A `Reader` is `Send + Sync`: share it (`&Reader` or `Arc<Reader>`)
//! between threads and call `read_at` concurrently; no technique takes a
//! lock shared by all reads.

mod auto;
mod buffered;
mod direct;
mod error;
mod many;
mod mapped;
pub mod policy;
pub mod profile;
mod stream;
mod technique;
mod thesis;
mod uring;
mod whole;

pub use error::{ReadError, Result};
pub use many::ReadReq;
pub use technique::{ParseTechniqueError, Technique};
pub use whole::{plan_from, read_all, read_into, read_whole_with, WholePlan};

use std::fs::File;
use std::os::unix::fs::{FileExt, FileTypeExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What the caller knows about how it will read the file. Only
/// [`Technique::ThesisRules`] uses these: they are the inputs of the
/// thesis's `swapFlag`, which its AdaptiveReader takes from the developer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hints {
    /// The reads will be at random (non-sequential) offsets.
    pub random: bool,
    /// The fraction of the file expected to be read (0.0..=1.0).
    pub expected_fraction: f64,
}

impl Default for Hints {
    /// As the thesis's own benchmark set them: random, most of the file.
    fn default() -> Self {
        Hints {
            random: true,
            expected_fraction: 1.0,
        }
    }
}

/// How to open a [`Reader`].
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The technique (default [`Technique::Auto`]).
    pub technique: Technique,
    /// The caller's expectations (used by [`Technique::ThesisRules`]).
    pub hints: Hints,
    /// The profile `Auto` decides with; `None` loads the one at
    /// [`profile::default_path`] (or the built-in defaults).
    pub profile: Option<Arc<profile::Profile>>,
    /// Memory the reader may assume is free for the page cache, bytes;
    /// `None` reads `MemAvailable` from /proc/meminfo. Lets a benchmark
    /// pretend the machine is smaller than it is.
    pub memory_budget: Option<u64>,
}

impl Options {
    /// Options for one technique, everything else default.
    pub fn new(technique: Technique) -> Self {
        Options {
            technique,
            ..Default::default()
        }
    }

    /// Sets the hints.
    pub fn hints(mut self, h: Hints) -> Self {
        self.hints = h;
        self
    }

    /// Sets the profile.
    pub fn profile(mut self, p: Arc<profile::Profile>) -> Self {
        self.profile = Some(p);
        self
    }

    /// Sets the memory budget.
    pub fn memory_budget(mut self, bytes: u64) -> Self {
        self.memory_budget = Some(bytes);
        self
    }
}

/// The open file every technique shares: its path (for errors), a plain
/// descriptor and the length seen at open.
pub(crate) struct Src {
    pub(crate) path: PathBuf,
    pub(crate) file: File,
    pub(crate) len: u64,
}

impl Src {
    /// `pread` until `buf` is full or the file ends; returns the bytes read.
    pub(crate) fn pread_full(&self, off: u64, buf: &mut [u8]) -> Result<usize> {
        pread_full(&self.file, &self.path, off, buf)
    }
}

/// `pread` on `file` until `buf` is full or the file ends.
pub(crate) fn pread_full(file: &File, path: &Path, off: u64, buf: &mut [u8]) -> Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        let Some(at) = off.checked_add(done as u64) else {
            break;
        };
        match file.read_at(&mut buf[done..], at) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(ReadError::io(path, at, buf.len() - done, e)),
        }
    }
    Ok(done)
}

/// One technique's implementation.
pub(crate) trait Backend: Send + Sync {
    /// Reads into `buf` at `off`, filling it unless the file ends first.
    fn read_at(&self, off: u64, buf: &mut [u8]) -> Result<usize>;

    /// Reads a batch; the default does them one after another.
    #[allow(clippy::needless_range_loop)] // done(i, &reqs[i]) after each mutation
    fn read_many(&self, reqs: &mut [ReadReq<'_>], done: &mut dyn FnMut(usize, &ReadReq<'_>)) {
        for i in 0..reqs.len() {
            let r = &mut reqs[i];
            r.result = Some(self.read_at(r.offset, r.buf));
            done(i, &reqs[i]);
        }
    }
}

/// A file opened for reading with one [`Technique`].
pub struct Reader {
    src: Arc<Src>,
    technique: Technique,
    imp: Box<dyn Backend>,
}

impl std::fmt::Debug for Reader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reader")
            .field("path", &self.src.path)
            .field("len", &self.src.len)
            .field("technique", &self.technique)
            .finish()
    }
}

/// Refuses what cannot be read at offsets, before opening it (opening a
/// FIFO would block).
fn check_kind(path: &Path) -> Result<()> {
    let md = std::fs::metadata(path).map_err(|e| ReadError::Open {
        path: path.to_path_buf(),
        source: e,
    })?;
    let ft = md.file_type();
    let what = if ft.is_file() || ft.is_block_device() {
        return Ok(());
    } else if ft.is_dir() {
        "a directory"
    } else if ft.is_fifo() {
        "a FIFO"
    } else if ft.is_socket() {
        "a socket"
    } else if ft.is_char_device() {
        "a character device"
    } else {
        "not a regular file"
    };
    Err(ReadError::NotReadable {
        path: path.to_path_buf(),
        what,
    })
}

impl Reader {
    /// Opens `path` for reading with `opts.technique`.
    pub fn open(path: impl AsRef<Path>, opts: Options) -> Result<Reader> {
        let path = path.as_ref();
        check_kind(path)?;
        let open_err = |e| ReadError::Open {
            path: path.to_path_buf(),
            source: e,
        };
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags_nonblock()
            .open(path)
            .map_err(open_err)?;
        // The length from the open descriptor: a second lookup of the path
        // cost a replay of 12,500 small files more than its reads did.
        let len = length_of(&file).map_err(open_err)?;
        let src = Arc::new(Src {
            path: path.to_path_buf(),
            file,
            len,
        });
        let imp = build(&src, opts.technique, &opts)?;
        Ok(Reader {
            src,
            technique: opts.technique,
            imp,
        })
    }

    /// Length of the file when it was opened, bytes.
    pub fn len(&self) -> u64 {
        self.src.len
    }

    /// Whether the file was empty when opened.
    pub fn is_empty(&self) -> bool {
        self.src.len == 0
    }

    /// The path it was opened with.
    pub fn path(&self) -> &Path {
        &self.src.path
    }

    /// The technique it was opened with.
    pub fn technique(&self) -> Technique {
        self.technique
    }

    /// Reads up to `buf.len()` bytes at `offset`; fewer only when the file
    /// ends first (0 at or past the end).
    pub fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if offset.checked_add(buf.len() as u64).is_none() {
            return Err(ReadError::TooLarge {
                path: self.src.path.clone(),
                what: format!(
                    "a read of {} bytes at offset {offset} passes the largest offset",
                    buf.len()
                ),
            });
        }
        self.imp.read_at(offset, buf)
    }

    /// Reads exactly `buf.len()` bytes at `offset`, or fails naming where
    /// the file ended.
    pub fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let n = self.read_at(offset, buf)?;
        if n < buf.len() {
            return Err(ReadError::UnexpectedEof {
                path: self.src.path.clone(),
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
        self.imp.read_many(reqs, done)
    }
}

/// Length of an open regular file or block device, bytes.
fn length_of(file: &File) -> std::io::Result<u64> {
    let md = file.metadata()?;
    if md.file_type().is_block_device() {
        use std::io::Seek;
        // Only `pread` uses this descriptor: its position does not matter.
        return (&*file).seek(std::io::SeekFrom::End(0));
    }
    Ok(md.len())
}

trait NonBlock {
    fn custom_flags_nonblock(&mut self) -> &mut Self;
}

impl NonBlock for std::fs::OpenOptions {
    /// O_NONBLOCK does not change reads of regular files or block devices;
    /// it keeps `open` from hanging if the path became a FIFO after the check.
    fn custom_flags_nonblock(&mut self) -> &mut Self {
        use std::os::unix::fs::OpenOptionsExt;
        self.custom_flags(libc::O_NONBLOCK)
    }
}

fn build(src: &Arc<Src>, t: Technique, opts: &Options) -> Result<Box<dyn Backend>> {
    Ok(match t {
        Technique::Stream => Box::new(stream::Stream::new(src.clone())),
        Technique::Buffered { block } => Box::new(buffered::Buffered::new(src.clone(), block)),
        Technique::Mapped => Box::new(mapped::Mapped::new(src.clone())?),
        Technique::Direct => Box::new(direct::Direct::new(src.clone())?),
        Technique::Uring { depth } => Box::new(uring::UringReader::new(src.clone(), depth)),
        Technique::ThesisRules => Box::new(thesis::Thesis::new(src.clone(), opts)?),
        Technique::Auto => Box::new(auto::Auto::new(src.clone(), opts)?),
    })
}

/// MemAvailable from /proc/meminfo, bytes (None if unreadable).
pub fn mem_available() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/meminfo").ok()?;
    let l = s.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = l.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}
