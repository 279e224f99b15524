//! `pread`: one positioned read per op, the baseline synchronous engine.

use super::{EngineFile, SyncIo};
use crate::error::Errno;
use std::os::unix::fs::FileExt;

/// pread(2) / pwrite(2) through std's `FileExt`, which is exactly one
/// system call each.
pub struct PreadIo;

/// The errno inside an `std::io::Error` (EIO if it carries none).
pub(crate) fn io_errno(e: std::io::Error) -> Errno {
    Errno(e.raw_os_error().unwrap_or(libc::EIO))
}

impl SyncIo for PreadIo {
    const NAME: &'static str = "pread";
    fn writes(&self) -> bool {
        true
    }
    #[inline]
    fn read(&mut self, _: usize, f: &EngineFile, buf: &mut [u8], off: u64) -> Result<usize, Errno> {
        f.file.read_at(buf, off).map_err(io_errno)
    }
    #[inline]
    fn write(&mut self, _: usize, f: &EngineFile, buf: &[u8], off: u64) -> Result<usize, Errno> {
        f.file.write_at(buf, off).map_err(io_errno)
    }
}
