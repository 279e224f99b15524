//! `mmap`: each file is mapped once, shared and read-only; a read copies the
//! range out of the mapping into the op's buffer (page faults do the I/O).
//! With `--mmap-touch` it only touches one byte per page, which measures the
//! fault path without the copy. Access hints become madvise advice.

use super::{AccessHint, EngineConfig, EngineFile, SyncIo};
use crate::error::{Errno, Result};
use crate::sys::mman::{page_size, Advice, Mapping};

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
        let touch = self.touch;
        let page = self.page;
        let mut sink = 0u64;
        let res = self.maps[fi].read_guarded(&ef.file, |map| {
            let start = (off as usize).min(map.len());
            let end = (start + buf.len()).min(map.len());
            let src = &map[start..end];
            if touch {
                let mut p = 0;
                while p < src.len() {
                    // A volatile-like read: black_box stops the load from being elided.
                    sink = sink.wrapping_add(std::hint::black_box(src[p]) as u64);
                    p += page - ((start + p) % page);
                }
            } else {
                buf[..src.len()].copy_from_slice(src);
            }
            src.len()
        });
        self.sink = self.sink.wrapping_add(sink);
        match res {
            Ok(n) => Ok(n),
            // The page could not be read: past the file's end now (it shrank
            // after it was mapped) the read is short; otherwise it is EIO,
            // as read(2) would have said. Never SIGBUS.
            Err(at) => match ef.file.metadata() {
                Ok(m) if m.len() <= at => Ok(at.saturating_sub(off) as usize),
                _ => Err(Errno(libc::EIO)),
            },
        }
    }
    fn write(&mut self, _: usize, _: &EngineFile, _: &[u8], _: u64) -> Result<usize, Errno> {
        Err(Errno(libc::EBADF))
    }
}
