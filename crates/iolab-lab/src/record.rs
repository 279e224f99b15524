//! The lab's record: one line of `OUT/NAME.jsonl` per configuration, with
//! the decisive value of each repeat, other values by name, and (for runner
//! configurations) the full bench record.

use super::{Config, Measured, Scale};
use iolab_bench::record::BenchRecord;
use iolab_bench::stats::Stats;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// Version of the lab record layout.
pub const LAB_SCHEMA_VERSION: u32 = 1;

/// The machine a record belongs to: resume only reuses records of the same
/// host, kernel and device.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Machine {
    /// Host name.
    pub host: String,
    /// Kernel release.
    pub kernel: String,
    /// Block device under the data directory (or the file system when
    /// there is none, e.g. tmpfs).
    pub device: String,
}

impl Machine {
    /// This machine, with the device under `dir`.
    pub fn of(dir: &Path) -> Machine {
        let env = iolab_bench::env::Environment::capture(dir);
        Machine {
            host: env.hostname,
            kernel: env.kernel,
            device: env
                .device
                .or(env.fs_type)
                .unwrap_or_else(|| "unknown".into()),
        }
    }
}

/// One configuration's result in the lab.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LabRecord {
    /// Schema version of iolab records (any iolab record has it).
    pub schema_version: u32,
    /// Always `lab` (tells lab records from bench and sys records).
    pub kind: String,
    /// [`LAB_SCHEMA_VERSION`].
    pub lab_version: u32,
    /// Experiment name.
    pub experiment: String,
    /// Configuration name within the experiment.
    pub key: String,
    /// Resume key (the configuration, spec included, without file paths).
    pub resume_key: String,
    /// What distinguishes the configuration.
    pub tags: BTreeMap<String, String>,
    /// iolab version that measured it.
    pub iolab_version: String,
    /// Where it was measured.
    pub machine: Machine,
    /// Scale of the run.
    pub scale: String,
    /// The command that produced it.
    pub command: String,
    /// Unix time it started, ms.
    pub started_unix_ms: u64,
    /// Unit of `samples`.
    pub unit: String,
    /// The decisive value of each repeat.
    pub samples: Vec<f64>,
    /// Other values by name.
    #[serde(default)]
    pub extra: BTreeMap<String, Vec<f64>>,
    /// Facts read along the way.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The runner's full record, for runner configurations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bench: Option<BenchRecord>,
}

impl LabRecord {
    /// A record of `cfg` measured now.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        experiment: &str,
        cfg: &Config,
        machine: Machine,
        scale: Scale,
        command: &str,
        started_unix_ms: u64,
        m: Measured,
        bench: Option<BenchRecord>,
    ) -> LabRecord {
        LabRecord {
            schema_version: iolab_bench::record::SCHEMA_VERSION,
            kind: "lab".into(),
            lab_version: LAB_SCHEMA_VERSION,
            experiment: experiment.into(),
            key: cfg.key.clone(),
            resume_key: cfg.resume_key(),
            tags: cfg.tags.clone(),
            iolab_version: env!("CARGO_PKG_VERSION").into(),
            machine,
            scale: scale.name().into(),
            command: command.into(),
            started_unix_ms,
            unit: m.unit,
            samples: m.samples,
            extra: m.extra,
            notes: m.notes,
            bench,
        }
    }

    /// A tag's value ("" when absent).
    pub fn tag(&self, k: &str) -> &str {
        self.tags.get(k).map(String::as_str).unwrap_or("")
    }

    /// A tag parsed as a number (0 when absent or not a number).
    pub fn num(&self, k: &str) -> f64 {
        self.tag(k).parse().unwrap_or(0.0)
    }

    /// Statistics of the samples.
    pub fn stats(&self) -> Stats {
        Stats::of(&self.samples)
    }

    /// Statistics of an extra value (all zero when absent).
    pub fn extra_stats(&self, k: &str) -> Stats {
        self.extra.get(k).map(|v| Stats::of(v)).unwrap_or_default()
    }

    /// Parses a line; `None` for lines that are not lab records.
    pub fn parse(line: &str) -> Option<LabRecord> {
        let r: LabRecord = serde_json::from_str(line).ok()?;
        (r.kind == "lab").then_some(r)
    }
}

/// The values a runner record contributes: throughput per run as the
/// samples, and latency, IOPS, CPU and faults per run as extras.
pub fn measured_of(b: &BenchRecord) -> Measured {
    let mut extra: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut put = |k: &str, v: f64| extra.entry(k.to_string()).or_default().push(v);
    for r in &b.runs {
        put("iops", r.iops);
        put("min_ns", r.latency.min_ns as f64);
        put("mean_ns", r.latency.mean_ns);
        put("p50_ns", r.latency.p50_ns as f64);
        put("p99_ns", r.latency.p99_ns as f64);
        put("p99_9_ns", r.latency.p99_9_ns as f64);
        put("max_ns", r.latency.max_ns as f64);
        put("cpu_pct", r.cpu.user_pct + r.cpu.sys_pct);
        put("minor_faults", r.cpu.minor_faults as f64);
        put("major_faults", r.cpu.major_faults as f64);
        put("ops", r.ops as f64);
        put("resident_before", r.resident_before);
    }
    Measured {
        samples: b.runs.iter().map(|r| r.mib_per_s).collect(),
        unit: "MiB/s".into(),
        extra,
        notes: Vec::new(),
    }
}
