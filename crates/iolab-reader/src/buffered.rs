//! `Buffered { block }`: a block cache of our own, as stdio or a
//! `BufferedStream` keeps, made safe to share between threads.
//!
//! The file is seen as `block`-sized, block-aligned blocks. A request
//! smaller than a block is served from cached blocks; a missing block is
//! read whole with one `pread` into its slot. Slots are chosen by block
//! number (a direct-mapped cache), each behind its own mutex, so threads
//! reading different blocks never wait for each other; there is no lock
//! shared by all reads. When blocks are missed in order (block k after
//! k-1), the reader asks the kernel to read the next two blocks ahead
//! (`POSIX_FADV_WILLNEED`, asynchronous), so a sequential scan finds them
//! in memory. A request of a block or more bypasses the cache: one pread
//! straight into the caller's buffer.

use super::{Backend, Result, Src};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Total memory the slots may use.
const CACHE_BYTES: usize = 64 << 20;

struct Slot {
    /// Block number held, or u64::MAX.
    block: u64,
    /// Valid bytes (short at the end of the file).
    valid: usize,
    data: Vec<u8>,
}

/// The block-cache technique.
pub(crate) struct Buffered {
    src: Arc<Src>,
    block: usize,
    slots: Vec<Mutex<Slot>>,
    /// Last block read from the file (for the sequential detector).
    last_miss: AtomicU64,
}

impl Buffered {
    pub(crate) fn new(src: Arc<Src>, block: usize) -> Self {
        let block = block.max(512);
        let n = (CACHE_BYTES / block).clamp(4, 1024);
        Buffered {
            src,
            block,
            slots: (0..n)
                .map(|_| {
                    Mutex::new(Slot {
                        block: u64::MAX,
                        valid: 0,
                        data: Vec::new(),
                    })
                })
                .collect(),
            last_miss: AtomicU64::new(u64::MAX),
        }
    }

    fn read_ahead(&self, b: u64) {
        let off = (b + 1) * self.block as u64;
        if off < self.src.len() {
            let _ = iolab::kernel::fs::fadvise_range(
                &self.src.file,
                off,
                2 * self.block as u64,
                libc::POSIX_FADV_WILLNEED,
            );
        }
    }
}

impl Backend for Buffered {
    fn read_at(&self, off: u64, buf: &mut [u8]) -> Result<usize> {
        if buf.len() >= self.block {
            let b = off / self.block as u64;
            let prev = self.last_miss.swap(b, Ordering::Relaxed);
            if prev.wrapping_add(1) == b || prev == b {
                self.read_ahead(b + (buf.len() / self.block) as u64);
            }
            return self.src.pread_full(off, buf);
        }
        let bs = self.block as u64;
        let mut done = 0usize;
        while done < buf.len() {
            let at = off + done as u64;
            let b = at / bs;
            let inner = (at - b * bs) as usize;
            let slot = &self.slots[(b % self.slots.len() as u64) as usize];
            let mut s = slot.lock().unwrap_or_else(|e| e.into_inner());
            if s.block != b {
                if s.data.len() != self.block {
                    s.data = vec![0u8; self.block];
                }
                s.block = u64::MAX;
                let valid = self.src.pread_full(b * bs, &mut s.data)?;
                s.valid = valid;
                s.block = b;
                let prev = self.last_miss.swap(b, Ordering::Relaxed);
                if prev.wrapping_add(1) == b {
                    self.read_ahead(b);
                }
            }
            if inner >= s.valid {
                break; // end of file
            }
            let n = (s.valid - inner).min(buf.len() - done);
            buf[done..done + n].copy_from_slice(&s.data[inner..inner + n]);
            done += n;
            if inner + n < self.block && s.valid < self.block {
                break; // this block is the file's last
            }
        }
        Ok(done)
    }
}
