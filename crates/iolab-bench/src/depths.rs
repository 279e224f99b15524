//! How deep the queue was, as fio reports it (`IO depths`, `submit`,
//! `complete`): per I/O issued, the depth it joined (buckets 1, 2, 4, 8,
//! 16, 32, >=64); per submit and per reap call, how many I/Os it carried
//! (buckets 0, 4, 8, 16, 32, 64, >=64). Counted once per call, never per
//! clock read.

use serde::{Deserialize, Serialize};

/// The three distributions, as counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Depths {
    /// I/Os issued at each depth: 1, 2, 4, 8, 16, 32, >=64.
    pub level: [u64; 7],
    /// Submit calls by I/Os handed over: 0, 1-4, 5-8, 9-16, 17-32, 33-64, >64.
    pub submit: [u64; 7],
    /// Reap calls by completions returned, in the same buckets.
    pub complete: [u64; 7],
}

/// Upper bounds of fio's depth buckets (1, 2, 4, 8, 16, 32; past the
/// last, >=64): a depth of 0 counts as 1.
const LEVEL_BOUNDS: [usize; 6] = [1, 3, 7, 15, 31, 63];

/// Upper bounds of fio's submit/complete buckets (0, 1-4, 5-8, 9-16,
/// 17-32, 33-64; past the last, >64).
const BATCH_BOUNDS: [usize; 6] = [0, 4, 8, 16, 32, 64];

/// The bucket (0..=6) of `x`: the first whose upper bound in `bounds` it
/// does not pass, else the last.
#[inline]
fn bucket(x: usize, bounds: &[usize; 6]) -> usize {
    bounds.iter().position(|&b| x <= b).unwrap_or(bounds.len())
}

impl Depths {
    /// A submit call handed over `n` I/Os, the queue then `depth` deep.
    #[inline]
    pub fn submitted(&mut self, n: usize, depth: usize) {
        self.submit[bucket(n, &BATCH_BOUNDS)] += 1;
        self.level[bucket(depth, &LEVEL_BOUNDS)] += n as u64;
    }

    /// A reap returned `n` completions.
    #[inline]
    pub fn reaped(&mut self, n: usize) {
        self.complete[bucket(n, &BATCH_BOUNDS)] += 1;
    }

    /// Adds another worker's counts.
    pub fn add(&mut self, o: &Depths) {
        for (a, b) in self
            .level
            .iter_mut()
            .chain(&mut self.submit)
            .chain(&mut self.complete)
            .zip(o.level.iter().chain(&o.submit).chain(&o.complete))
        {
            *a += b;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_fio_s() {
        let mut d = Depths::default();
        d.submitted(1, 1);
        d.submitted(8, 32);
        d.reaped(0);
        d.reaped(5);
        assert_eq!(d.level, [1, 0, 0, 0, 0, 8, 0]);
        assert_eq!(d.submit, [0, 1, 1, 0, 0, 0, 0]);
        assert_eq!(d.complete, [1, 0, 1, 0, 0, 0, 0]);
    }

    #[test]
    fn each_bucket_ends_where_fio_s_does() {
        // fio's buckets in order, as ranges: both ends of each fall in it.
        let level = [0..=1, 2..=3, 4..=7, 8..=15, 16..=31, 32..=63, 64..=4096];
        let batch = [0..=0, 1..=4, 5..=8, 9..=16, 17..=32, 33..=64, 65..=4096];
        for (bounds, buckets) in [(&LEVEL_BOUNDS, level), (&BATCH_BOUNDS, batch)] {
            for (k, r) in buckets.into_iter().enumerate() {
                for x in [*r.start(), *r.end()] {
                    assert_eq!(bucket(x, bounds), k, "{x} with bounds {bounds:?}");
                }
            }
        }
    }
}
