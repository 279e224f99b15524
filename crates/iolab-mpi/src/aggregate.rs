//! Many ranks' results made into one, as IOR does: aggregate bandwidth is all
//! bytes over (latest end − earliest start) on one clock; per-rank minimum,
//! mean and maximum; the slowest rank named; latency percentiles from the
//! ranks' histograms merged exactly (never an average of percentiles).

use crate::wearout::{StonewallFigure, StonewallPoint};
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use iolab_bench::metrics::{new_histogram, LatencySummary};
use iolab_bench::record::RunMetrics;
use serde::{Deserialize, Serialize};

/// What one rank sends rank 0 after its measured phase.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankReport {
    /// The rank.
    pub rank: u32,
    /// Its host (MPI processor name).
    pub host: String,
    /// Start of its I/O phase, ns on rank 0's clock.
    pub start_ns: i64,
    /// End of its I/O phase, ns on rank 0's clock.
    pub end_ns: i64,
    /// Its metrics, as a single-process run reports them.
    pub metrics: RunMetrics,
    /// Resident fraction of its data before and after the run (cold runs).
    pub resident_before: f64,
    /// Resident fraction of its data after the run.
    pub resident_after: f64,
    /// Its latency histogram, HdrHistogram V2 + deflate encoding.
    pub histogram: Vec<u8>,
    /// Where it stood when the deadline stopped it (`--wearout` runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stonewall: Option<StonewallPoint>,
}

/// Errors merging reports.
#[derive(Debug, thiserror::Error)]
pub enum AggregateError {
    /// No report at all.
    #[error("no rank reported")]
    Empty,
    /// A histogram did not decode or merge.
    #[error("rank {rank}: latency histogram: {why}")]
    Histogram {
        /// The rank whose histogram failed.
        rank: u32,
        /// What went wrong.
        why: String,
    },
}

/// Encodes a histogram for the trip to rank 0.
pub fn encode_histogram(h: &Histogram<u64>) -> Vec<u8> {
    let mut out = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut out)
        .expect("serializing into a Vec cannot fail");
    out
}

/// The lowest, mean and highest of one figure over the ranks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// Lowest.
    pub min: f64,
    /// Mean.
    pub mean: f64,
    /// Highest.
    pub max: f64,
}

impl Spread {
    fn of(v: impl Iterator<Item = f64> + Clone) -> Spread {
        let n = v.clone().count().max(1) as f64;
        Spread {
            min: v.clone().fold(f64::INFINITY, f64::min),
            mean: v.clone().sum::<f64>() / n,
            max: v.fold(f64::NEG_INFINITY, f64::max),
        }
    }
}

/// The run seen as one: what rank 0 writes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Aggregate {
    /// Ranks that reported.
    pub ranks: u32,
    /// Hosts and how many ranks ran on each, in rank order of first use.
    pub hosts: Vec<(String, u32)>,
    /// All ranks' bytes.
    pub bytes: u64,
    /// All ranks' ops.
    pub ops: u64,
    /// All ranks' failed ops.
    pub errors: u64,
    /// Latest end − earliest start, ns.
    pub wall_ns: u64,
    /// Aggregate bandwidth: all bytes over the wall time, MiB/s.
    pub mib_per_s: f64,
    /// Aggregate ops per second.
    pub iops: f64,
    /// Per-rank bandwidth (each rank's bytes over its own time), MiB/s.
    pub rank_mib_per_s: Spread,
    /// The slowest rank (lowest bandwidth): rank, host, MiB/s.
    pub slowest: (u32, String, f64),
    /// Latency percentiles of every rank's ops together.
    pub latency: LatencySummary,
    /// Sum over ranks of user + system CPU, % of one core.
    pub cpu_pct_sum: f64,
    /// Per-rank CPU, % of one core.
    pub rank_cpu_pct: Spread,
    /// Highest resident fraction of any rank's data before the run.
    pub max_resident_before: f64,
    /// Highest resident fraction of any rank's data after the run.
    pub max_resident_after: f64,
    /// `--wearout` runs: the ranks when the deadline stopped them (the
    /// figures above are then those of the whole run, every rank having
    /// done as many ops as the busiest had at the deadline).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stonewall: Option<StonewallFigure>,
}

impl Aggregate {
    /// Merges the ranks' reports, histograms exactly.
    pub fn of(reports: &[RankReport]) -> Result<Aggregate, AggregateError> {
        let first = reports.first().ok_or(AggregateError::Empty)?;
        let mut h = new_histogram();
        for r in reports {
            let mut bytes = &r.histogram[..];
            let rh: Histogram<u64> = Deserializer::new().deserialize(&mut bytes).map_err(|e| {
                AggregateError::Histogram {
                    rank: r.rank,
                    why: format!("{e:?}"),
                }
            })?;
            h.add(&rh).map_err(|e| AggregateError::Histogram {
                rank: r.rank,
                why: format!("{e:?}"),
            })?;
        }
        let start = reports.iter().map(|r| r.start_ns).min().unwrap_or(0);
        let end = reports.iter().map(|r| r.end_ns).max().unwrap_or(0);
        let wall_ns = (end - start).max(1) as u64;
        let bytes: u64 = reports.iter().map(|r| r.metrics.bytes).sum();
        let ops: u64 = reports.iter().map(|r| r.metrics.ops).sum();
        let mut hosts: Vec<(String, u32)> = Vec::new();
        for r in reports {
            match hosts.iter_mut().find(|(h, _)| *h == r.host) {
                Some((_, n)) => *n += 1,
                None => hosts.push((r.host.clone(), 1)),
            }
        }
        let slow = reports
            .iter()
            .min_by(|a, b| a.metrics.mib_per_s.total_cmp(&b.metrics.mib_per_s))
            .unwrap_or(first);
        let cpu = |r: &RankReport| r.metrics.cpu.user_pct + r.metrics.cpu.sys_pct;
        Ok(Aggregate {
            ranks: reports.len() as u32,
            hosts,
            bytes,
            ops,
            errors: reports.iter().map(|r| r.metrics.errors).sum(),
            wall_ns,
            mib_per_s: bytes as f64 / (1u64 << 20) as f64 / (wall_ns as f64 / 1e9),
            iops: ops as f64 / (wall_ns as f64 / 1e9),
            rank_mib_per_s: Spread::of(reports.iter().map(|r| r.metrics.mib_per_s)),
            slowest: (slow.rank, slow.host.clone(), slow.metrics.mib_per_s),
            latency: LatencySummary::of(&h),
            cpu_pct_sum: reports.iter().map(cpu).sum(),
            rank_cpu_pct: Spread::of(reports.iter().map(cpu)),
            max_resident_before: reports
                .iter()
                .map(|r| r.resident_before)
                .fold(0.0, f64::max),
            max_resident_after: reports.iter().map(|r| r.resident_after).fold(0.0, f64::max),
            stonewall: reports
                .iter()
                .map(|r| Some((r.start_ns, r.stonewall?)))
                .collect::<Option<Vec<_>>>()
                .and_then(|p| StonewallFigure::of(&p)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(rank: u32, host: &str, start: i64, end: i64, samples: &[u64]) -> RankReport {
        let mut h = new_histogram();
        for &s in samples {
            h.record(s).unwrap();
        }
        let bytes = samples.len() as u64 * 4096;
        let secs = (end - start) as f64 / 1e9;
        RankReport {
            rank,
            host: host.into(),
            start_ns: start,
            end_ns: end,
            metrics: RunMetrics {
                bytes,
                ops: samples.len() as u64,
                mib_per_s: bytes as f64 / 1048576.0 / secs,
                ..Default::default()
            },
            resident_before: 0.0,
            resident_after: 0.01 * f64::from(rank),
            histogram: encode_histogram(&h),
            stonewall: None,
        }
    }

    #[test]
    fn merged_percentiles_equal_those_of_all_samples() {
        // Two ranks with very different latencies: an average of their
        // medians would be ~50 µs; the true median of all ops is 1 µs-ish.
        let a: Vec<u64> = (0..3000).map(|i| 1000 + i % 7).collect();
        let b: Vec<u64> = (0..1000).map(|i| 100_000 + i).collect();
        let reps = [
            report(0, "n1", 0, 1_000_000_000, &a),
            report(1, "n2", 500_000_000, 2_000_000_000, &b),
        ];
        let g = Aggregate::of(&reps).unwrap();
        let mut all = new_histogram();
        for s in a.iter().chain(&b) {
            all.record(*s).unwrap();
        }
        assert_eq!(g.latency, LatencySummary::of(&all));
        assert!(g.latency.p50_ns < 2000, "{:?}", g.latency);
        assert_eq!(g.ops, 4000);
        assert_eq!(g.bytes, 4000 * 4096);
        // Latest end − earliest start.
        assert_eq!(g.wall_ns, 2_000_000_000);
        let want = 4000.0 * 4096.0 / 1048576.0 / 2.0;
        assert!((g.mib_per_s - want).abs() < 1e-9, "{}", g.mib_per_s);
        // Rank 1 moved 1000 ops in 1.5 s: the slowest.
        assert_eq!(g.slowest.0, 1);
        assert_eq!(g.slowest.1, "n2");
        assert!(g.rank_mib_per_s.min <= g.rank_mib_per_s.mean);
        assert!(g.rank_mib_per_s.mean <= g.rank_mib_per_s.max);
        assert_eq!(g.hosts, vec![("n1".into(), 1), ("n2".into(), 1)]);
        assert!((g.max_resident_after - 0.01).abs() < 1e-12);
    }

    #[test]
    fn a_corrupt_histogram_names_its_rank() {
        let mut r = report(3, "h", 0, 1, &[5]);
        r.histogram.truncate(3);
        let e = Aggregate::of(&[r]).unwrap_err().to_string();
        assert!(e.contains("rank 3"), "{e}");
        assert!(Aggregate::of(&[]).is_err());
    }
}
