//! What every technique shares: the caller's [`Options`] and [`Hints`],
//! the open file ([`Src`]), the [`Backend`] trait each technique
//! implements, and the checks and helpers they all use. The techniques
//! build on this file; `mod.rs` builds on them.

use super::error::{ReadError, Result};
use super::profile;
use super::request::ReadReq;
use super::technique::Technique;
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

/// How to open a [`Reader`](super::Reader).
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
/// descriptor, and the length and device seen at open.
pub(crate) struct Src {
    pub(crate) path: PathBuf,
    pub(crate) file: File,
    pub(crate) len: u64,
    /// `st_dev` of the open file (`Auto` checks its profile's device once
    /// per device, without another `fstat`).
    pub(crate) dev: u64,
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

    /// Why and when an adaptive technique stopped using its choice for
    /// this file (the run-time guard of `Auto`); None for the others.
    fn switched(&self) -> Option<super::guard::Switch> {
        None
    }

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

/// What a file of type `ft` is, when it cannot be read at offsets (None
/// for a regular file or a block device).
pub(crate) fn unreadable_kind(ft: std::fs::FileType) -> Option<&'static str> {
    if ft.is_block_device() {
        return None;
    }
    iolab::file::special_kind(ft)
}

/// Refuses what cannot be read at offsets, before opening it (opening a
/// FIFO would block).
pub(crate) fn check_kind(path: &Path) -> Result<()> {
    let md = std::fs::metadata(path).map_err(|e| ReadError::Open {
        path: path.to_path_buf(),
        source: e,
    })?;
    match unreadable_kind(md.file_type()) {
        None => Ok(()),
        Some(what) => Err(ReadError::NotReadable {
            path: path.to_path_buf(),
            what,
        }),
    }
}

/// MemAvailable from /proc/meminfo, bytes (None if unreadable).
pub fn mem_available() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/meminfo").ok()?;
    let l = s.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = l.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}
