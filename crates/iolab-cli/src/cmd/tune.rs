//! `iolab tune [--dir D] [--quick] [--out FILE]`: measure how this machine
//! reads (see `iolab_reader::tune`), print the Pareto front and the
//! recommendations in words, and write the profile `Auto` reads.

use crate::export::target::{Mode, OutputTarget};
use anyhow::{Context, Result};
use iolab_reader::profile::{self, Machine, Profile};
use iolab_reader::tune;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Arguments of `iolab tune`.
#[derive(clap::Args, Debug)]
pub struct TuneArgs {
    /// Directory on the storage to measure (a temporary file is made there).
    #[arg(long, default_value = ".")]
    pub dir: PathBuf,
    /// Shorter: 0.9 s per measurement instead of 3.5 s, on a 256 MiB test
    /// file instead of 1 GiB.
    #[arg(long)]
    pub quick: bool,
    /// Where to write the profile (default: $IOLAB_PROFILE, else
    /// $XDG_CONFIG_HOME/iolab/profile.json).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Replace OUT if it exists and is not an iolab profile.
    #[arg(long)]
    pub overwrite: bool,
    /// The GPU whose host → device path is measured too. Without --gpu,
    /// GPU 0 where there is one (else one line says why it was skipped);
    /// with it, GPU N must open, or tune stops before measuring anything.
    #[arg(long, value_name = "N")]
    pub gpu: Option<u32>,
}

/// Where the profile goes, checked: our own earlier profile may be
/// replaced; anything else needs --overwrite.
fn profile_target(a: &TuneArgs) -> Result<(PathBuf, OutputTarget)> {
    let out = a.out.clone().unwrap_or_else(profile::default_path);
    if a.out.is_none() {
        if let Some(parent) = out.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("create {}", parent.display()))?;
        }
    }
    let ours = iolab::file::read_bounded(&out, profile::PROFILE_MAX_BYTES, "profile")
        .is_ok_and(|b| Profile::from_json(&String::from_utf8_lossy(&b)).is_ok());
    let target = OutputTarget::check("--out", &out, a.overwrite || ours, Mode::Replace, &[])?;
    Ok((out, target))
}

/// Runs `iolab tune`.
pub fn run(a: &TuneArgs, stop: &AtomicBool) -> Result<i32> {
    crate::work_dir::check("--dir", &a.dir)?;
    if let Some(n) = a.gpu {
        crate::gpu_bench::open(n).map_err(|why| super::usage(format!("tune --gpu {n}: {why}")))?;
    }
    let (out, mut target) = profile_target(a)?;
    let len = tune::tune_file_len(a.quick);
    crate::work_dir::ensure("--dir", &a.dir)?;
    let free = iolab::file::free_space(&a.dir)?;
    if free < len * 2 {
        return Err(super::usage(format!(
            "tune: --dir {}: needs {} free, has {}",
            a.dir.display(),
            iolab_bench::prepare::human(len * 2),
            iolab_bench::prepare::human(free)
        )));
    }
    let path = a.dir.join(format!(".iolab-tune-{}", std::process::id()));
    let pb = crate::progress::bytes(len, "tune: writing a test file");
    iolab::file::create_pattern_file_with(
        &path,
        len,
        iolab::pattern::Pattern::new(1),
        false,
        stop,
        &mut |n| pb.set_position(n),
        &mut |id| crate::cleanup::register_created(&path, id),
    )?;
    pb.finish_and_clear();
    let res = measure_all(a, &path, len, stop);
    // The warm cases left the file cached: where a copy out of it lands
    // fastest is measured on it now.
    let offset = match res {
        Ok(_) => tune::measure_warm_offset(&path, len, if a.quick { 5 } else { 9 })
            .map_err(|e| eprintln!("warning: tune: the warm copy's offset was not measured: {e}"))
            .ok(),
        Err(_) => None,
    };
    let gpu = (res.is_ok())
        .then(|| crate::tune_gpu::run(a.gpu.unwrap_or(0), &path, len, a.quick, stop))
        .flatten();
    crate::cleanup::remove(&path);
    let ms = res?;
    let device = iolab::file::block_device_of(&a.dir).map(|d| d.name);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let p = Profile {
        gpu,
        ..tune::derive(&ms, offset, Machine::this(), device, now)
    };
    let text = summary(&p);
    crate::export::stdout(&text)?;
    target.write_all_atomically(p.to_json().as_bytes())?;
    eprintln!("profile written to {}", out.display());
    Ok(0)
}

/// What `iolab tune` prints: the Pareto front and the recommendations.
fn summary(p: &Profile) -> String {
    let mut text = String::from(
        "Pareto front: the ways to read that no other beats on throughput, p99.9 latency and CPU at once:\n",
    );
    text.push_str(&format!(
        "  {:<4} {:<5} {:<16} {:>8} {:>5} {:>7} {:>9} {:>12} {:>11}\n",
        "", "cache", "technique", "piece", "depth", "threads", "MiB/s", "p99.9 (us)", "CPU ms/GiB"
    ));
    for m in p.measurements.iter().filter(|m| m.pareto) {
        text.push_str(&format!(
            "  {:<4} {:<5} {:<16} {:>8} {:>5} {:>7} {:>9.0} {:>12.0} {:>11.0}\n",
            m.pattern,
            m.cache,
            m.technique,
            iolab_bench::prepare::human(m.block as u64),
            m.depth,
            m.threads,
            m.mib_s,
            m.p999_us,
            m.cpu_ms_per_gib
        ));
    }
    text.push_str(
        "  (whole:direct and whole:buffered: the whole-file path of `iolab cat`, with or without the page cache)\n",
    );
    text.push_str("Recommendations:\n");
    for r in &p.recommendations {
        text.push_str(&format!("  - {r}\n"));
    }
    text
}

fn measure_all(
    a: &TuneArgs,
    path: &std::path::Path,
    len: u64,
    stop: &AtomicBool,
) -> Result<Vec<iolab_reader::profile::Measurement>> {
    let mut cases = tune::cases(a.quick);
    // Cold cases first (each evicts), then warm ones (the file stays cached).
    cases.sort_by_key(|c| c.cache == "warm");
    let budget = Duration::from_millis(if a.quick { 900 } else { 3500 });
    eprintln!(
        "tune: {} measurements of up to {:.1} s each",
        cases.len(),
        budget.as_secs_f64()
    );
    let pb = crate::progress::runs(cases.len() as u64);
    let mut warmed = false;
    let mut ms = Vec::new();
    for c in &cases {
        if stop.load(Ordering::Relaxed) {
            return Err(anyhow::Error::new(iolab::Error::Cancelled));
        }
        pb.set_message(c.label());
        if c.cache == "warm" && !warmed {
            iolab::cache::warm(path, len)?;
            warmed = true;
        }
        match tune::measure(path, len, c, budget, stop) {
            Ok(m) => ms.push(m),
            Err(e) => pb.println(format!("skipped {}: {e}", c.label())),
        }
        pb.inc(1);
    }
    pb.finish_and_clear();
    tune::mark_pareto(&mut ms);
    Ok(ms)
}
