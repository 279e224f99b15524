//! `read`: lseek then read, the way programs without pread do it. The seek
//! is skipped when the file position is already right (as a careful
//! sequential reader would), so sequential runs cost one call per op.

use super::pread::io_errno;
use super::{EngineConfig, EngineFile, SyncIo};
use crate::error::Errno;
use std::io::{Read, Seek, SeekFrom, Write};

/// lseek(2) + read(2)/write(2), tracking each file's position.
pub struct ReadIo {
    pos: Vec<u64>,
}

impl ReadIo {
    /// Positions start unknown (u64::MAX forces the first seek).
    pub fn new(cfg: &EngineConfig) -> Self {
        ReadIo {
            pos: vec![u64::MAX; cfg.files.len()],
        }
    }

    fn seek(&mut self, fi: usize, mut f: &std::fs::File, off: u64) -> Result<(), Errno> {
        if self.pos[fi] != off {
            f.seek(SeekFrom::Start(off)).map_err(io_errno)?;
            self.pos[fi] = off;
        }
        Ok(())
    }

    /// Where the file position is after a read or write of `r` at `off`
    /// (unknown after an error: the next op seeks).
    fn moved(&mut self, fi: usize, off: u64, r: std::io::Result<usize>) -> Result<usize, Errno> {
        match r {
            Ok(n) => {
                self.pos[fi] = off + n as u64;
                Ok(n)
            }
            Err(e) => {
                self.pos[fi] = u64::MAX;
                Err(io_errno(e))
            }
        }
    }
}

impl SyncIo for ReadIo {
    const NAME: &'static str = "read";
    fn writes(&self) -> bool {
        true
    }
    fn read(
        &mut self,
        fi: usize,
        f: &EngineFile,
        buf: &mut [u8],
        off: u64,
    ) -> Result<usize, Errno> {
        self.seek(fi, &f.file, off)?;
        let r = (&f.file).read(buf);
        self.moved(fi, off, r)
    }
    fn write(&mut self, fi: usize, f: &EngineFile, buf: &[u8], off: u64) -> Result<usize, Errno> {
        self.seek(fi, &f.file, off)?;
        let r = (&f.file).write(buf);
        self.moved(fi, off, r)
    }
}
