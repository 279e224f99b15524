//! Reading around the misses of random reads, region by region: how
//! often each 1 MiB region of a file missed the page cache, what a miss
//! and what a whole region cost the reads that waited for them, and which
//! region is due to be read whole ([`policy::around_after`]). The counters
//! exist only once a file has missed: most files a program opens never
//! do, or are read in order. Misses that walk forward through the file
//! (each past the last) buy only the part of a region ahead of them, and
//! only when the walk's step says it pays ([`policy::walk_pays`]).

use super::counter::add;
use super::policy::{self, AROUND_REGION};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::OnceLock;

/// A region's counter once it has been read whole.
const READ: u8 = u8::MAX;

/// [`Around::first_off`] before any miss.
const NO_MISS: u64 = u64::MAX;

/// Counters kept at most (1 MiB of them, for a file of 1 TiB): the regions
/// of a larger file share them, region modulo this, so a region may be
/// read whole a little early, or not at all, and the memory stays bounded.
const MAX_COUNTERS: u64 = 1 << 20;

/// A running mean: count and sum, ns.
#[derive(Default)]
struct Mean {
    n: AtomicU64,
    sum: AtomicU64,
}

impl Mean {
    fn add(&self, ns: u64) {
        add(&self.n, 1);
        add(&self.sum, ns);
    }

    fn get(&self) -> Option<f64> {
        let n = self.n.load(Relaxed);
        (n > 0).then(|| self.sum.load(Relaxed) as f64 / n as f64)
    }
}

/// One file's misses per region, counted as [`super::counter`] counts:
/// two threads missing at once may count one miss (a region read a miss
/// later).
pub(crate) struct Around {
    /// The file's length, bytes, and its regions.
    len: u64,
    regions: u64,
    counts: OnceLock<Box<[AtomicU8]>>,
    miss: Mean,
    region: Mean,
    /// Regions that missed at least once, and regions read whole.
    missed: AtomicU64,
    bought: AtomicU64,
    /// The offsets of the first and the last miss, and whether every miss
    /// so far lay past the one before it: a walk forward through the file,
    /// which reads nothing behind it again.
    first_off: AtomicU64,
    last_off: AtomicU64,
    forward: AtomicBool,
}

impl Around {
    /// For a file of `len` bytes.
    pub(crate) fn new(len: u64) -> Around {
        Around {
            len,
            regions: len.div_ceil(AROUND_REGION).max(1),
            counts: OnceLock::new(),
            miss: Mean::default(),
            region: Mean::default(),
            missed: AtomicU64::new(0),
            bought: AtomicU64::new(0),
            first_off: AtomicU64::new(NO_MISS),
            last_off: AtomicU64::new(0),
            forward: AtomicBool::new(true),
        }
    }

    /// The counter of the region of `off` among `counts`.
    fn counter<'a>(&self, counts: &'a [AtomicU8], off: u64) -> &'a AtomicU8 {
        let region = (off / AROUND_REGION).min(self.regions - 1);
        &counts[(region % counts.len() as u64) as usize]
    }

    /// Counts a random read at `off` that waited `wait_ns` beyond moving
    /// its bytes, when that makes it a miss ([`policy::MISS_NS`]).
    pub(crate) fn miss(&self, off: u64, wait_ns: u64) {
        if wait_ns < policy::MISS_NS {
            return;
        }
        self.miss.add(wait_ns);
        if self.first_off.load(Relaxed) == NO_MISS {
            self.first_off.store(off, Relaxed);
        } else if off <= self.last_off.load(Relaxed) {
            self.forward.store(false, Relaxed);
        }
        self.last_off.store(off, Relaxed);
        let counts = self.counts.get_or_init(|| {
            (0..self.regions.min(MAX_COUNTERS))
                .map(|_| AtomicU8::new(0))
                .collect()
        });
        let c = self.counter(counts, off);
        let k = c.load(Relaxed);
        if k == 0 {
            add(&self.missed, 1);
        }
        if k != READ {
            c.store(k.saturating_add(1).min(READ - 1), Relaxed);
        }
    }

    /// The byte range `[start, end)` of the region of `off` when its
    /// misses have paid for reading it whole; it then counts as read.
    /// While the misses walk forward, the range starts at the page of
    /// `off` (nothing behind is read again) and is due only when the
    /// misses the walk's mean step puts in it pay ([`policy::walk_pays`]).
    /// `seq_mib_s`: the profile's cold sequential speed
    /// ([`policy::cold_seq_mib_s`], looked up once per file).
    pub(crate) fn due(&self, off: u64, seq_mib_s: f64) -> Option<(u64, u64)> {
        let c = self.counter(self.counts.get()?, off);
        let k = c.load(Relaxed);
        // No miss here yet (what every read of a cached file finds): never
        // due, as `around_after` asks for at least one.
        if k == 0 || k == READ {
            return None;
        }
        let miss = self.miss.get()?;
        let region = self
            .region
            .get()
            .unwrap_or_else(|| policy::region_prior(miss, seq_mib_s));
        let after = policy::around_after(miss, region);
        if u32::from(k) < after {
            return None;
        }
        let mut start = (off / AROUND_REGION) * AROUND_REGION;
        let end = start + AROUND_REGION;
        if self.forward.load(Relaxed) {
            let from = off & !4095;
            // The last region's part ahead ends with the file.
            let ahead = end.min(self.len).saturating_sub(from);
            if !policy::walk_pays(ahead, self.step()?, after) {
                return None;
            }
            start = from;
        }
        c.store(READ, Relaxed);
        add(&self.bought, 1);
        Some((start, end))
    }

    /// The mean step between the misses of a walk forward, bytes (None
    /// before two misses).
    fn step(&self) -> Option<u64> {
        let n = self.miss.n.load(Relaxed);
        let first = self.first_off.load(Relaxed);
        (n >= 2 && first != NO_MISS)
            .then(|| self.last_off.load(Relaxed).saturating_sub(first) / (n - 1))
    }

    /// Whether the misses so far walk forward (each past the last).
    fn walking(&self) -> bool {
        self.forward.load(Relaxed)
    }

    /// What the read that waited for a region just bought waited beyond
    /// moving its own bytes: the region's cost, when it was one (a region
    /// found cached costs nothing and says nothing, and the part of one
    /// ahead of a walk is not a whole region's cost).
    pub(crate) fn bought(&self, wait_ns: u64) {
        if wait_ns >= policy::MISS_NS && !self.walking() {
            self.region.add(wait_ns);
        }
    }

    /// Whether the misses are dense ([`policy::dense`]).
    pub(crate) fn dense(&self) -> bool {
        policy::dense(self.bought.load(Relaxed), self.missed.load(Relaxed))
    }

    /// Regions read whole so far.
    #[cfg(test)]
    fn read(&self) -> usize {
        self.counts
            .get()
            .map_or(0, |c| c.iter().filter(|x| x.load(Relaxed) == READ).count())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Profile;

    #[test]
    fn a_region_is_due_once_its_misses_cost_what_reading_it_does() {
        // 1024 MiB/s: a 1 MiB region is guessed at a miss plus 1 ms; with
        // misses of 100 µs it is due after 10 of them.
        let p = Profile::builtin().with_seq_cold_cached(1024.0);
        let a = Around::new(8 * AROUND_REGION);
        let at = 3 * AROUND_REGION + 4096;
        assert_eq!(
            a.due(at, policy::cold_seq_mib_s(&p)),
            None,
            "nothing missed yet"
        );
        // Misses at random places of the region (not a walk forward).
        for i in 0..10 {
            assert_eq!(
                a.due(at, policy::cold_seq_mib_s(&p)),
                None,
                "after {i} misses"
            );
            a.miss(at + (i * 7 % 10) * 8192, 100_000);
        }
        assert_eq!(
            a.due(at, policy::cold_seq_mib_s(&p)),
            Some((3 * AROUND_REGION, 4 * AROUND_REGION))
        );
        // Once read, never again; other regions keep their own count.
        a.miss(at, 100_000);
        assert_eq!(a.due(at, policy::cold_seq_mib_s(&p)), None);
        assert_eq!(a.due(0, policy::cold_seq_mib_s(&p)), None);
        assert_eq!(a.read(), 1);
    }

    #[test]
    fn a_walk_forward_reads_only_the_part_ahead_and_only_where_its_step_pays() {
        // 1024 MiB/s and misses of 100 µs: a region pays after 10 misses.
        let p = Profile::builtin().with_seq_cold_cached(1024.0);
        let mib_s = policy::cold_seq_mib_s(&p);
        // Steps of 8 KiB from the start of region 2: the rest of the
        // region holds some 117 more misses; only it is read.
        let a = Around::new(8 * AROUND_REGION);
        let base = 2 * AROUND_REGION;
        for i in 0..10 {
            a.miss(base + i * 8192, 100_000);
        }
        let at = base + 10 * 8192 + 100;
        assert_eq!(
            a.due(at, mib_s),
            Some((base + 10 * 8192, 3 * AROUND_REGION))
        );
        // What that part cost is not what a region costs.
        a.bought(3_000_000);
        assert_eq!(a.region.get(), None);
        // Steps of 100 KiB (an index rebuild reading record headers): when
        // the region is due by its count, the next read lies 1000 KiB into
        // it, and the 24 KiB left hold no other; nothing is read ahead.
        let a = Around::new(8 * AROUND_REGION);
        for i in 0..10 {
            a.miss(base + i * (100 << 10), 100_000);
        }
        assert_eq!(a.due(base + 10 * (100 << 10), mib_s), None);
        // A miss behind the last ends the walk: the region, read 11 times,
        // is read whole.
        a.miss(base + 4096, 100_000);
        assert_eq!(a.due(base + 4096, mib_s), Some((base, 3 * AROUND_REGION)));
        // In the last region, what lies ahead ends with the file: steps of
        // 8 KiB with 64 KiB left hold 8 misses, fewer than pay.
        let len = 2 * AROUND_REGION + (144 << 10);
        let a = Around::new(len);
        for i in 0..10 {
            a.miss(base + i * 8192, 100_000);
        }
        assert_eq!(a.due(base + (80 << 10), mib_s), None);
    }

    #[test]
    fn what_a_region_cost_sets_when_the_next_is_due() {
        let p = Profile::builtin().with_seq_cold_cached(1024.0);
        let a = Around::new(8 * AROUND_REGION);
        for _ in 0..10 {
            a.miss(0, 100_000);
        }
        assert!(a.due(0, policy::cold_seq_mib_s(&p)).is_some());
        // It cost 3 ms, not the 1.1 ms guessed: the next region is due
        // after 29 misses.
        a.bought(3_000_000);
        for i in 0..29 {
            assert_eq!(
                a.due(AROUND_REGION, policy::cold_seq_mib_s(&p)),
                None,
                "after {i} misses"
            );
            a.miss(AROUND_REGION, 100_000);
        }
        assert!(a.due(AROUND_REGION, policy::cold_seq_mib_s(&p)).is_some());
        // A region found cached says nothing of what one costs.
        a.bought(1_000);
        assert_eq!(a.region.get(), Some(3_000_000.0));
    }

    #[test]
    fn copies_out_of_the_page_cache_are_not_misses() {
        let p = Profile::builtin().with_seq_cold_cached(1024.0);
        let a = Around::new(4 * AROUND_REGION);
        for _ in 0..1000 {
            a.miss(0, policy::MISS_NS - 1);
        }
        assert!(
            a.counts.get().is_none(),
            "no counters for a file that never missed"
        );
        assert_eq!(a.due(0, policy::cold_seq_mib_s(&p)), None);
    }

    #[test]
    fn the_count_before_a_region_is_bought_is_bounded() {
        assert_eq!(policy::around_after(100_000.0, 1_100_000.0), 10);
        assert_eq!(policy::around_after(2_000_000.0, 2_100_000.0), 1);
        assert_eq!(policy::around_after(1.0, 1e9), 63);
    }

    #[test]
    fn the_counters_of_a_huge_file_stay_bounded() {
        let p = Profile::builtin().with_seq_cold_cached(1024.0);
        let a = Around::new(1 << 50);
        let far = (1u64 << 50) - AROUND_REGION;
        for _ in 0..63 {
            a.miss(far, 10_000_000);
        }
        assert_eq!(a.counts.get().map(|c| c.len() as u64), Some(MAX_COUNTERS));
        // The region's own range, not its counter's.
        assert_eq!(
            a.due(far, policy::cold_seq_mib_s(&p)),
            Some((far, far + AROUND_REGION))
        );
    }

    #[test]
    fn the_last_region_of_a_file_is_its_own() {
        let p = Profile::builtin().with_seq_cold_cached(1024.0);
        let a = Around::new(AROUND_REGION + 10);
        for _ in 0..63 {
            a.miss(AROUND_REGION + 5, 10_000_000);
        }
        assert_eq!(
            a.due(AROUND_REGION + 5, policy::cold_seq_mib_s(&p)),
            Some((AROUND_REGION, 2 * AROUND_REGION))
        );
    }
}
