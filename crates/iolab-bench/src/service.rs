//! Which of its files a worker's next I/O goes to (fio's
//! `file_service_type`): each in turn, one after the other, at random, or
//! by a skewed law, switching after `every` I/Os.

use crate::random::Rng;
use crate::skew::{Skew, SkewGen};
use serde::{Deserialize, Serialize};

/// How I/Os are spread over a worker's files.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", tag = "kind")]
pub enum FileService {
    /// Each file in turn (fio's default `roundrobin`).
    RoundRobin {
        /// I/Os to a file before the next.
        every: u32,
    },
    /// One file until its region is done, then the next (`sequential`).
    Sequential,
    /// A uniformly random file (`random`).
    Random {
        /// I/Os to a file before the next draw.
        every: u32,
    },
    /// A file drawn from a skewed law (`zipf`, `pareto`, `normal`/`gauss`).
    Skewed {
        /// The law.
        skew: Skew,
        /// I/Os to a file before the next draw.
        every: u32,
    },
}

impl Default for FileService {
    fn default() -> Self {
        FileService::RoundRobin { every: 1 }
    }
}

/// A worker's picker over `n` files.
pub struct FilePicker {
    kind: FileService,
    n: usize,
    cur: usize,
    left: u32,
    rng: Rng,
    skew: Option<SkewGen>,
    /// A file was picked already (round robin starts at file 0).
    begun: bool,
}

impl FilePicker {
    /// A picker over `n` files.
    pub fn new(kind: FileService, n: usize, seed: u64) -> Self {
        let skew = match kind {
            FileService::Skewed { skew, .. } => Some(SkewGen::new(skew, n as u64, seed)),
            _ => None,
        };
        FilePicker {
            kind,
            n: n.max(1),
            cur: 0,
            left: 0,
            rng: Rng::new(seed ^ 0xF11E_5E4F),
            skew,
            begun: false,
        }
    }

    /// The file of the next I/O; `pass_done(k)` says whether file `k` has
    /// finished its region (for `sequential`).
    #[inline]
    pub fn next(&mut self, pass_done: impl Fn(usize) -> bool) -> usize {
        if self.n == 1 {
            return 0;
        }
        let every = match self.kind {
            FileService::RoundRobin { every }
            | FileService::Random { every }
            | FileService::Skewed { every, .. } => every.max(1),
            FileService::Sequential => {
                if pass_done(self.cur) {
                    self.cur = (self.cur + 1) % self.n;
                }
                return self.cur;
            }
        };
        if self.left == 0 {
            self.left = every;
            self.cur = match self.kind {
                FileService::RoundRobin { .. } if self.begun => (self.cur + 1) % self.n,
                FileService::RoundRobin { .. } => 0,
                FileService::Random { .. } => self.rng.below(self.n as u64) as usize,
                _ => self
                    .skew
                    .as_ref()
                    .map_or(0, |g| g.next_block(&mut self.rng) as usize),
            };
        }
        self.begun = true;
        self.left -= 1;
        self.cur
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn picks(kind: FileService, n: usize, count: usize) -> Vec<usize> {
        let mut p = FilePicker::new(kind, n, 9);
        (0..count).map(|_| p.next(|_| false)).collect()
    }

    #[test]
    fn each_kind_spreads_ios_as_fio_says() {
        assert_eq!(picks(FileService::default(), 3, 7), [0, 1, 2, 0, 1, 2, 0]);
        assert_eq!(
            picks(FileService::RoundRobin { every: 2 }, 2, 6),
            [0, 0, 1, 1, 0, 0]
        );
        let r = picks(FileService::Random { every: 1 }, 4, 4000);
        for f in 0..4 {
            let c = r.iter().filter(|x| **x == f).count();
            assert!((800..1200).contains(&c), "file {f}: {c}");
        }
        let z = picks(
            FileService::Skewed {
                skew: Skew::Zipf(1.2),
                every: 1,
            },
            8,
            4000,
        );
        let mut counts = [0usize; 8];
        z.iter().for_each(|f| counts[*f] += 1);
        counts.sort();
        assert!(counts[7] > 4 * counts[0].max(1), "{counts:?}");
        // sequential: a file until it is done.
        let mut p = FilePicker::new(FileService::Sequential, 3, 1);
        assert_eq!(p.next(|_| false), 0);
        assert_eq!(p.next(|k| k == 0), 1);
        assert_eq!(p.next(|_| false), 1);
    }
}
