//! What each I/O of a worker is, beyond its offset: which file
//! ([`crate::service::FileService`]) and how long ([`crate::sizes`]). A
//! worker with one file and one size has no picker and pays nothing.

use crate::random::Rng;
use crate::service::{FilePicker, FileService};
use crate::sizes::BlockSizes;

/// A worker's picker of files and sizes.
pub(super) struct Picker {
    files: FilePicker,
    sizes: Option<BlockSizes>,
    rng: Rng,
    /// `sequential` service: I/Os left in the current file.
    left: u64,
    per_file: Vec<u64>,
    sequential: bool,
    cur: usize,
}

impl Picker {
    /// For `n` files whose regions hold `per_file` I/Os each; None when
    /// every I/O is the next file's in turn and `bs` long.
    pub fn of(spec: &crate::spec::WorkloadSpec, per_file: Vec<u64>, seed: u64) -> Option<Picker> {
        let plain = spec.file_service == FileService::default() && spec.sizes.is_none();
        if plain {
            return None;
        }
        let n = per_file.len();
        Some(Picker {
            files: FilePicker::new(spec.file_service, n, seed),
            sizes: spec.sizes.clone(),
            rng: Rng::new(seed ^ 0x512E_5A11),
            left: per_file.first().copied().unwrap_or(1),
            sequential: spec.file_service == FileService::Sequential,
            per_file,
            cur: 0,
        })
    }

    /// The next I/O's file.
    #[inline]
    pub fn file(&mut self) -> usize {
        if self.sequential {
            if self.left == 0 {
                self.cur = (self.cur + 1) % self.per_file.len().max(1);
                self.left = self.per_file[self.cur].max(1);
            }
            self.left -= 1;
            return self.cur;
        }
        self.files.next(|_| false)
    }

    /// The next I/O's length in direction `dir` (0 read, 1 write, 2
    /// trim), or None for the spec's `bs`.
    #[inline]
    pub fn len(&mut self, dir: usize) -> Option<u64> {
        self.sizes.as_ref().map(|s| s.of(dir).pick(&mut self.rng))
    }
}
