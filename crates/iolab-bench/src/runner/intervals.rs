//! `--interval`: each worker cuts its completions into intervals
//! ([`Sampler`]); the collector merges the workers' parts into one sample
//! per interval once every worker has closed it ([`Merger`]).

use crate::metrics::{new_histogram, LatencySummary};
use crate::record::IntervalSample;
use hdrhistogram::Histogram;
use std::collections::BTreeMap;

/// One interval of one worker.
pub(super) struct Part {
    idx: u64,
    ops: u64,
    bytes: u64,
    hist: Histogram<u64>,
}

/// A worker's open interval.
pub(super) struct Sampler {
    step: u64,
    next: u64,
    idx: u64,
    hist: Option<Histogram<u64>>,
    ops: u64,
    bytes: u64,
}

impl Sampler {
    /// Intervals of `step` ns (None: no sampling) from `start` ns on.
    pub fn new(step: Option<u64>, start: u64) -> Self {
        Sampler {
            step: step.unwrap_or(0),
            next: start + step.unwrap_or(0),
            idx: 0,
            hist: step.map(|_| new_histogram()),
            ops: 0,
            bytes: 0,
        }
    }

    /// `ops` completed ops that moved `bytes`.
    #[inline]
    pub fn count(&mut self, ops: u64, bytes: u64) {
        if self.hist.is_some() {
            self.ops += ops;
            self.bytes += bytes;
        }
    }

    /// `n` timed ops of latency `lat` ns (counted apart with [`Sampler::count`]).
    #[inline]
    pub fn record_lat(&mut self, lat: u64, n: u64) {
        if let Some(h) = self.hist.as_mut() {
            h.saturating_record_n(lat, n);
        }
    }

    /// Forgets what was recorded (the ramp ended: it is not measured).
    pub fn clear(&mut self) {
        if let Some(h) = self.hist.as_mut() {
            h.reset();
        }
        (self.ops, self.bytes) = (0, 0);
    }

    /// Closes every interval that ended by `t` ns, handing each to `send`.
    #[inline]
    pub fn tick(&mut self, t: u64, mut send: impl FnMut(Part)) {
        if self.hist.is_none() || t < self.next {
            return;
        }
        while t >= self.next {
            let h = self.hist.as_mut().expect("interval histogram");
            send(Part {
                idx: self.idx,
                ops: self.ops,
                bytes: self.bytes,
                hist: h.clone(),
            });
            h.reset();
            (self.ops, self.bytes) = (0, 0);
            self.idx += 1;
            self.next += self.step;
        }
    }
}

/// Merges interval parts into samples, once every worker has reported.
pub(super) struct Merger {
    workers: usize,
    step_ns: u64,
    parts: BTreeMap<u64, (usize, u64, u64, Histogram<u64>)>,
    out: Vec<IntervalSample>,
}

impl Merger {
    /// For `workers` workers and intervals of `step_ns`.
    pub fn new(workers: usize, step_ns: u64) -> Self {
        Merger {
            workers,
            step_ns: step_ns.max(1),
            parts: BTreeMap::new(),
            out: Vec::new(),
        }
    }

    /// One worker's part; calls `on` with the sample when it is complete.
    pub fn add(&mut self, p: Part, on: Option<&(dyn Fn(&IntervalSample) + Sync)>) {
        let e = self
            .parts
            .entry(p.idx)
            .or_insert_with(|| (0, 0, 0, new_histogram()));
        e.0 += 1;
        e.1 += p.ops;
        e.2 += p.bytes;
        let _ = e.3.add(&p.hist);
        if e.0 == self.workers {
            let (_, ops, bytes, h) = self.parts.remove(&p.idx).expect("present");
            let s = self.sample(p.idx, ops, bytes, &h);
            if let Some(f) = on {
                f(&s);
            }
            self.out.push(s);
        }
    }

    fn sample(&self, idx: u64, ops: u64, bytes: u64, h: &Histogram<u64>) -> IntervalSample {
        let secs = self.step_ns as f64 / 1e9;
        let l = LatencySummary::of(h);
        IntervalSample {
            t_ms: (idx + 1) * self.step_ns / 1_000_000,
            mib_per_s: bytes as f64 / secs / (1 << 20) as f64,
            iops: ops as f64 / secs,
            p50_ns: l.p50_ns,
            p99_ns: l.p99_ns,
            mean_ns: l.mean_ns,
        }
    }

    /// Intervals some worker never closed (it ended first) are dropped:
    /// they would understate the rate.
    pub fn finish(mut self) -> Vec<IntervalSample> {
        self.out.sort_by_key(|s| s.t_ms);
        self.out
    }
}
