//! `ThesisRules`: the thesis's `AdaptiveReader` (study 000, sections 4.7
//! and 5.1), faithfully. At open it evaluates the three file-level
//! conditions of its `swapFlag` from the caller's [`Hints`](super::Hints):
//!
//! 1. the data to be read from the file (expected fraction × length) is
//!    less than the available memory;
//! 2. the reads will be at random offsets;
//! 3. a larger portion of the file will be read — the thesis's own rough
//!    threshold: more than 13 % of the file (4 KiB reads, uniform offsets);
//!
//! and per request the fourth: the request is at most 32 KiB. When all
//! four hold the request is a copy from a memory mapping; otherwise it is
//! read as the thesis's `BufferReader4MB` reads: the whole request in
//! system calls of at most the guideline's block size (4 KiB for requests
//! up to 4 KiB, 4 MiB for requests of 4 MiB or more, the request size in
//! between), straight into the caller's buffer.

use super::mapped::Mapped;
use super::{Backend, Options, Result, Src};
use std::sync::Arc;

/// Requests up to this size go to the mapping (condition 4).
pub const MMAP_MAX_REQUEST: usize = 32 << 10;
/// "A larger portion of the file" (condition 3), the thesis's estimate.
pub const LARGER_PORTION: f64 = 0.13;

/// The thesis's AdaptiveReader.
pub(crate) struct Thesis {
    src: Arc<Src>,
    /// Some when the swap flag is set.
    mapped: Option<Mapped>,
}

/// The thesis's `swapFlag`: its three file-level conditions.
pub fn swap_flag(file_len: u64, hints: &super::Hints, available: u64) -> bool {
    let to_read = (file_len as f64 * hints.expected_fraction.clamp(0.0, 1.0)) as u64;
    to_read < available && hints.random && hints.expected_fraction > LARGER_PORTION
}

/// The thesis's buffered block-size rule for a request of `len` bytes.
pub fn buffer_block(len: usize) -> usize {
    len.clamp(4 << 10, 4 << 20)
}

impl Thesis {
    pub(crate) fn new(src: Arc<Src>, opts: &Options) -> Result<Self> {
        let avail = opts
            .memory_budget
            .or_else(super::mem_available)
            .unwrap_or(0);
        let mapped = if swap_flag(src.len(), &opts.hints, avail) {
            Some(Mapped::new(src.clone())?)
        } else {
            None
        };
        Ok(Thesis { src, mapped })
    }
}

impl Backend for Thesis {
    fn read_at(&self, off: u64, buf: &mut [u8]) -> Result<usize> {
        if let Some(m) = &self.mapped {
            if buf.len() <= MMAP_MAX_REQUEST {
                return m.read_at(off, buf);
            }
        }
        let block = buffer_block(buf.len());
        let mut done = 0;
        while done < buf.len() {
            let n = block.min(buf.len() - done);
            let got = self
                .src
                .pread_full(off + done as u64, &mut buf[done..done + n])?;
            done += got;
            if got < n {
                break;
            }
        }
        Ok(done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Hints;

    #[test]
    fn the_four_conditions() {
        let h = Hints::default();
        let g = 1u64 << 30;
        assert!(swap_flag(g, &h, 2 * g));
        // 1: more to read than memory.
        assert!(!swap_flag(4 * g, &h, 2 * g));
        // ...but reading a small part of a big file is within memory; then 3 fails.
        let part = Hints {
            random: true,
            expected_fraction: 0.1,
        };
        assert!(!swap_flag(4 * g, &part, 2 * g));
        // 2: sequential.
        let seq = Hints {
            random: false,
            expected_fraction: 1.0,
        };
        assert!(!swap_flag(g, &seq, 2 * g));
        // 3: just over 13 % is "a larger portion".
        let some = Hints {
            random: true,
            expected_fraction: 0.14,
        };
        assert!(swap_flag(g, &some, 2 * g));
        // 4 and the buffered block rule.
        assert_eq!(buffer_block(100), 4096);
        assert_eq!(buffer_block(100_000), 100_000);
        assert_eq!(buffer_block(64 << 20), 4 << 20);
    }
}
