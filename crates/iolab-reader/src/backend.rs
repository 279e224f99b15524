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
use std::path::Path;
use std::sync::{Arc, OnceLock};

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
/// descriptor, and its length and device from one `fstat`, made when first
/// needed ([`Src::meta`]): at open for the techniques that size their work
/// by the file, later or never for `stream` and `auto` (a warm file read
/// once with one `pread` spent a tenth of its time in that `fstat`).
pub(crate) struct Src {
    pub(crate) path: SrcPath,
    pub(crate) file: File,
    meta: OnceLock<Meta>,
}

/// The path an open [`Src`] was opened with, for what it says of the
/// file: kept inline up to [`SrcPath::INLINE`] bytes (most paths), so an
/// open allocates nothing for it. A program that opens thousands of files
/// on many threads, each holding some open, finds no freed block of that
/// size in its thread's cache, and each allocation took the allocator's
/// shared lock.
pub(crate) struct SrcPath(smallvec::SmallVec<[u8; SrcPath::INLINE]>);

impl SrcPath {
    /// Bytes of a path held without an allocation.
    pub(crate) const INLINE: usize = 128;

    fn new(p: &Path) -> SrcPath {
        use std::os::unix::ffi::OsStrExt;
        SrcPath(smallvec::SmallVec::from_slice(p.as_os_str().as_bytes()))
    }
}

impl std::ops::Deref for SrcPath {
    type Target = Path;
    fn deref(&self) -> &Path {
        use std::os::unix::ffi::OsStrExt;
        Path::new(std::ffi::OsStr::from_bytes(&self.0))
    }
}

impl AsRef<Path> for SrcPath {
    fn as_ref(&self) -> &Path {
        self
    }
}

impl std::fmt::Debug for SrcPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self, f)
    }
}

/// What the `fstat` of an open [`Src`] says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Meta {
    /// Length, bytes.
    pub(crate) len: u64,
    /// `st_dev` (`Auto` checks its profile's device once per device,
    /// without another `fstat`).
    pub(crate) dev: u64,
}

impl Src {
    /// An open file whose length is not known yet.
    pub(crate) fn new(path: impl AsRef<Path>, file: File) -> Src {
        Src {
            path: SrcPath::new(path.as_ref()),
            file,
            meta: OnceLock::new(),
        }
    }

    /// Length and device, from one `fstat` the first time; refuses what
    /// cannot be read at offsets (a directory, FIFO, character device).
    pub(crate) fn meta(&self) -> Result<Meta> {
        if let Some(m) = self.meta.get() {
            return Ok(*m);
        }
        let m = meta_of(&self.file, &self.path)?;
        Ok(*self.meta.get_or_init(|| m))
    }

    /// Length, bytes, if the file was measured ([`Src::meta`] succeeded).
    pub(crate) fn known_len(&self) -> Option<u64> {
        self.meta.get().map(|m| m.len)
    }

    /// Length, bytes, once [`Src::meta`] has succeeded (every technique
    /// but `stream` is built after it); 0 before.
    pub(crate) fn len(&self) -> u64 {
        self.known_len().unwrap_or(0)
    }

    /// `pread` until `buf` is full or the file ends; returns the bytes
    /// read. A failed read of a file not measured yet says what the file
    /// is when that is why (`EISDIR` of a directory, `ESPIPE` of a FIFO).
    #[inline]
    pub(crate) fn pread_full(&self, off: u64, buf: &mut [u8]) -> Result<usize> {
        pread_full(&self.file, &self.path, off, buf).map_err(|e| self.refused_or(e))
    }

    /// `e`, or the refusal of what the file is when that is why a read
    /// failed (out of line: the read's fast path stays small).
    #[cold]
    #[inline(never)]
    fn refused_or(&self, e: ReadError) -> ReadError {
        match self.meta() {
            Err(refused @ ReadError::NotReadable { .. }) => refused,
            _ => e,
        }
    }
}

/// Length of an open regular file or block device, bytes, and the device
/// it is on (`st_dev`), from one `fstat`; anything else is refused.
fn meta_of(file: &File, path: &Path) -> Result<Meta> {
    use std::os::unix::fs::MetadataExt;
    let open_err = |e| ReadError::Open {
        path: path.to_path_buf(),
        source: e,
    };
    let md = file.metadata().map_err(open_err)?;
    if let Some(what) = unreadable_kind(md.file_type()) {
        return Err(ReadError::NotReadable {
            path: path.to_path_buf(),
            what,
        });
    }
    let len = if md.file_type().is_block_device() {
        use std::io::Seek;
        // Only `pread` uses this descriptor: its position does not matter.
        (&*file).seek(std::io::SeekFrom::End(0)).map_err(open_err)?
    } else {
        md.len()
    };
    Ok(Meta { len, dev: md.dev() })
}

/// `pread` on `file` until `buf` is full or the file ends.
///
/// Inlined, with the loop and the errors out of line: nearly every read
/// is one `pread` that fills the buffer, and each function its result
/// returns through after the system call costs a return the processor
/// predicts badly (the kernel's calls have overwritten its return-stack
/// predictor): cached 4 KiB reads through five more levels of calls took
/// 3 % longer on this kind of machine, about 6 ns a level.
#[inline]
pub(crate) fn pread_full(file: &File, path: &Path, off: u64, buf: &mut [u8]) -> Result<usize> {
    match file.read_at(buf, off) {
        Ok(n) if n == buf.len() => Ok(n),
        first => pread_rest(file, path, off, buf, first),
    }
}

/// The rest of [`pread_full`] after its first `pread` gave `first`
/// (short, failed or interrupted).
#[cold]
#[inline(never)]
fn pread_rest(
    file: &File,
    path: &Path,
    off: u64,
    buf: &mut [u8],
    first: std::io::Result<usize>,
) -> Result<usize> {
    let mut done = match first {
        Ok(0) => return Ok(0),
        Ok(n) => n,
        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => 0,
        Err(e) => return Err(ReadError::io(path, off, buf.len(), e)),
    };
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A file of `len` bytes, byte i = i % 251.
    fn file_of(dir: &Path, name: &str, len: usize) -> std::path::PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, (0..len).map(|i| (i % 251) as u8).collect::<Vec<u8>>()).unwrap();
        p
    }

    #[test]
    fn a_read_that_meets_the_end_returns_what_is_left_and_one_past_it_nothing() {
        let d = tempfile::tempdir().unwrap();
        let p = file_of(d.path(), "f", 10_000);
        let src = Src::new(&p, File::open(&p).unwrap());
        let mut buf = vec![0u8; 4096];
        // Whole: one pread fills it.
        assert_eq!(src.pread_full(100, &mut buf).unwrap(), 4096);
        assert!(buf
            .iter()
            .enumerate()
            .all(|(i, &b)| b == ((100 + i) % 251) as u8));
        // Short: the first pread stops at the end; what is left, in place.
        buf.fill(0);
        assert_eq!(src.pread_full(8_000, &mut buf).unwrap(), 2_000);
        assert!(buf[..2_000]
            .iter()
            .enumerate()
            .all(|(i, &b)| b == ((8_000 + i) % 251) as u8));
        assert!(
            buf[2_000..].iter().all(|&b| b == 0),
            "past the end untouched"
        );
        assert_eq!(src.pread_full(10_000, &mut buf).unwrap(), 0);
        assert_eq!(src.pread_full(1 << 40, &mut buf).unwrap(), 0);
    }

    #[test]
    fn a_failed_read_names_the_path_it_was_opened_with_short_or_long() {
        let d = tempfile::tempdir().unwrap();
        // One path held inline, one longer than the inline bytes.
        let long = d.path().join("x".repeat(SrcPath::INLINE + 40));
        std::fs::create_dir(&long).unwrap();
        for dir in [d.path().to_path_buf(), long] {
            let src = Src::new(&dir, File::open(&dir).unwrap());
            assert_eq!(&*src.path, dir.as_path());
            let e = src.pread_full(0, &mut [0u8; 16]).unwrap_err().to_string();
            assert!(e.contains(&*dir.to_string_lossy()), "{e}");
            assert!(e.contains("directory"), "{e}");
        }
    }
}
