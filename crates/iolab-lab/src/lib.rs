//! The lab: each study iolab reproduces is a named experiment. An
//! experiment lists its configurations (scaled to the machine), measures
//! each (through the runner or the system microbenchmarks), and analyses
//! the records into figures, a key table and numeric findings.
//!
//! The driving loop ([`run`]) is here; records and resume keys are in
//! [`record`] and [`resume`], verdict rules in [`verdict`], drawing in
//! [`figure`], and one file per experiment in `experiments/`.
#![forbid(unsafe_code)]

mod config;
mod experiment;
mod experiments;
pub mod figure;
pub mod mixed;
pub mod record;
pub mod resume;
pub mod verdict;

mod squeeze;
mod util;

pub use config::{measure_bench, prepare_in, Config, Ctx, Measured, Work};
pub use experiment::{Analysis, Experiment};
pub use iolab_sysbench::Scale;

use iolab_bench::error::Result;
use iolab_bench::record::unix_ms;
use record::{LabRecord, Machine};
use std::sync::atomic::Ordering;

/// Every experiment, in the order `all` runs them.
pub fn experiments() -> Vec<&'static dyn Experiment> {
    vec![
        &experiments::blocksize::Blocksize,
        &experiments::syscalls::Syscalls,
        &experiments::threads::Threads,
        &experiments::mt_suite::MtSuite,
        &experiments::latency::Latency,
        &experiments::interfaces::Interfaces,
        &experiments::readers::Readers,
        &experiments::fault_around::FaultAround,
        &experiments::reasonable::Reasonable,
        &experiments::replay::Replay,
        &experiments::sys::Sys,
        &experiments::to_gpu::ToGpu,
    ]
}

/// The experiment called `name`.
pub fn find(name: &str) -> Option<&'static dyn Experiment> {
    experiments().into_iter().find(|e| e.name() == name)
}

/// Progress of a run, reported after each configuration.
pub trait Progress {
    /// `total` configurations will be measured (`skipped` were resumed),
    /// expected to take `secs` seconds in all ([`Config::expected_secs`]).
    fn start(&mut self, exp: &str, total: usize, skipped: usize, secs: f64);
    /// Configuration `key` is about to be measured; it is expected to take
    /// `secs` seconds.
    fn begin(&mut self, key: &str, secs: f64);
    /// A configuration finished.
    fn done(&mut self);
    /// A configuration failed and was skipped (the run goes on).
    fn skipped(&mut self, key: &str, error: &str);
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
    let secs = todo.iter().map(|c| c.expected_secs()).sum();
    progress.start(exp.name(), todo.len(), configs.len() - todo.len(), secs);
    let mut out: Vec<LabRecord> = configs
        .iter()
        .filter_map(|c| done.get(&c.resume_key()).map(|r| (*r).clone()))
        .collect();
    for cfg in todo {
        if ctx.stop.load(Ordering::Relaxed) {
            break;
        }
        progress.begin(&cfg.key, cfg.expected_secs());
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
    use crate::record::{LabRecord, Machine};
    use crate::verdict::Verdict;
    use crate::{Config, Measured, Scale, Work};

    /// Asserts every finding has `verdict`.
    pub fn assert_all(a: &crate::Analysis, verdict: Verdict) {
        assert!(
            a.findings.iter().all(|f| f.verdict == verdict),
            "{:?}",
            a.findings
        );
    }

    /// Asserts the first finding has `verdict` and its numbers show `shows`.
    pub fn assert_first(a: &crate::Analysis, verdict: Verdict, shows: &str) {
        assert_eq!(a.findings[0].verdict, verdict, "{:?}", a.findings);
        assert!(
            a.findings[0].numbers.contains(shows),
            "{}",
            a.findings[0].numbers
        );
    }

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
