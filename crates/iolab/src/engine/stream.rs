//! `stream`: a buffered std::io reader (`BufReader`, 64 KiB), the analogue of
//! a C++ iostream. Sequential reads are served from its buffer; a jump seeks
//! (keeping the buffer when the target is inside it).

use super::pread::io_errno;
use super::{EngineConfig, EngineFile, SyncIo};
use crate::error::{Errno, Error, Result};
use std::io::{BufReader, Read, Seek};

/// One `BufReader` per file, with the logical position of each.
pub struct StreamIo {
    readers: Vec<(BufReader<std::fs::File>, u64)>,
}

/// Buffer size of each reader: std's default is 8 KiB; 64 KiB matches the
/// stream buffers of common C++ and Java runtimes more closely on Linux.
const STREAM_BUF: usize = 64 << 10;

impl StreamIo {
    /// Opens a reader per file (sharing the descriptor's open file).
    pub fn new(cfg: &EngineConfig) -> Result<Self> {
        let readers = cfg
            .files
            .iter()
            .map(|f| {
                f.file
                    .try_clone()
                    .map(|c| (BufReader::with_capacity(STREAM_BUF, c), 0u64))
                    .map_err(|e| Error::io(format!("dup {}", f.path.display()), e))
            })
            .collect::<Result<_>>()?;
        // Start every file at offset 0, whatever the shared descriptor says.
        let mut s = StreamIo { readers };
        for (r, pos) in &mut s.readers {
            r.seek(std::io::SeekFrom::Start(0))
                .map_err(|e| Error::io("seek", e))?;
            *pos = 0;
        }
        Ok(s)
    }
}

impl SyncIo for StreamIo {
    const NAME: &'static str = "stream";
    fn writes(&self) -> bool {
        false
    }
    fn read(
        &mut self,
        fi: usize,
        _: &EngineFile,
        buf: &mut [u8],
        off: u64,
    ) -> std::result::Result<usize, Errno> {
        let (r, pos) = &mut self.readers[fi];
        if *pos != off {
            let delta = off as i64 - *pos as i64;
            r.seek_relative(delta).map_err(io_errno)?;
            *pos = off;
        }
        let n = r.read(buf).map_err(io_errno)?;
        *pos += n as u64;
        Ok(n)
    }
    fn write(
        &mut self,
        _: usize,
        _: &EngineFile,
        _: &[u8],
        _: u64,
    ) -> std::result::Result<usize, Errno> {
        Err(Errno(libc::EBADF))
    }
}
