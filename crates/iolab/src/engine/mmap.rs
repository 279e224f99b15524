//! `mmap`: each file is mapped once, shared and read-only; a read copies the
//! range out of the mapping into the op's buffer (page faults do the I/O).
//! With `--mmap-touch` it only touches one byte per page, which measures the
//! fault path without the copy. Access hints become madvise advice.

use super::{AccessHint, EngineConfig, EngineFile, SyncIo};
use crate::error::{Errno, Result};
use crate::kernel::mman::{page_size, Advice, Mapping};

/// The mappings, one per file.
pub struct MmapIo {
    maps: Vec<Mapping>,
    touch: bool,
    page: usize,
    /// Sum of touched bytes, kept so the compiler cannot drop the touches.
    sink: u64,
}

impl MmapIo {
    /// Maps every file and applies the access hint.
    pub fn new(cfg: &EngineConfig) -> Result<Self> {
        let advice = match cfg.opts.access {
            AccessHint::Normal => Advice::Normal,
            AccessHint::Random => Advice::Random,
            AccessHint::Sequential => Advice::Sequential,
        };
        let maps = cfg
            .files
            .iter()
            .map(|f| {
                let m = Mapping::new(&f.file, f.len as usize)?;
                m.advise(advice)?;
                Ok(m)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(MmapIo {
            maps,
            touch: cfg.opts.mmap_touch,
            page: page_size(),
            sink: 0,
        })
    }
}

impl SyncIo for MmapIo {
    const NAME: &'static str = "mmap";
    fn fills_buffer(&self) -> bool {
        !self.touch
    }
    fn writes(&self) -> bool {
        false
    }
    #[inline]
    fn read(
        &mut self,
        fi: usize,
        ef: &EngineFile,
        buf: &mut [u8],
        off: u64,
    ) -> Result<usize, Errno> {
        let map = &self.maps[fi];
        let start = (off as usize).min(map.len());
        let end = (start + buf.len()).min(map.len());
        let n = end - start;
        // Copies go through the reading library's guarded copy (kernel::guard):
        // a page the file system cannot supply ends the copy early instead
        // of killing the process with SIGBUS.
        let guarded = crate::kernel::guard::available();
        let copied = if self.touch {
            let mut p = 0;
            let mut s = 0u64;
            let mut byte = [0u8; 1];
            while p < n {
                if guarded {
                    if crate::kernel::guard::guarded_copy(map, start + p, &mut byte) == 0 {
                        break;
                    }
                } else {
                    byte[0] = map.bytes()[start + p];
                }
                // black_box stops the touch from being elided.
                s = s.wrapping_add(std::hint::black_box(byte[0]) as u64);
                p += self.page - ((start + p) % self.page);
            }
            self.sink = self.sink.wrapping_add(s);
            p.min(n)
        } else if guarded {
            crate::kernel::guard::guarded_copy(map, start, &mut buf[..n])
        } else {
            buf[..n].copy_from_slice(&map.bytes()[start..end]);
            n
        };
        if copied == n {
            return Ok(n);
        }
        // A page could not be read: past the file's end now (it shrank after
        // it was mapped) the read is short; otherwise it is EIO, as read(2)
        // would have said.
        let at = (start + copied) as u64;
        match ef.file.metadata() {
            Ok(m) if m.len() <= at => Ok(copied),
            _ => Err(Errno(libc::EIO)),
        }
    }
    fn write(&mut self, _: usize, _: &EngineFile, _: &[u8], _: u64) -> Result<usize, Errno> {
        Err(Errno(libc::EBADF))
    }
}
