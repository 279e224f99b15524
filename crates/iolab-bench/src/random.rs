//! The project's one random generator ([`Rng`], splitmix64) and the keyed
//! bijection ([`Permutation`]) that `shuffle` and skewed offsets visit
//! blocks in. Both are small and sit below `offsets` and `skew`, which
//! each use them.

/// splitmix64: a tiny, fast, statistically sound generator. Hand-written on
/// purpose: it is on the per-op hot path and needs no state beyond a u64.
#[derive(Clone, Copy, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// Next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (multiply-shift; bias below 2^-32 for n < 2^32).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Shuffles `v` in place (Fisher-Yates).
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            v.swap(i, j);
        }
    }
}

/// A keyed bijection on `0..n`.
#[derive(Clone, Copy, Debug)]
pub struct Permutation {
    n: u64,
    half_bits: u32,
    keys: [u64; 4],
}

impl Permutation {
    /// A permutation of `0..n` chosen by `key`.
    pub fn new(n: u64, key: u64) -> Self {
        let bits = 64 - n.saturating_sub(1).leading_zeros();
        let half_bits = bits.div_ceil(2).max(1);
        let mut r = Rng::new(key);
        Permutation {
            n,
            half_bits,
            keys: [r.next_u64(), r.next_u64(), r.next_u64(), r.next_u64()],
        }
    }

    #[inline]
    fn round(&self, x: u64, k: u64) -> u64 {
        let mut z = x ^ k;
        z = (z ^ (z >> 31)).wrapping_mul(0x7FB5_D329_728E_A185);
        z ^ (z >> 27)
    }

    #[inline]
    fn feistel(&self, x: u64) -> u64 {
        let mask = (1u64 << self.half_bits) - 1;
        let (mut l, mut r) = (x >> self.half_bits, x & mask);
        for k in self.keys {
            let t = l ^ (self.round(r, k) & mask);
            l = r;
            r = t;
        }
        (l << self.half_bits) | r
    }

    /// The image of `i` (`i < n`).
    #[inline]
    pub fn apply(&self, i: u64) -> u64 {
        // Cycle walking: the Feistel domain is at most 4n, so this loops
        // fewer than four times on average.
        let mut x = self.feistel(i);
        while x >= self.n {
            x = self.feistel(x);
        }
        x
    }
}
