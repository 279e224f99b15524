//! I/O sizes that vary per I/O: fio's `bssplit` (sizes with weights),
//! `bsrange` (uniform in a range) and `bs=R,W,T` (one per direction). The
//! spec's `bs` is then the unit offsets are aligned to (fio's
//! `blockalign`, by default the smallest size) and buffers are as long as
//! the largest size.

use crate::random::Rng;
use serde::{Deserialize, Serialize};

/// How one direction's sizes are drawn.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SizeLaw {
    /// Always this many bytes.
    Fixed(u64),
    /// Uniform in `lo..=hi`, a multiple of `lo` unless `unaligned`.
    Range {
        /// Smallest.
        lo: u64,
        /// Largest.
        hi: u64,
        /// Any size in the range, not only multiples of `lo`.
        unaligned: bool,
    },
    /// Each size with its weight (fio's `bssplit`, weights summing to 100).
    Split(Vec<(u64, u32)>),
}

impl SizeLaw {
    /// The smallest size it draws.
    pub fn min(&self) -> u64 {
        match self {
            SizeLaw::Fixed(b) => *b,
            SizeLaw::Range { lo, .. } => *lo,
            SizeLaw::Split(v) => v.iter().map(|(b, _)| *b).min().unwrap_or(0),
        }
    }

    /// The largest size it draws.
    pub fn max(&self) -> u64 {
        match self {
            SizeLaw::Fixed(b) => *b,
            SizeLaw::Range { hi, .. } => *hi,
            SizeLaw::Split(v) => v.iter().map(|(b, _)| *b).max().unwrap_or(0),
        }
    }

    /// The mean size, for rates given in bytes.
    pub fn mean(&self) -> f64 {
        match self {
            SizeLaw::Fixed(b) => *b as f64,
            SizeLaw::Range { lo, hi, .. } => (*lo + *hi) as f64 / 2.0,
            SizeLaw::Split(v) => {
                let w: u64 = v.iter().map(|(_, w)| *w as u64).sum();
                v.iter().map(|(b, p)| *b as f64 * *p as f64).sum::<f64>() / w.max(1) as f64
            }
        }
    }

    /// Draws a size.
    #[inline]
    pub fn pick(&self, rng: &mut Rng) -> u64 {
        match self {
            SizeLaw::Fixed(b) => *b,
            SizeLaw::Range { lo, hi, unaligned } => {
                let v = lo + rng.below(hi - lo + 1);
                if *unaligned || *lo == 0 {
                    v
                } else {
                    (v / lo * lo).max(*lo)
                }
            }
            SizeLaw::Split(v) => {
                let total: u64 = v.iter().map(|(_, w)| *w as u64).sum();
                let mut r = rng.below(total.max(1));
                for (b, w) in v {
                    if r < *w as u64 {
                        return *b;
                    }
                    r -= *w as u64;
                }
                v.last().map_or(0, |(b, _)| *b)
            }
        }
    }
}

/// Sizes per direction (reads, writes, trims).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockSizes {
    /// Reads.
    pub read: SizeLaw,
    /// Writes.
    pub write: SizeLaw,
    /// Trims.
    pub trim: SizeLaw,
}

impl BlockSizes {
    /// The largest size of any direction: each buffer's length.
    pub fn max(&self) -> u64 {
        self.read.max().max(self.write.max()).max(self.trim.max())
    }

    /// The law of one direction (0 read, 1 write, 2 trim).
    pub fn of(&self, dir: usize) -> &SizeLaw {
        match dir {
            0 => &self.read,
            1 => &self.write,
            _ => &self.trim,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn laws_draw_their_sizes_in_their_proportions() {
        let mut rng = Rng::new(7);
        let split = SizeLaw::Split(vec![(4096, 60), (65536, 40)]);
        let n = 20_000;
        let big = (0..n).filter(|_| split.pick(&mut rng) == 65536).count();
        assert!((7_200..8_800).contains(&big), "{big}");
        assert_eq!((split.min(), split.max()), (4096, 65536));
        let range = SizeLaw::Range {
            lo: 4096,
            hi: 16384,
            unaligned: false,
        };
        for _ in 0..1000 {
            let b = range.pick(&mut rng);
            assert!((4096..=16384).contains(&b) && b.is_multiple_of(4096), "{b}");
        }
        assert_eq!(SizeLaw::Fixed(512).pick(&mut rng), 512);
        assert_eq!(split.mean(), 4096.0 * 0.6 + 65536.0 * 0.4);
    }
}
