//! IOR's stonewalling with wear-out (`--deadline` with `--wearout`): every
//! rank stops at the deadline, the ranks agree on the most ops any of them
//! did, and each then does ops until it has done as many, so every rank
//! moves the same bytes. Two figures come out, as IOR prints them: what the
//! ranks had moved when the deadline stopped them, and the whole run.

use iolab_bench::metrics::{CpuSplit, CpuUsage, LatencySummary};
use iolab_bench::record::RunMetrics;
use serde::{Deserialize, Serialize};

/// Where one rank stood when the deadline stopped it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct StonewallPoint {
    /// Ops it had done (IOR's "pairs accessed").
    pub ops: u64,
    /// Bytes it had moved.
    pub bytes: u64,
    /// When its last op before the deadline completed, ns on rank 0's clock.
    pub end_ns: i64,
}

/// The ranks at the deadline, seen as one (IOR's "stonewalling pairs
/// accessed min … max … min data … mean data … time" line).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct StonewallFigure {
    /// Fewest ops any rank had done.
    pub ops_min: u64,
    /// Most ops any rank had done: what every rank then completed.
    pub ops_max: u64,
    /// Bytes of all ranks at the deadline.
    pub bytes: u64,
    /// Fewest bytes any rank had moved.
    pub bytes_min: u64,
    /// Mean bytes per rank.
    pub bytes_mean: f64,
    /// Latest stop − earliest start, ns.
    pub wall_ns: u64,
    /// Aggregate bandwidth up to the deadline: `bytes` over `wall_ns`, MiB/s.
    pub mib_per_s: f64,
}

impl StonewallFigure {
    /// The figure of the ranks' (start, point) pairs; None when no rank
    /// stopped at a deadline.
    pub fn of(points: &[(i64, StonewallPoint)]) -> Option<StonewallFigure> {
        if points.is_empty() {
            return None;
        }
        let start = points.iter().map(|p| p.0).min()?;
        let end = points.iter().map(|p| p.1.end_ns).max()?;
        let wall_ns = (end - start).max(1) as u64;
        let bytes: u64 = points.iter().map(|p| p.1.bytes).sum();
        Some(StonewallFigure {
            ops_min: points.iter().map(|p| p.1.ops).min()?,
            ops_max: points.iter().map(|p| p.1.ops).max()?,
            bytes,
            bytes_min: points.iter().map(|p| p.1.bytes).min()?,
            bytes_mean: bytes as f64 / points.len() as f64,
            wall_ns,
            mib_per_s: bytes as f64 / (1u64 << 20) as f64 / (wall_ns as f64 / 1e9),
        })
    }
}

/// One rank's two phases as one run: counts and latency added, rates over
/// the whole window (first phase's start to the second's end, the wait for
/// the other ranks between them included, as IOR times it), CPU weighted by
/// each phase's length.
pub fn combine(a: RunMetrics, b: RunMetrics) -> RunMetrics {
    let window = match (a.window, b.window) {
        (Some((s, _)), Some((_, e))) => Some((s, e)),
        (w, None) | (None, w) => w,
    };
    let duration_ns = window.map_or(a.duration_ns + b.duration_ns, |(s, e)| {
        e.saturating_duration_since(s).as_nanos() as u64
    });
    let hist = match (a.latency_hist.clone(), &b.latency_hist) {
        (Some(mut h), Some(hb)) => {
            // Both come from new_histogram(): same bounds, cannot fail.
            let _ = h.add(hb);
            Some(h)
        }
        (h, None) => h,
        (None, h) => h.clone(),
    };
    let secs = duration_ns.max(1) as f64 / 1e9;
    let (bytes, ops) = (a.bytes + b.bytes, a.ops + b.ops);
    let mut first_errors = a.first_errors.clone();
    first_errors.extend(b.first_errors.iter().cloned());
    first_errors.truncate(iolab_bench::runner::FIRST_ERRORS_KEPT);
    RunMetrics {
        duration_ns,
        bytes,
        ops,
        read_ops: a.read_ops + b.read_ops,
        write_ops: a.write_ops + b.write_ops,
        errors: a.errors + b.errors,
        first_errors,
        mib_per_s: bytes as f64 / secs / (1u64 << 20) as f64,
        iops: ops as f64 / secs,
        latency: hist.as_ref().map(LatencySummary::of).unwrap_or(a.latency),
        latency_hist: hist,
        cpu: cpu(&a, &b, duration_ns),
        resident_before: a.resident_before,
        window,
        interrupted: a.interrupted || b.interrupted,
        ..b
    }
}

fn cpu(a: &RunMetrics, b: &RunMetrics, total_ns: u64) -> CpuUsage {
    let (wa, wb) = (a.duration_ns as f64, b.duration_ns as f64);
    let t = (total_ns as f64).max(1.0);
    let pct = |x: f64, y: f64| (x * wa + y * wb) / t;
    let (ca, cb) = (&a.cpu, &b.cpu);
    let ops = (a.ops + b.ops).max(1) as f64;
    CpuUsage {
        user_pct: pct(ca.user_pct, cb.user_pct),
        sys_pct: pct(ca.sys_pct, cb.sys_pct),
        cpu_ns_per_op: (ca.cpu_ns_per_op * a.ops as f64 + cb.cpu_ns_per_op * b.ops as f64) / ops,
        sqpoll_pct: match (ca.sqpoll_pct, cb.sqpoll_pct) {
            (Some(x), Some(y)) => Some(pct(x, y)),
            (x, y) => x.or(y),
        },
        vol_csw: ca.vol_csw + cb.vol_csw,
        invol_csw: ca.invol_csw + cb.invol_csw,
        minor_faults: ca.minor_faults + cb.minor_faults,
        major_faults: ca.major_faults + cb.major_faults,
        spin_waits: match (ca.spin_waits, cb.spin_waits) {
            (Some(x), Some(y)) => Some(x + y),
            (x, y) => x.or(y),
        },
        split: CpuSplit {
            submit_user_pct: pct(ca.split.submit_user_pct, cb.split.submit_user_pct),
            submit_sys_pct: pct(ca.split.submit_sys_pct, cb.split.submit_sys_pct),
            helpers_pct: pct(ca.split.helpers_pct, cb.split.helpers_pct),
            kernel_pct: pct(ca.split.kernel_pct, cb.split.kernel_pct),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_bench::metrics::new_histogram;
    use std::time::{Duration, Instant};

    fn phase(start: Instant, ms: u64, samples: &[u64]) -> RunMetrics {
        let mut h = new_histogram();
        for &s in samples {
            h.record(s).unwrap();
        }
        RunMetrics {
            duration_ns: ms * 1_000_000,
            bytes: samples.len() as u64 * 4096,
            ops: samples.len() as u64,
            read_ops: samples.len() as u64,
            latency: LatencySummary::of(&h),
            latency_hist: Some(h),
            cpu: CpuUsage {
                user_pct: 50.0,
                ..Default::default()
            },
            window: Some((start, start + Duration::from_millis(ms))),
            ..Default::default()
        }
    }

    #[test]
    fn two_phases_make_one_run_over_the_whole_window() {
        let t0 = Instant::now();
        let a = phase(t0, 100, &[1000; 30]);
        // The second phase starts 50 ms later (the ranks' agreement).
        let b = phase(t0 + Duration::from_millis(150), 50, &[9000; 10]);
        let c = combine(a, b);
        assert_eq!(c.ops, 40);
        assert_eq!(c.bytes, 40 * 4096);
        assert_eq!(c.duration_ns, 200_000_000);
        assert_eq!(c.latency.count, 40);
        assert!(c.latency.p99_ns >= 9000, "{:?}", c.latency);
        let want = 40.0 * 4096.0 / 1048576.0 / 0.2;
        assert!((c.mib_per_s - want).abs() < 1e-9);
        // 50 % busy for 150 of 200 ms.
        assert!((c.cpu.user_pct - 37.5).abs() < 1e-9, "{}", c.cpu.user_pct);
    }

    #[test]
    fn the_stonewall_figure_is_ior_s_line() {
        let p = |ops, end_ns| StonewallPoint {
            ops,
            bytes: ops * 1024,
            end_ns,
        };
        let f = StonewallFigure::of(&[(10, p(5, 1_000_000_010)), (0, p(8, 500_000_000))]).unwrap();
        assert_eq!((f.ops_min, f.ops_max), (5, 8));
        assert_eq!(f.bytes, 13 * 1024);
        assert_eq!(f.bytes_min, 5 * 1024);
        assert_eq!(f.wall_ns, 1_000_000_010);
        assert!(StonewallFigure::of(&[]).is_none());
    }
}
