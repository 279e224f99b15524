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

/// fio's depth bucket of `d` (1, 2, 4, ... >=64: 0..=6).
#[inline]
fn level_bucket(d: usize) -> usize {
    match d {
        0 | 1 => 0,
        2..=3 => 1,
        4..=7 => 2,
        8..=15 => 3,
        16..=31 => 4,
        32..=63 => 5,
        _ => 6,
    }
}

/// fio's submit/complete bucket of `n` (0, 4, 8, 16, 32, 64, >=64).
#[inline]
fn batch_bucket(n: usize) -> usize {
    match n {
        0 => 0,
        1..=4 => 1,
        5..=8 => 2,
        9..=16 => 3,
        17..=32 => 4,
        33..=64 => 5,
        _ => 6,
    }
}

impl Depths {
    /// A submit call handed over `n` I/Os, the queue then `depth` deep.
    #[inline]
    pub fn submitted(&mut self, n: usize, depth: usize) {
        self.submit[batch_bucket(n)] += 1;
        self.level[level_bucket(depth)] += n as u64;
    }

    /// A reap returned `n` completions.
    #[inline]
    pub fn reaped(&mut self, n: usize) {
        self.complete[batch_bucket(n)] += 1;
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
}
