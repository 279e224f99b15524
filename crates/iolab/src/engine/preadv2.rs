//! `preadv2`: positioned read with per-call flags; `--hipri` sets RWF_HIPRI,
//! which asks the block layer to poll for the completion instead of sleeping
//! (effective only with O_DIRECT on a device with poll queues).

use super::{EngineConfig, EngineFile, SyncIo};
use crate::error::Errno;
use crate::kernel::fs;

/// preadv2(2) / pwritev2(2) with one iovec.
pub struct Preadv2Io {
    flags: i32,
}

impl Preadv2Io {
    /// Flags from the engine options.
    pub fn new(cfg: &EngineConfig) -> Self {
        Preadv2Io {
            flags: if cfg.opts.hipri { libc::RWF_HIPRI } else { 0 },
        }
    }
}

impl SyncIo for Preadv2Io {
    const NAME: &'static str = "preadv2";
    fn writes(&self) -> bool {
        true
    }
    #[inline]
    fn read(&mut self, _: usize, f: &EngineFile, buf: &mut [u8], off: u64) -> Result<usize, Errno> {
        fs::preadv2(&f.file, buf, off, self.flags)
    }
    #[inline]
    fn write(&mut self, _: usize, f: &EngineFile, buf: &[u8], off: u64) -> Result<usize, Errno> {
        fs::pwritev2(&f.file, buf, off, self.flags)
    }
}
