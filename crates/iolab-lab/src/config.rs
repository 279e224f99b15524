//! What an experiment is made of: the context it sizes itself by
//! ([`Ctx`]), its configurations ([`Config`], each measured as [`Work`]),
//! what a custom measurement returns ([`Measured`]), and
//! [`measure_bench`], which measures a configuration through the runner.
//! Records, experiments and the driving loop build on this file.

use iolab_bench::error::Result;
use iolab_bench::measure::{self, Measure, NoHooks};
use iolab_bench::prepare::{self, PrepareOpts};
use iolab_bench::record::{unix_ms, BenchRecord};
use iolab_bench::spec::WorkloadSpec;
use iolab_sysbench::Scale;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

/// Everything an experiment may look at to size and run its configurations.
pub struct Ctx<'a> {
    /// Smoke, quick or full.
    pub scale: Scale,
    /// Where data files go.
    pub dir: PathBuf,
    /// Set by Ctrl-C: stop after the configuration under way.
    pub stop: &'a AtomicBool,
    /// Physical memory, bytes.
    pub mem_bytes: u64,
    /// Online CPUs.
    pub cores: u32,
    /// Free space in `dir`, bytes.
    pub free_bytes: u64,
    /// Called the moment iolab creates a data file (so Ctrl-C removes it).
    pub on_created: &'a (dyn Fn(&Path) + Sync),
    /// The MPI ranks when the lab runs under mpirun (rank 0 leads; see
    /// `iolab_mpi::serve`): experiments that can use processes do.
    pub ranks: Option<&'a iolab_mpi::World>,
}

impl Ctx<'_> {
    /// A data file of `size` bytes in the lab directory, shared by every
    /// configuration (and experiment) that wants that size.
    pub fn data_file(&self, size: u64) -> PathBuf {
        self.dir.join(format!("iolab-lab-{size}.dat"))
    }

    /// Picks by scale.
    pub fn pick<T>(&self, smoke: T, quick: T, full: T) -> T {
        self.scale.pick(smoke, quick, full)
    }
}

/// How one configuration is measured.
#[derive(Clone, Debug)]
pub enum Work {
    /// Through the runner: `repeats` runs of the spec.
    Bench {
        /// The workload.
        spec: Box<WorkloadSpec>,
        /// Runs of it.
        repeats: u32,
    },
    /// Through the runner with less memory: a balloon leaves `leave`
    /// bytes of memory available (`None`: a token balloon, for smoke
    /// runs); the data file is made `file_bytes` long first.
    Squeezed {
        /// The workload.
        spec: Box<WorkloadSpec>,
        /// Runs of it.
        repeats: u32,
        /// Memory left available, bytes.
        leave: Option<u64>,
        /// Length of the data file (the spec may read a region of it).
        file_bytes: u64,
    },
    /// By the experiment itself ([`Experiment::custom`](super::Experiment::custom)).
    Custom,
}

/// Read or write speed assumed for estimates when the data comes from
/// the device (this kind of virtio disk: about 1 GB/s).
const COLD_BYTES_PER_SEC: f64 = 1e9;
/// ... and when it comes from the page cache.
const WARM_BYTES_PER_SEC: f64 = 4e9;
/// Set-up of each run (preparing the file, dropping or warming the cache).
const RUN_SETUP_SECS: f64 = 0.3;
/// A custom measurement's weight when nothing better is known.
const CUSTOM_SECS: f64 = 1.0;

/// Expected seconds of one run of `spec`: its time limit when it has one,
/// else its bytes (or the whole file) at the assumed speed.
fn run_secs(spec: &WorkloadSpec) -> f64 {
    let stop = &spec.stop;
    let measured = match (stop.time_ns, stop.bytes, stop.ops) {
        (Some(t), _, _) => t as f64 / 1e9,
        (None, b, o) => {
            let bytes = b
                .or(o.map(|n| n.saturating_mul(spec.bs)))
                .unwrap_or(spec.file_size) as f64;
            let warm = !spec.direct && spec.cache != iolab_bench::spec::CacheMode::Cold;
            bytes
                / if warm {
                    WARM_BYTES_PER_SEC
                } else {
                    COLD_BYTES_PER_SEC
                }
        }
    };
    RUN_SETUP_SECS + spec.ramp_ns as f64 / 1e9 + measured
}

/// One configuration of an experiment.
#[derive(Clone, Debug)]
pub struct Config {
    /// Names the configuration within its experiment (tags in order).
    pub key: String,
    /// What distinguishes it (block size, cache state, technique...).
    pub tags: BTreeMap<String, String>,
    /// How to measure it.
    pub work: Work,
}

impl Config {
    /// A configuration from `(tag, value)` pairs.
    pub fn new(tags: &[(&str, String)], work: Work) -> Config {
        let key = tags
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ");
        Config {
            key,
            tags: tags
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
            work,
        }
    }

    /// Roughly how long measuring this configuration takes, in seconds.
    /// The progress bar weighs configurations by it, so its ETA counts
    /// time rather than configurations (a cold 4 GiB read and a warm 4 KiB
    /// one differ a hundredfold); the bar's rate then corrects a constant
    /// misestimate by itself.
    pub fn expected_secs(&self) -> f64 {
        match &self.work {
            Work::Bench { spec, repeats } => f64::from(*repeats) * run_secs(spec),
            Work::Squeezed {
                spec,
                repeats,
                file_bytes,
                ..
            } => {
                // The data file is made (or checked) first, at about disk speed.
                *file_bytes as f64 / COLD_BYTES_PER_SEC + f64::from(*repeats) * run_secs(spec)
            }
            Work::Custom => CUSTOM_SECS,
        }
    }

    /// The resume key: tags plus the spec with its (temporary) file path
    /// left out, so the same configuration matches across `--dir`s.
    pub fn resume_key(&self) -> String {
        let of = |spec: &WorkloadSpec, repeats: u32| {
            let mut s = spec.clone();
            s.file = s.file.file_name().map(PathBuf::from).unwrap_or_default();
            format!(
                "{} | repeats={repeats} | {}",
                self.key,
                serde_json::to_string(&s).unwrap_or_default()
            )
        };
        match &self.work {
            Work::Bench { spec, repeats } => of(spec, *repeats),
            Work::Squeezed {
                spec,
                repeats,
                leave,
                file_bytes,
            } => format!("{} | leave={leave:?} file={file_bytes}", of(spec, *repeats)),
            Work::Custom => self.key.clone(),
        }
    }
}

/// What a custom measurement returns.
#[derive(Clone, Debug, Default)]
pub struct Measured {
    /// The decisive value of each repeat.
    pub samples: Vec<f64>,
    /// Its unit.
    pub unit: String,
    /// Other values, by name (`name_unit`), one per repeat or per point.
    pub extra: BTreeMap<String, Vec<f64>>,
    /// Facts worth keeping (kernel settings read along the way).
    pub notes: Vec<String>,
}

/// Creates (or checks) `spec`'s files in the lab's folder, telling the
/// context about each file it creates, and sets nothing else up.
pub fn prepare_in(spec: &WorkloadSpec, ctx: &Ctx) -> Result<prepare::Prepared> {
    let mut created = |p: &Path| (ctx.on_created)(p);
    prepare::prepare(
        spec,
        true,
        PrepareOpts { overwrite: false },
        ctx.stop,
        &mut created,
        &mut |_, _| {},
    )
}

/// Runs one configuration through the runner, `repeats` times.
pub fn measure_bench(spec: &WorkloadSpec, repeats: u32, ctx: &Ctx) -> Result<BenchRecord> {
    let prep = prepare_in(spec, ctx)?;
    let env = iolab_bench::env::Environment::capture(&ctx.dir);
    let started = unix_ms();
    let runs = measure::runs(spec, &prep, &Measure::new(ctx.stop, repeats), &mut NoHooks)?;
    let runs = runs.complete()?;
    Ok(BenchRecord::new(spec.clone(), env, started, runs))
}
