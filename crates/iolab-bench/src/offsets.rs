//! Offset generators: which block each op touches.
//!
//! `shuffle` visits every block of its range exactly once per pass, in an
//! order given by a keyed Feistel permutation with cycle walking: O(1)
//! memory for any file size (fio keeps a bitmap instead).

use crate::spec::AccessPattern;

pub use crate::random::{Permutation, Rng};

/// Produces the byte offsets one worker visits.
#[derive(Clone, Debug)]
pub struct OffsetGen {
    pattern: AccessPattern,
    first: u64,
    blocks: u64,
    bs: u64,
    pos: u64,
    rng: Rng,
    perm: Permutation,
    pass: u64,
    seed: u64,
    skew: Option<crate::skew::SkewGen>,
    place: Option<crate::rank_place::RankPlace>,
    /// Added to every offset: where the region starts (fio's `offset`).
    base: u64,
    /// [`AccessPattern::RandRun`]: the block of the last offset.
    block: u64,
}

impl OffsetGen {
    /// Offsets over blocks `first..first + blocks` of size `bs` (with
    /// [`AccessPattern::Stride`], the blocks that start every `bs + gap`
    /// bytes of that range and fit in it).
    pub fn new(pattern: AccessPattern, first: u64, blocks: u64, bs: u64, seed: u64) -> Self {
        let blocks = pattern.positions(blocks, bs).max(1);
        let mut g = OffsetGen {
            pattern,
            first,
            blocks,
            bs,
            pos: 0,
            rng: Rng::new(seed),
            perm: Permutation::new(1, seed),
            pass: 0,
            seed,
            skew: match pattern {
                AccessPattern::Skewed(k) => Some(crate::skew::SkewGen::new(k, blocks.max(1), seed)),
                _ => None,
            },
            place: None,
            base: 0,
            block: 0,
        };
        g.perm = g.new_perm(0);
        g
    }

    /// Runs of [`AccessPattern::ShuffleRun`] in the range (the last one
    /// may be short), or the blocks for every other pattern.
    fn runs(&self) -> u64 {
        match self.pattern {
            AccessPattern::ShuffleRun(n) => self.blocks.div_ceil(n as u64),
            _ => self.blocks,
        }
    }

    /// The shuffled order of pass `pass`.
    fn new_perm(&self, pass: u64) -> Permutation {
        let seed = if pass == 0 {
            self.seed
        } else {
            self.seed ^ pass.wrapping_mul(0xA076_1D64_78BD_642F)
        };
        Permutation::new(self.runs(), seed)
    }

    /// Moves every offset `base` bytes on: the region starts there (fio's
    /// `offset`), after any rank's mapping.
    pub fn with_base(mut self, base: u64) -> Self {
        self.base = base;
        self
    }

    /// Maps every offset into this rank's part of a shared file (IOR's
    /// segmented or strided layouts); offsets are generated over the rank's
    /// own bytes, `0..place.rank_bytes()`.
    pub fn with_place(mut self, place: Option<crate::rank_place::RankPlace>) -> Self {
        if let Some(p) = place {
            self.skip(p.resume_ops);
        }
        self.place = place.filter(|p| p.layout.shared());
        self
    }

    /// Goes on as if `n` offsets had been taken already: sequential and
    /// shuffled orders resume at the same place (pass and position); random
    /// orders draw a fresh stream rather than repeat the first `n`.
    fn skip(&mut self, n: u64) {
        if n == 0 {
            return;
        }
        match self.pattern {
            AccessPattern::Seq
            | AccessPattern::Shuffle
            | AccessPattern::Stride(_)
            | AccessPattern::Back(_) => {
                self.pass = n / self.blocks;
                self.pos = n % self.blocks;
                self.perm = self.new_perm(self.pass);
            }
            AccessPattern::ShuffleRun(_) => {
                // A short last run leaves holes in the pass: walk to the spot.
                self.pass = n / self.blocks;
                self.perm = self.new_perm(self.pass);
                for _ in 0..n % self.blocks {
                    self.next_block();
                }
            }
            AccessPattern::Rand
            | AccessPattern::Skewed(_)
            | AccessPattern::RandRun(_)
            | AccessPattern::Zoned(_) => {
                self.rng = Rng::new(self.seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            }
            AccessPattern::Sequence(_) => self.pos = n,
        }
    }

    /// The next byte offset. Sequential and shuffled orders start a new
    /// pass (shuffle with a fresh order) when one ends.
    #[inline]
    pub fn next_offset(&mut self) -> u64 {
        if let (AccessPattern::Rand, None) = (self.pattern, &self.place) {
            // The common random case, inlined into the runner's loop.
            return self.base + (self.first + self.rng.below(self.blocks)) * self.bs;
        }
        let off = match self.pattern {
            AccessPattern::Back(back) => self.first * self.bs + self.next_back(back),
            AccessPattern::Stride(gap) => {
                self.first * self.bs + self.next_block() * (self.bs + gap)
            }
            _ => (self.first + self.next_block()) * self.bs,
        };
        self.base
            + match &self.place {
                Some(p) => p.map(off),
                None => off,
            }
    }

    /// [`AccessPattern::Back`]: the next byte offset in the range, `back`
    /// bytes before the end of the last block; past the start, `back`
    /// before the range's end (fio's wrap for a negative `rw=read:-N`).
    fn next_back(&mut self, back: u64) -> u64 {
        let first = self.in_pass(self.blocks) == 0 && self.pass == 0;
        let len = self.blocks * self.bs;
        let next = self.block as i128 + self.bs as i128 - back as i128;
        self.block = if first {
            0
        } else if next < 0 || next as u64 + self.bs > len {
            len.saturating_sub(back.max(self.bs))
        } else {
            next as u64
        };
        self.block
    }

    /// The next block of the range, from 0.
    #[inline]
    fn next_block(&mut self) -> u64 {
        match self.pattern {
            AccessPattern::Rand => self.rng.below(self.blocks),
            AccessPattern::Zoned(z) => z.next_block(self.blocks, &mut self.rng),
            AccessPattern::Sequence(q) => {
                self.pos += 1;
                q.block(self.pos - 1, self.blocks)
            }
            AccessPattern::Skewed(_) => match &self.skew {
                Some(g) => g.next_block(&mut self.rng),
                None => self.rng.below(self.blocks),
            },
            AccessPattern::RandRun(n) => {
                // A new random block every n offsets, the next ones in order.
                self.block = if self.pos == 0 {
                    self.rng.below(self.blocks)
                } else {
                    (self.block + 1) % self.blocks
                };
                self.pos = (self.pos + 1) % n as u64;
                self.block
            }
            AccessPattern::ShuffleRun(n) => loop {
                let i = self.in_pass(self.runs() * n as u64);
                let b = self.perm.apply(i / n as u64) * n as u64 + i % n as u64;
                // The short last run's missing blocks are skipped.
                if b < self.blocks {
                    break b;
                }
            },
            AccessPattern::Shuffle => {
                let i = self.in_pass(self.blocks);
                self.perm.apply(i)
            }
            AccessPattern::Seq | AccessPattern::Stride(_) | AccessPattern::Back(_) => {
                self.in_pass(self.blocks)
            }
        }
    }

    /// The next position of a pass of `len`, starting a new pass (with a
    /// fresh order) when one ends.
    #[inline]
    fn in_pass(&mut self, len: u64) -> u64 {
        if self.pos == len {
            self.pos = 0;
            self.pass += 1;
            if matches!(
                self.pattern,
                AccessPattern::Shuffle | AccessPattern::ShuffleRun(_)
            ) {
                self.perm = self.new_perm(self.pass);
            }
        }
        self.pos += 1;
        self.pos - 1
    }

    /// Passes begun after the first (sequential, stride and shuffled
    /// orders start a new one when one ends; the others never do).
    #[inline]
    pub fn pass(&self) -> u64 {
        self.pass
    }

    /// Offsets in one pass: the blocks of the range, or with a stride the
    /// blocks it visits.
    pub fn positions(&self) -> u64 {
        self.blocks
    }

    /// A random number for the read/write choice of mixed workloads.
    #[inline]
    pub fn coin(&mut self) -> u64 {
        self.rng.below(100)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backwards_steps_back_and_wraps_to_the_end_as_fio_does() {
        // fio's rw=read:-8k with bs=4k over 64 KiB: 0, then 56k down to 0.
        let mut g = OffsetGen::new(AccessPattern::Back(8192), 0, 16, 4096, 1).with_base(4096);
        let got: Vec<u64> = (0..18).map(|_| (g.next_offset() - 4096) / 1024).collect();
        let mut want = vec![0u64];
        want.extend((0..=14).rev().map(|b| b * 4));
        want.extend([56, 52]);
        assert_eq!(got, want);
    }

    #[test]
    fn permutation_is_a_bijection() {
        for n in [1u64, 2, 3, 7, 100, 1000, 4097] {
            let p = Permutation::new(n, 12345);
            let mut seen = vec![false; n as usize];
            for i in 0..n {
                let j = p.apply(i);
                assert!(j < n);
                assert!(!seen[j as usize], "n {n}: {j} twice");
                seen[j as usize] = true;
            }
        }
    }

    #[test]
    fn shuffle_visits_each_block_once_per_pass_and_is_not_sequential() {
        let n = 1000;
        let mut g = OffsetGen::new(AccessPattern::Shuffle, 10, n, 4096, 7);
        let first: Vec<u64> = (0..n).map(|_| g.next_offset()).collect();
        let mut sorted = first.clone();
        sorted.sort();
        let expect: Vec<u64> = (10..10 + n).map(|b| b * 4096).collect();
        assert_eq!(sorted, expect);
        let in_place = first.iter().zip(&expect).filter(|(a, b)| a == b).count();
        assert!(in_place < 20, "{in_place} blocks in sequential position");
        // The second pass is again complete, in another order.
        let second: Vec<u64> = (0..n).map(|_| g.next_offset()).collect();
        let mut s2 = second.clone();
        s2.sort();
        assert_eq!(s2, expect);
        assert_ne!(first, second);
    }

    #[test]
    fn seq_wraps_and_rand_stays_in_range() {
        let mut g = OffsetGen::new(AccessPattern::Seq, 2, 3, 512, 1);
        let v: Vec<u64> = (0..5).map(|_| g.next_offset()).collect();
        assert_eq!(v, vec![1024, 1536, 2048, 1024, 1536]);
        let mut r = OffsetGen::new(AccessPattern::Rand, 0, 10, 4096, 3);
        let mut hit = [0u32; 10];
        for _ in 0..10_000 {
            let o = r.next_offset();
            assert_eq!(o % 4096, 0);
            hit[(o / 4096) as usize] += 1;
        }
        assert!(hit.iter().all(|&h| h > 800 && h < 1200), "{hit:?}");
    }

    #[test]
    fn stride_skips_the_gap_after_each_block_and_stays_in_range() {
        // Blocks 2..12 of 4 KiB (8 KiB..48 KiB), 4 KiB skipped after each:
        // 8k, 16k, 24k, 32k, 40k, then around again.
        let mut g = OffsetGen::new(AccessPattern::Stride(4096), 2, 10, 4096, 1);
        let v: Vec<u64> = (0..6).map(|_| g.next_offset() >> 10).collect();
        assert_eq!(v, vec![8, 16, 24, 32, 40, 8]);
        // A gap that is not a multiple of the block: the last block still fits.
        let mut g = OffsetGen::new(AccessPattern::Stride(100), 0, 4, 1000, 1);
        let v: Vec<u64> = (0..5).map(|_| g.next_offset()).collect();
        assert_eq!(v, vec![0, 1100, 2200, 0, 1100]);
        // Resuming after n offsets goes on where it stopped.
        let mut g = OffsetGen::new(AccessPattern::Stride(4096), 0, 10, 4096, 1);
        g.skip(3);
        assert_eq!(g.next_offset(), 3 * 8192);
        assert_eq!("stride:4k".parse(), Ok(AccessPattern::Stride(4096)));
        assert_eq!(AccessPattern::Stride(4096).to_string(), "stride:4k");
        assert!("stride:x"
            .parse::<AccessPattern>()
            .unwrap_err()
            .contains("stride:x"));
    }

    /// fio's `rw=randread:N`: N offsets in order from each random one; with
    /// the random map every block once per pass.
    #[test]
    fn runs_read_n_blocks_in_order_from_each_random_one() {
        let bs = 4096;
        // With replacement: each run of 4 is in order, wrapping at the end.
        let mut g = OffsetGen::new(AccessPattern::RandRun(4), 10, 50, bs, 3);
        let v: Vec<u64> = (0..400).map(|_| g.next_offset() / bs).collect();
        let mut starts = std::collections::BTreeSet::new();
        for run in v.chunks(4) {
            starts.insert(run[0]);
            for w in run.windows(2) {
                assert_eq!(w[1], if w[0] == 59 { 10 } else { w[0] + 1 }, "{run:?}");
            }
        }
        assert!(v.iter().all(|b| (10..60).contains(b)));
        assert!(starts.len() > 30, "random starts: {starts:?}");
        // The random map: 10 blocks in runs of 4 (the last one short),
        // every block once per pass, runs in random order.
        let mut g = OffsetGen::new(AccessPattern::ShuffleRun(4), 0, 10, bs, 7);
        for pass in 0..3 {
            let v: Vec<u64> = (0..10).map(|_| g.next_offset() / bs).collect();
            let mut sorted = v.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..10).collect::<Vec<_>>(), "pass {pass}: {v:?}");
            for w in v.windows(2) {
                assert!(w[1] == w[0] + 1 || w[0] % 4 == 3 || w[0] == 9, "{v:?}");
            }
        }
        // Resuming after n offsets goes on where it stopped.
        let mut whole = OffsetGen::new(AccessPattern::ShuffleRun(4), 0, 10, bs, 7);
        let want: Vec<u64> = (0..25).map(|_| whole.next_offset()).collect();
        let mut rest = OffsetGen::new(AccessPattern::ShuffleRun(4), 0, 10, bs, 7);
        rest.skip(13);
        let got: Vec<u64> = (0..12).map(|_| rest.next_offset()).collect();
        assert_eq!(got, want[13..]);
        // The names.
        assert_eq!("rand-run:8".parse(), Ok(AccessPattern::RandRun(8)));
        assert_eq!(AccessPattern::ShuffleRun(8).to_string(), "shuffle-run:8");
        let e = "rand-run:1".parse::<AccessPattern>().unwrap_err();
        assert!(e.contains("rand-run:1") && e.contains("2 or more"), "{e}");
    }

    /// `--wearout`'s second phase goes on where the first stopped, so a
    /// rank's two phases visit what one uninterrupted run would.
    #[test]
    fn resuming_goes_on_where_the_first_phase_stopped() {
        use crate::rank_place::{Layout, RankPlace};
        for pattern in [AccessPattern::Seq, AccessPattern::Shuffle] {
            for n in [0u64, 5, 12, 13, 30] {
                let mut whole = OffsetGen::new(pattern, 0, 12, 4096, 9);
                let want: Vec<u64> = (0..n + 20).map(|_| whole.next_offset()).collect();
                let place = RankPlace {
                    rank: 1,
                    ranks: 2,
                    layout: Layout::PerRank,
                    region: 12 * 4096,
                    segments: 1,
                    bs: 4096,
                    resume_ops: n,
                };
                let mut rest = OffsetGen::new(pattern, 0, 12, 4096, 9).with_place(Some(place));
                let got: Vec<u64> = (0..20).map(|_| rest.next_offset()).collect();
                assert_eq!(got, want[n as usize..], "{pattern:?} after {n}");
            }
        }
        // Random orders draw new offsets instead of repeating the first ones.
        let mut a = OffsetGen::new(AccessPattern::Rand, 0, 1 << 20, 4096, 9);
        let place = RankPlace {
            rank: 0,
            ranks: 1,
            layout: Layout::PerRank,
            region: 4096,
            segments: 1,
            bs: 4096,
            resume_ops: 100,
        };
        let mut b =
            OffsetGen::new(AccessPattern::Rand, 0, 1 << 20, 4096, 9).with_place(Some(place));
        let va: Vec<u64> = (0..10).map(|_| a.next_offset()).collect();
        let vb: Vec<u64> = (0..10).map(|_| b.next_offset()).collect();
        assert_ne!(va, vb);
    }
}
