//! The result schema shared by the runner, the exporters and (later) the
//! report: one record per configuration, carrying the full spec and the
//! environment so a record alone is enough to reproduce the run.

use crate::env::Environment;
use crate::metrics::{CpuUsage, LatencySummary};
use crate::spec::WorkloadSpec;
use crate::stats::Stats;
use serde::{Deserialize, Serialize};

/// Version of this schema; bumped on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

/// What latency means in every record and table.
pub const LATENCY_DEFINITION: &str = "latency = from the runner handing an op to the engine until the runner sees its completion (fio clat for synchronous engines, fio lat for asynchronous ones)";

/// One interval's sample (`--interval`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct IntervalSample {
    /// End of the interval, ms since the measured phase began.
    pub t_ms: u64,
    /// Throughput in the interval, MiB/s.
    pub mib_per_s: f64,
    /// Ops per second in the interval.
    pub iops: f64,
    /// Median latency of the interval's ops, ns.
    pub p50_ns: u64,
    /// 99th percentile of the interval's ops, ns.
    pub p99_ns: u64,
    /// Mean latency of the interval's ops, ns (fio's averaged latency logs).
    #[serde(default)]
    pub mean_ns: f64,
}

/// The metrics of one run of one configuration.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunMetrics {
    /// Wall time of the measured phase, ns.
    pub duration_ns: u64,
    /// Bytes moved.
    pub bytes: u64,
    /// Ops completed.
    pub ops: u64,
    /// Read ops completed.
    pub read_ops: u64,
    /// Write ops completed.
    pub write_ops: u64,
    /// Ops that failed (an error, a short transfer, a verify mismatch, a
    /// timeout).
    pub errors: u64,
    /// The first errors, word for word (at most
    /// [`crate::runner::FIRST_ERRORS_KEPT`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub first_errors: Vec<String>,
    /// Throughput, MiB/s.
    pub mib_per_s: f64,
    /// Ops per second.
    pub iops: f64,
    /// Latency percentiles.
    pub latency: LatencySummary,
    /// CPU and scheduler cost.
    pub cpu: CpuUsage,
    /// Fraction of the data resident in the page cache before the run.
    pub resident_before: f64,
    /// Fraction of the data resident in the page cache after the run.
    #[serde(default)]
    pub resident_after: f64,
    /// Each file's resident fraction before and after the run (mincore).
    #[serde(default)]
    pub residency: Vec<crate::residency::FileResidency>,
    /// Whether the cache state asked for held to the end of the run: false
    /// for a cold run that ended more than 5 % resident and may have read a
    /// block twice (its later reads may have been cache hits), or a warm run
    /// that lost its pages. None with `--cache as-is`.
    #[serde(default)]
    pub cache_held: Option<bool>,
    /// Per-interval samples (empty without `--interval`).
    pub intervals: Vec<IntervalSample>,
    /// The run was stopped early (Ctrl-C).
    pub interrupted: bool,
    /// The whole latency histogram (for arbitrary percentiles and fio's
    /// json+ bins); not serialised, the summary above is.
    #[serde(skip)]
    pub latency_hist: Option<hdrhistogram::Histogram<u64>>,
    /// The memory the buffers got (`--mem`), summed over workers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem: Option<iolab::mem::Backing>,
    /// The device's counters over the run, in iostat's terms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<crate::devstat::DeviceView>,
}

/// Statistics across the repeats of one configuration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RepeatSummary {
    /// Throughput, MiB/s.
    pub mib_per_s: Stats,
    /// IOPS.
    pub iops: Stats,
    /// 99th percentile latency, ns.
    pub p99_ns: Stats,
}

impl RepeatSummary {
    /// Summary of `runs`.
    pub fn of(runs: &[RunMetrics]) -> Self {
        let f = |g: fn(&RunMetrics) -> f64| Stats::of(&runs.iter().map(g).collect::<Vec<_>>());
        RepeatSummary {
            mib_per_s: f(|r| r.mib_per_s),
            iops: f(|r| r.iops),
            p99_ns: f(|r| r.latency.p99_ns as f64),
        }
    }
}

/// One configuration's complete result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchRecord {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Short configuration label (e.g. `U32B1D`).
    pub label: String,
    /// What was run.
    pub spec: WorkloadSpec,
    /// Where it ran.
    pub env: Environment,
    /// Unix time the configuration started, ms.
    pub started_unix_ms: u64,
    /// Each repeat's metrics.
    pub runs: Vec<RunMetrics>,
    /// Across repeats.
    pub summary: RepeatSummary,
    /// What latency means.
    pub latency_definition: String,
    /// The side-by-side comparison with fio (`--vs fio`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vs_fio: Option<FioComparison>,
}

/// iolab and fio run alternately on the same file (`--vs fio`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FioComparison {
    /// The exact fio command.
    pub command: String,
    /// How iolab's terms map to fio's.
    pub notes: Vec<String>,
    /// iolab's numbers, one per pair.
    pub iolab: Vec<crate::fio::Comparable>,
    /// fio's numbers, one per pair.
    pub fio: Vec<crate::fio::Comparable>,
    /// For the null engine: fio again with iolab's per-op accounting, run
    /// in the same pairs (the fair ratio; the one above is the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fair: Option<FairFio>,
}

/// fio with the same per-op accounting as iolab (null engine, `--vs fio`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FairFio {
    /// The exact fio command.
    pub command: String,
    /// What was made equal, and what was not.
    pub notes: Vec<String>,
    /// The CPU both tools were pinned to.
    pub cpu: usize,
    /// fio's numbers, one per pair.
    pub fio: Vec<crate::fio::Comparable>,
}

impl BenchRecord {
    /// Builds a record from runs (the summary is computed here).
    pub fn new(
        spec: WorkloadSpec,
        env: Environment,
        started_unix_ms: u64,
        runs: Vec<RunMetrics>,
    ) -> Self {
        BenchRecord {
            schema_version: SCHEMA_VERSION,
            label: spec.label(),
            summary: RepeatSummary::of(&runs),
            spec,
            env,
            started_unix_ms,
            runs,
            latency_definition: LATENCY_DEFINITION.to_string(),
            vs_fio: None,
        }
    }

    /// The run whose throughput is the median (the one tables show).
    pub fn median_run(&self) -> Option<&RunMetrics> {
        let mut v: Vec<&RunMetrics> = self.runs.iter().collect();
        v.sort_by(|a, b| a.mib_per_s.total_cmp(&b.mib_per_s));
        v.get(v.len().saturating_sub(1) / 2).copied()
    }
}

/// Unix time now, ms.
pub fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
