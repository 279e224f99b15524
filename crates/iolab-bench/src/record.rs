//! The result schema shared by the runner, the exporters and (later) the
//! report: one record per configuration, carrying the full spec and the
//! environment so a record alone is enough to reproduce the run.

use crate::env::Environment;
use crate::metrics::{CpuUsage, LatencySummary};
use crate::spec::WorkloadSpec;
use crate::stats::Stats;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Version of this schema; bumped on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

/// What latency means in every record and table.
pub const LATENCY_DEFINITION: &str = "latency = from the runner handing an op to the engine until the runner sees its completion (fio clat for synchronous engines, fio lat for asynchronous ones)";

/// What the latency of `spec`'s ops covers: [`LATENCY_DEFINITION`], and
/// with `copy_to_gpu` the copy of each read's bytes into GPU memory too.
pub fn latency_definition(spec: &WorkloadSpec) -> String {
    match spec.copy_to_gpu {
        None => LATENCY_DEFINITION.to_string(),
        Some(n) => format!(
            "{LATENCY_DEFINITION}; a read's completion is seen only once its bytes were copied into the memory of GPU {n}, so its latency covers the read and the copy"
        ),
    }
}

/// One file's resident fraction before and after a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FileResidency {
    /// The file.
    pub path: PathBuf,
    /// Resident fraction of the run's bytes just before the run.
    pub before: f64,
    /// Resident fraction just after the run.
    pub after: f64,
    /// Pages of the file the run could use.
    pub pages: u64,
}

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
    pub residency: Vec<FileResidency>,
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
    /// Latency by direction and (when the submit call was timed) slat and
    /// clat; None unless the job is mixed or asked for slat. Not serialised.
    #[serde(skip)]
    pub lat_split: Option<crate::metrics::LatSplit>,
    /// The memory the buffers got (`--mem`), summed over workers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem: Option<iolab::mem::Backing>,
    /// Where iolab placed the workers itself (no `--cpus`) and why, e.g.
    /// "CPU 1: takes vda's completion interrupts (irq 36)"; None: where
    /// the user pinned them, or where the scheduler put them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<String>,
    /// The device's counters over the run, in iostat's terms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<crate::devstat::DeviceView>,
    /// Latency of the fsync/fdatasync calls of a run with `sync_every`
    /// (which call, and how often, is in the spec).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync_latency: Option<LatencySummary>,
    /// The syncs' whole histogram (fio's JSON `sync` block). Not serialised.
    #[serde(skip)]
    pub sync_hist: Option<hdrhistogram::Histogram<u64>>,
    /// The measured window itself (first worker's start, last completion):
    /// what multi-rank runs place on a common clock. Not serialised.
    #[serde(skip)]
    pub window: Option<(std::time::Instant, std::time::Instant)>,
    /// Of `bytes`, those read (the rest were written).
    #[serde(default)]
    pub read_bytes: u64,
    /// Trims done (fio's trim workloads); they are not among `ops`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub trim_ops: u64,
    /// Bytes trimmed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub trim_bytes: u64,
    /// Latency of each trim. Not serialised.
    #[serde(skip)]
    pub trim_hist: Option<hdrhistogram::Histogram<u64>>,
    /// How deep the queue was (fio's IO depths, submit and complete).
    #[serde(default)]
    pub depths: crate::depths::Depths,
    /// The depth a latency target settled on (fio's `latency_depth`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_depth: Option<u32>,
    /// Every I/O, when the spec logs them (`log_ops`). Not serialised.
    #[serde(skip)]
    pub oplog: Option<Vec<crate::oplog::OpRecord>>,
}

/// serde's test for counts left out at 0.
fn is_zero(v: &u64) -> bool {
    *v == 0
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
    pub iolab: Vec<Comparable>,
    /// fio's numbers, one per pair.
    pub fio: Vec<Comparable>,
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
    pub fio: Vec<Comparable>,
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
            latency_definition: latency_definition(&spec),
            summary: RepeatSummary::of(&runs),
            spec,
            env,
            started_unix_ms,
            runs,
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

/// The numbers compared between iolab and fio.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Comparable {
    /// MiB/s.
    pub mib_per_s: f64,
    /// Ops per second.
    pub iops: f64,
    /// Median latency, ns.
    pub p50_ns: f64,
    /// 99th percentile, ns.
    pub p99_ns: f64,
    /// 99.9th percentile, ns.
    pub p99_9_ns: f64,
    /// CPU, % of one core (user + system): iolab's whole process; fio's
    /// job threads.
    pub cpu_pct: f64,
    /// CPU of the submitting threads, % of one core: iolab's workers
    /// (RUSAGE_THREAD); for fio its job threads (the same quantity).
    #[serde(default)]
    pub cpu_submit_pct: f64,
    /// CPU of helper and kernel I/O threads, % of one core; None where the
    /// tool does not measure it (fio).
    #[serde(default)]
    pub cpu_offload_pct: Option<f64>,
    /// Ops the run completed, reads and writes; 0 where unknown.
    #[serde(default)]
    pub ops: f64,
    /// Requests the file's device completed over the run (its
    /// `/sys/block/DEV/stat` before and after); None without a device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dev_requests: Option<f64>,
    /// The device's mean time per request, ns: iostat's r_await and
    /// w_await weighted by their requests; None when it completed none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dev_await_ns: Option<f64>,
    /// Bytes the file's device moved over the run, read and written; None
    /// without a device. Against the run's own bytes it says whether the
    /// device's figures are the run's (a warm run's are other programs').
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dev_bytes: Option<f64>,
}

impl Comparable {
    /// From an iolab run.
    pub fn of_run(r: &crate::record::RunMetrics) -> Self {
        Comparable {
            mib_per_s: r.mib_per_s,
            iops: r.iops,
            p50_ns: r.latency.p50_ns as f64,
            p99_ns: r.latency.p99_ns as f64,
            p99_9_ns: r.latency.p99_9_ns as f64,
            cpu_pct: r.cpu.user_pct + r.cpu.sys_pct,
            cpu_submit_pct: r.cpu.split.submit_pct(),
            cpu_offload_pct: Some(r.cpu.split.helpers_pct + r.cpu.split.kernel_pct),
            ops: r.ops as f64,
            ..Comparable::default()
        }
        .with_device(r.device.as_ref())
    }

    /// The same figures with the device's view of the run: its requests
    /// and their mean time, from the file's own device (the first).
    pub fn with_device(mut self, view: Option<&crate::devstat::DeviceView>) -> Self {
        if let Some(d) = view.and_then(|v| v.devices.first()) {
            let n = (d.read_ios + d.write_ios) as f64;
            self.dev_requests = Some(n);
            self.dev_bytes = Some((d.read_bytes + d.write_bytes) as f64);
            self.dev_await_ns = (n > 0.0).then(|| {
                (d.read_ios as f64 * d.r_await_ms + d.write_ios as f64 * d.w_await_ms) * 1e6 / n
            });
        }
        self
    }

    /// From fio's JSON output (`--output-format=json --group_reporting`).
    pub fn of_fio_json(text: &str) -> Result<Self, String> {
        let v: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("fio printed no JSON: {e}"))?;
        let jobs = v["jobs"].as_array().ok_or("fio JSON has no jobs")?;
        let mut c = Comparable::default();
        let mut lat: Vec<(f64, &serde_json::Value)> = Vec::new();
        for j in jobs {
            for side in ["read", "write"] {
                let s = &j[side];
                let bw = s["bw_bytes"].as_f64().unwrap_or(0.0);
                if s["io_bytes"].as_u64().unwrap_or(0) == 0 {
                    continue;
                }
                c.mib_per_s += bw / (1 << 20) as f64;
                c.iops += s["iops"].as_f64().unwrap_or(0.0);
                c.ops += s["total_ios"].as_f64().unwrap_or(0.0);
                // lat percentiles where asked for; clat where lat is
                // disabled (the fair null comparison).
                let pct = if s["lat_ns"]["percentile"].is_object() {
                    &s["lat_ns"]["percentile"]
                } else {
                    &s["clat_ns"]["percentile"]
                };
                lat.push((s["iops"].as_f64().unwrap_or(0.0), pct));
            }
            // fio's CPU figures are percentages of one job's run time; with
            // --group_reporting they are the average over the jobs, so scale
            // by the job count to get the whole run's CPU, as iolab reports.
            let jobs = j["job options"]["numjobs"]
                .as_str()
                .and_then(|n| n.parse::<f64>().ok())
                .unwrap_or(1.0);
            c.cpu_pct += jobs
                * (j["usr_cpu"].as_f64().unwrap_or(0.0) + j["sys_cpu"].as_f64().unwrap_or(0.0));
        }
        let pick = |k: &str| -> f64 {
            // With one side (reads only) there is one histogram; else weight by IOPS.
            let tot: f64 = lat.iter().map(|l| l.0).sum();
            lat.iter()
                .map(|(w, p)| {
                    p[k].as_f64().unwrap_or(f64::NAN) * if tot > 0.0 { w / tot } else { 1.0 }
                })
                .sum()
        };
        c.p50_ns = pick("50.000000");
        c.p99_ns = pick("99.000000");
        c.p99_9_ns = pick("99.900000");
        // fio's job threads are its submitting threads.
        c.cpu_submit_pct = c.cpu_pct;
        Ok(c)
    }
}
