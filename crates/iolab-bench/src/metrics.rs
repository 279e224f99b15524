//! Latency histograms and their summaries, CPU usage over a run.
//!
//! Latency is recorded in nanoseconds into an HdrHistogram with three
//! significant digits: every recorded value, and so every percentile, is
//! within 0.1 % of the true value (the histogram's bucket width).

use hdrhistogram::Histogram;
use iolab::usage::Usage;
use serde::{Deserialize, Serialize};

/// Highest latency the histogram tracks exactly: one hour (longer values
/// are clamped, and counted).
pub const MAX_TRACKED_NS: u64 = 3_600_000_000_000;

/// A new latency histogram (1 ns .. 1 h, 3 significant digits).
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_TRACKED_NS, 3).expect("valid histogram bounds")
}

/// Latency by direction (reads \[0\], writes \[1\]) and, when the submit
/// call was timed, its two parts: what fio's output reports apart (a mixed
/// job's read and write sides; slat, clat and lat of asynchronous engines).
#[derive(Clone, Debug, PartialEq)]
pub struct LatSplit {
    /// lat: from the submit call to the completion (slat + clat when the
    /// submit call is timed).
    pub lat: [Histogram<u64>; 2],
    /// slat (the submit call, a batch's time divided evenly among its ops)
    /// and clat (end of the submit call to completion); None when the submit
    /// call was not timed (synchronous engines, or not asked).
    pub parts: Option<[[Histogram<u64>; 2]; 2]>,
}

impl LatSplit {
    /// Empty histograms; `timed`: with slat and clat.
    pub fn new(timed: bool) -> Self {
        let two = || [new_histogram(), new_histogram()];
        LatSplit {
            lat: two(),
            parts: timed.then(|| [two(), two()]),
        }
    }

    /// Every histogram, for resets and merges.
    fn all(&mut self) -> impl Iterator<Item = &mut Histogram<u64>> {
        self.lat
            .iter_mut()
            .chain(self.parts.iter_mut().flatten().flatten())
    }

    /// Forgets what was recorded (the ramp is not measured).
    pub fn reset(&mut self) {
        self.all().for_each(|h| h.reset());
    }

    /// Adds another worker's split to this one.
    pub fn add(&mut self, o: &LatSplit) {
        let theirs = o.lat.iter().chain(o.parts.iter().flatten().flatten());
        for (a, b) in self.all().zip(theirs) {
            let _ = a.add(b);
        }
    }
}

/// Latency percentiles of a run, ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    /// Ops recorded.
    pub count: u64,
    /// Smallest.
    pub min_ns: u64,
    /// Mean.
    pub mean_ns: f64,
    /// Median.
    pub p50_ns: u64,
    /// 90th percentile.
    pub p90_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// 99.9th percentile.
    pub p99_9_ns: u64,
    /// 99.99th percentile.
    pub p99_99_ns: u64,
    /// Largest.
    pub max_ns: u64,
}

impl LatencySummary {
    /// Summarises a histogram (all zero when it is empty).
    pub fn of(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return LatencySummary::default();
        }
        LatencySummary {
            count: h.len(),
            min_ns: h.min(),
            mean_ns: h.mean(),
            p50_ns: h.value_at_quantile(0.50),
            p90_ns: h.value_at_quantile(0.90),
            p99_ns: h.value_at_quantile(0.99),
            p99_9_ns: h.value_at_quantile(0.999),
            p99_99_ns: h.value_at_quantile(0.9999),
            max_ns: h.max(),
        }
    }

    /// The percentiles in order, for checks and tables.
    pub fn ordered(&self) -> [u64; 7] {
        [
            self.min_ns,
            self.p50_ns,
            self.p90_ns,
            self.p99_ns,
            self.p99_9_ns,
            self.p99_99_ns,
            self.max_ns,
        ]
    }
}

/// CPU and scheduler cost of the measured phase (whole process).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuUsage {
    /// User time as a percentage of one core over the wall time.
    pub user_pct: f64,
    /// System time as a percentage of one core.
    pub sys_pct: f64,
    /// CPU time per op, ns (user + system).
    pub cpu_ns_per_op: f64,
    /// Of the system time, the io_uring SQPOLL kernel threads' share, as a
    /// percentage of one core (None without SQPOLL).
    pub sqpoll_pct: Option<f64>,
    /// Voluntary context switches.
    pub vol_csw: u64,
    /// Involuntary context switches.
    pub invol_csw: u64,
    /// Minor page faults.
    pub minor_faults: u64,
    /// Major page faults.
    pub major_faults: u64,
    /// The same CPU split by who used it (submitting threads, helper
    /// threads, kernel I/O threads).
    #[serde(default)]
    pub split: CpuSplit,
    /// With SQPOLL: waits for completions met by spinning on the CQ ring
    /// (`--sqpoll-wait`; the rest slept in `io_uring_enter`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spin_waits: Option<u64>,
}

/// The run's CPU by whose it was, each a percentage of one core over the
/// measured phase. `submit_*` is what fio reports for a job (its thread's
/// RUSAGE_THREAD); the other two are work fio does not count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuSplit {
    /// Submitting (worker) threads, user time.
    pub submit_user_pct: f64,
    /// Submitting threads, system time.
    pub submit_sys_pct: f64,
    /// The process's other threads: engine helpers (thread pool, glibc's
    /// POSIX AIO threads) and the coordinating main thread.
    pub helpers_pct: f64,
    /// io_uring kernel threads serving the workers' rings (iou-sqp SQPOLL
    /// threads, iou-wrk io-wq workers).
    pub kernel_pct: f64,
}

impl CpuSplit {
    /// Submitting threads, user + system.
    pub fn submit_pct(&self) -> f64 {
        self.submit_user_pct + self.submit_sys_pct
    }
}

impl CpuUsage {
    /// From a usage delta over `wall_ns` and `ops` (and SQPOLL threads' CPU).
    pub fn from_usage(u: &Usage, wall_ns: u64, ops: u64, sqpoll_ns: Option<u64>) -> Self {
        let w = wall_ns.max(1) as f64;
        CpuUsage {
            user_pct: u.user_ns as f64 * 100.0 / w,
            sys_pct: u.sys_ns as f64 * 100.0 / w,
            cpu_ns_per_op: if ops > 0 {
                (u.user_ns + u.sys_ns) as f64 / ops as f64
            } else {
                0.0
            },
            sqpoll_pct: sqpoll_ns.map(|n| n as f64 * 100.0 / w),
            vol_csw: u.vol_csw,
            invol_csw: u.invol_csw,
            minor_faults: u.minor_faults,
            major_faults: u.major_faults,
            split: CpuSplit::default(),
            spin_waits: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_ordered_and_accurate() {
        let mut h = new_histogram();
        // A skewed distribution: most fast, a long tail.
        for i in 1..=100_000u64 {
            h.record(1000 + (i * i) % 50_000 + if i % 1000 == 0 { 5_000_000 } else { 0 })
                .unwrap();
        }
        let s = LatencySummary::of(&h);
        let o = s.ordered();
        assert!(o.windows(2).all(|w| w[0] <= w[1]), "{s:?}");
        assert!(s.min_ns as f64 <= s.mean_ns && s.mean_ns <= s.max_ns as f64);
        assert_eq!(s.count, 100_000);
        // 0.1 % of ops are ~5 ms: p99.99 must see them, p99 must not.
        assert!(s.p99_99_ns > 4_990_000 && s.p99_ns < 60_000, "{s:?}");
    }

    #[test]
    fn percentiles_match_a_known_distribution() {
        // Each of 1..=100_000 ns once: the q-quantile is q * 100_000.
        let mut h = new_histogram();
        for v in 1..=100_000u64 {
            h.record(v).unwrap();
        }
        let s = LatencySummary::of(&h);
        for (got, want) in [
            (s.p50_ns, 50_000.0),
            (s.p90_ns, 90_000.0),
            (s.p99_ns, 99_000.0),
            (s.p99_9_ns, 99_900.0),
        ] {
            // Three significant digits: within 0.1 % (one bucket).
            let err = (got as f64 - want).abs() / want;
            assert!(err <= 0.001, "{got} vs {want}: {s:?}");
        }
        assert!((s.mean_ns - 50_000.5).abs() / 50_000.5 <= 0.001, "{s:?}");
    }

    #[test]
    fn empty_histogram_summarises_to_zero() {
        assert_eq!(
            LatencySummary::of(&new_histogram()),
            LatencySummary::default()
        );
    }
}
