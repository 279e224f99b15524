//! The lab: each study iolab reproduces is a named experiment. An
//! experiment lists its configurations (scaled to the machine), measures
//! each (through the runner or the system microbenchmarks), and analyses
//! the records into figures, a key table and numeric findings.
//!
//! The driving loop ([`run`]) is here; records and resume keys are in
//! [`record`] and [`resume`], verdict rules in [`verdict`], drawing in
//! [`figure`], and one file per experiment.

pub mod figure;
pub mod record;
pub mod resume;
pub mod verdict;

mod blocksize;
mod fault_around;
mod interfaces;
mod latency;
mod mt_suite;
mod readers;
mod reasonable;
mod squeeze;
mod sys;
mod syscalls;
mod threads;
mod util;

use crate::error::{BenchError, Result};
use crate::prepare::{self, PrepareOpts};
use crate::record::{unix_ms, BenchRecord, RunMetrics};
use crate::runner::{run_once, RealEngines, RunControl};
use crate::spec::WorkloadSpec;
pub use crate::system::Scale;
use figure::Figure;
use record::{LabRecord, Machine};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use verdict::Finding;

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
    /// By the experiment itself ([`Experiment::custom`]).
    Custom,
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

/// What an analysis produces from records.
#[derive(Debug, Default)]
pub struct Analysis {
    /// Figures (SVG).
    pub figures: Vec<Figure>,
    /// The key table, plain text.
    pub table: String,
    /// Numeric tests of the study's claims.
    pub findings: Vec<Finding>,
}

/// A named experiment reproducing one study's measurement.
pub trait Experiment: Sync {
    /// Name as `iolab lab run` spells it.
    fn name(&self) -> &'static str;
    /// The studies it reproduces (seed numbers).
    fn study(&self) -> &'static str;
    /// The question it answers, in a few words.
    fn answers(&self) -> &'static str;
    /// Expected time at smoke, quick and full scale on a small machine.
    fn times(&self) -> [&'static str; 3];
    /// The configurations at the context's scale.
    fn configs(&self, ctx: &Ctx) -> Vec<Config>;
    /// Measures a [`Work::Custom`] configuration.
    fn custom(&self, cfg: &Config, _ctx: &Ctx) -> Result<Measured> {
        Err(BenchError::Usage(format!(
            "{}: configuration {} has no custom measurement",
            self.name(),
            cfg.key
        )))
    }
    /// Figures, table and findings from the records (never from anything
    /// else: the findings are computed from the data).
    fn analyse(&self, recs: &[LabRecord]) -> Analysis;
}

/// Every experiment, in the order `all` runs them.
pub fn experiments() -> Vec<&'static dyn Experiment> {
    vec![
        &blocksize::Blocksize,
        &syscalls::Syscalls,
        &threads::Threads,
        &mt_suite::MtSuite,
        &latency::Latency,
        &interfaces::Interfaces,
        &readers::Readers,
        &fault_around::FaultAround,
        &reasonable::Reasonable,
        &sys::Sys,
    ]
}

/// The experiment called `name`.
pub fn find(name: &str) -> Option<&'static dyn Experiment> {
    experiments().into_iter().find(|e| e.name() == name)
}

/// Progress of a run, reported after each configuration.
pub trait Progress {
    /// `total` configurations will be measured (`skipped` were resumed).
    fn start(&mut self, exp: &str, total: usize, skipped: usize);
    /// Configuration `key` is about to be measured.
    fn begin(&mut self, key: &str);
    /// A configuration finished.
    fn done(&mut self);
    /// A configuration failed and was skipped (the run goes on).
    fn skipped(&mut self, key: &str, error: &str);
}

/// Runs one configuration through the runner, `repeats` times.
pub fn measure_bench(spec: &WorkloadSpec, repeats: u32, ctx: &Ctx) -> Result<BenchRecord> {
    let mut created = |p: &Path| (ctx.on_created)(p);
    let prep = prepare::prepare(
        spec,
        true,
        PrepareOpts { overwrite: false },
        ctx.stop,
        &mut created,
        &mut |_, _| {},
    )?;
    let env = crate::env::Environment::capture(&ctx.dir);
    let started = unix_ms();
    let mut runs: Vec<RunMetrics> = Vec::new();
    for _ in 0..repeats.max(1) {
        if ctx.stop.load(Ordering::Relaxed) {
            break;
        }
        let resident = prepare::set_cache(spec, &prep, spec.file_size)?;
        let ctl = RunControl {
            stop: ctx.stop,
            on_interval: None,
        };
        runs.push(run_once(
            spec,
            &prep,
            spec.file_size,
            resident,
            RealEngines::shared(),
            &ctl,
        )?);
    }
    Ok(BenchRecord::new(spec.clone(), env, started, runs))
}

/// Measures one configuration into a record.
pub fn measure(
    exp: &dyn Experiment,
    cfg: &Config,
    ctx: &Ctx,
    machine: &Machine,
    command: &str,
) -> Result<LabRecord> {
    let started = unix_ms();
    let (m, bench) = match &cfg.work {
        Work::Bench { spec, repeats } => {
            let b = measure_bench(spec, *repeats, ctx)?;
            (record::measured_of(&b), Some(b))
        }
        Work::Squeezed {
            spec,
            repeats,
            leave,
            file_bytes,
        } => {
            let (m, b) = squeeze::measure(spec, *repeats, *leave, *file_bytes, ctx)?;
            (m, Some(b))
        }
        Work::Custom => (exp.custom(cfg, ctx)?, None),
    };
    Ok(LabRecord::new(
        exp.name(),
        cfg,
        machine.clone(),
        ctx.scale,
        command,
        started,
        m,
        bench,
    ))
}

/// Runs `exp`: measures every configuration not already in `previous`
/// (records of the same machine and iolab version; see [`resume`]),
/// handing each new record to `sink` as soon as it is complete. Returns
/// the records to analyse (previous ones still wanted, then new ones).
/// A record interrupted by Ctrl-C is not handed over (it would be resumed
/// as complete).
pub fn run(
    exp: &dyn Experiment,
    ctx: &Ctx,
    machine: &Machine,
    command: &str,
    previous: &[LabRecord],
    progress: &mut dyn Progress,
    sink: &mut dyn FnMut(&LabRecord) -> Result<()>,
) -> Result<Vec<LabRecord>> {
    // Frees the memory balloon of squeezed configurations on every way out.
    struct Release;
    impl Drop for Release {
        fn drop(&mut self) {
            squeeze::release();
        }
    }
    let _release = Release;
    let configs = exp.configs(ctx);
    let done = resume::index(previous, exp.name(), machine);
    let todo: Vec<&Config> = configs
        .iter()
        .filter(|c| !done.contains_key(&c.resume_key()))
        .collect();
    progress.start(exp.name(), todo.len(), configs.len() - todo.len());
    let mut out: Vec<LabRecord> = configs
        .iter()
        .filter_map(|c| done.get(&c.resume_key()).map(|r| (*r).clone()))
        .collect();
    for cfg in todo {
        if ctx.stop.load(Ordering::Relaxed) {
            break;
        }
        progress.begin(&cfg.key);
        let rec = match measure(exp, cfg, ctx, machine, command) {
            Ok(r) => r,
            Err(_) if ctx.stop.load(Ordering::Relaxed) => break,
            Err(e) => {
                progress.skipped(&cfg.key, &e.to_string());
                progress.done();
                continue;
            }
        };
        if ctx.stop.load(Ordering::Relaxed) {
            break;
        }
        sink(&rec)?;
        out.push(rec);
        progress.done();
    }
    Ok(out)
}

/// Crafted records for the verdict tests.
#[cfg(test)]
pub(crate) mod testing {
    use super::record::{LabRecord, Machine};
    use super::{Config, Measured, Scale, Work};

    /// A record of `exp` with `tags` and samples.
    pub fn rec(exp: &str, tags: &[(&str, &str)], samples: &[f64]) -> LabRecord {
        rec_x(exp, tags, samples, &[])
    }

    /// A record with extras too.
    pub fn rec_x(
        exp: &str,
        tags: &[(&str, &str)],
        samples: &[f64],
        extra: &[(&str, &[f64])],
    ) -> LabRecord {
        let t: Vec<(&str, String)> = tags.iter().map(|(k, v)| (*k, v.to_string())).collect();
        let cfg = Config::new(&t, Work::Custom);
        let m = Measured {
            samples: samples.to_vec(),
            unit: "MiB/s".into(),
            extra: extra
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_vec()))
                .collect(),
            notes: Vec::new(),
        };
        LabRecord::new(
            exp,
            &cfg,
            Machine::default(),
            Scale::Smoke,
            "test",
            0,
            m,
            None,
        )
    }
}
