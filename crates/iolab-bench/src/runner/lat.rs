//! Latency in the hot loop: which ops are timed (`--lat`, [`Timing`]), and
//! recording them in runs of equal values ([`Runs`]).
//!
//! Every op of one submit call starts at the same clock read and every op
//! of one reap ends at the same one, so the ops of a batch reaped together
//! have one latency. Recording that value once with its count is exact and
//! costs one histogram update per run instead of one per op (t/io_uring
//! adds to its histogram per batch the same way).

use crate::lat_record::LatRecord;
use crate::random::Rng;
use hdrhistogram::Histogram;

/// The start time of an op that is not timed.
pub(super) const UNTIMED: u64 = u64::MAX;

/// Which issued ops are timed.
pub(super) enum Timing {
    /// Every op.
    All,
    /// One op at a random place in each run of `every` issued ops.
    Sampled(Picker),
    /// None.
    Off,
}

impl Timing {
    /// The choice `lat` makes; `seed` places the sampled ops.
    pub fn of(lat: LatRecord, seed: u64) -> Timing {
        match lat {
            LatRecord::All | LatRecord::Sampled(0..=1) => Timing::All,
            LatRecord::Sampled(every) => Timing::Sampled(Picker::new(every, seed)),
            LatRecord::Off => Timing::Off,
        }
    }
}

/// Picks one op in each run of `every` issued ops, at a uniformly random
/// place: each op is timed with probability 1/every whatever its place in
/// a batch (a fixed place, say the first of each batch, would time only
/// the ops that wait longest or shortest).
pub(super) struct Picker {
    every: u32,
    pos: u32,
    pick: u32,
    rng: Rng,
}

impl Picker {
    fn new(every: u32, seed: u64) -> Picker {
        let mut rng = Rng::new(seed ^ 0x6c61_7465_6e63_7921);
        let pick = rng.below(every as u64) as u32;
        Picker {
            every,
            pos: 0,
            pick,
            rng,
        }
    }

    /// Whether the next issued op is timed.
    #[inline]
    pub fn take(&mut self) -> bool {
        let hit = self.pos == self.pick;
        self.pos += 1;
        if self.pos == self.every {
            self.pos = 0;
            self.pick = self.rng.below(self.every as u64) as u32;
        }
        hit
    }
}

/// Equal latencies in a row, recorded as one value with a count.
#[derive(Default)]
pub(super) struct Runs {
    lat: u64,
    n: u64,
}

impl Runs {
    /// One op of latency `lat` ns; a change of value records the run so far.
    #[inline]
    pub fn add(&mut self, lat: u64, h: &mut Histogram<u64>, iv: &mut super::intervals::Sampler) {
        if lat != self.lat {
            self.flush(h, iv);
            self.lat = lat;
        }
        self.n += 1;
    }

    /// Records the run so far.
    #[inline]
    pub fn flush(&mut self, h: &mut Histogram<u64>, iv: &mut super::intervals::Sampler) {
        match self.n {
            0 => return,
            // A run of one (depth 1: every round) inlined, as one value
            // records fastest; longer runs (one or two a round) out of line.
            1 => h.saturating_record(self.lat),
            n => record_many(h, self.lat, n),
        }
        iv.record_lat(self.lat, self.n);
        self.n = 0;
    }
}

#[inline(never)]
fn record_many(h: &mut Histogram<u64>, lat: u64, n: u64) {
    h.saturating_record_n(lat, n);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_picker_times_exactly_one_op_in_each_run_at_varying_places() {
        let mut p = Picker::new(32, 7);
        let mut places = std::collections::HashSet::new();
        for _ in 0..200 {
            let hits: Vec<usize> = (0..32).filter(|_| p.take()).collect();
            assert_eq!(hits.len(), 1, "{hits:?}");
            places.insert(hits[0]);
        }
        // 200 runs of 32 hit far more than a handful of places.
        assert!(places.len() > 20, "{places:?}");
    }

    #[test]
    fn runs_record_each_value_with_its_count() {
        let mut h = crate::metrics::new_histogram();
        let mut iv = super::super::intervals::Sampler::new(None, 0);
        let mut r = Runs::default();
        for lat in [5, 5, 5, 9, 9, 5] {
            r.add(lat, &mut h, &mut iv);
        }
        r.flush(&mut h, &mut iv);
        assert_eq!(h.len(), 6);
        assert_eq!(h.count_at(5), 4);
        assert_eq!(h.count_at(9), 2);
    }
}
