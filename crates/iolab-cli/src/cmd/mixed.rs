//! `iolab mixed --dir D [--technique T]`: one pass of the mixed workload
//! (see `iolab_lab::mixed`) with one technique; prints the time of each
//! third. `scripts/adaptive-vs-fixed.sh` alternates techniques over it.

use anyhow::Result;
use iolab_lab::mixed::{self, MixedFiles, MixedSpec};
use iolab_reader::profile::Profile;
use iolab_reader::Technique;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Arguments of `iolab mixed`.
#[derive(clap::Args, Debug)]
pub struct MixedArgs {
    /// Directory holding (or to hold) mixed-seq, mixed-fit and mixed-big
    /// (about 6.3 GiB; created if missing).
    #[arg(long)]
    pub dir: PathBuf,
    /// Technique: stream, buffered\[:4m\], mapped, direct, uring\[:32\],
    /// thesis (the fixed rules of the study iolab reproduces), auto (the
    /// adaptive reader).
    #[arg(long, default_value = "auto")]
    pub technique: Technique,
    /// Profile for auto: a file, or "none" for the built-in defaults
    /// (default: $IOLAB_PROFILE or the usual place).
    #[arg(long)]
    pub profile: Option<PathBuf>,
    /// Only create the files.
    #[arg(long)]
    pub prepare: bool,
    /// Memory the readers are told is free for the page cache: a size, or
    /// "real" for what /proc/meminfo says (with a balloon holding the rest).
    #[arg(long, default_value = "1g")]
    pub budget: String,
    /// Hold an mlock memory balloon that leaves about SIZE of memory
    /// available, until interrupted (Ctrl-C or SIGTERM); runs nothing else.
    /// `scripts/adaptive-vs-fixed.sh` keeps one up while it measures.
    #[arg(long, value_name = "SIZE", value_parser = crate::parse::size)]
    pub balloon_leave: Option<u64>,
}

/// Holds a balloon leaving `leave` bytes of memory available until `stop`.
fn hold_balloon(leave: u64, stop: &AtomicBool) -> Result<i32> {
    const MIB: u64 = 1 << 20;
    let avail = iolab_reader::mem_available()
        .ok_or_else(|| super::usage("mixed: --balloon-leave: no MemAvailable in /proc/meminfo"))?;
    if avail < leave + 256 * MIB {
        return Err(super::usage(format!(
            "mixed: --balloon-leave {} MiB: only {} MiB are available; nothing to lock",
            leave / MIB,
            avail / MIB
        )));
    }
    let balloon = iolab::primitives::Balloon::inflate(avail - leave)?;
    crate::export::stdout(&format!(
        "balloon: {} MiB locked, {} MiB available\n",
        balloon.bytes() / MIB,
        iolab_reader::mem_available().unwrap_or(0) / MIB
    ))?;
    while !stop.load(Ordering::Relaxed) {
        if !balloon.alive() {
            anyhow::bail!(
                "mixed: the balloon helper died (memory pressure: the OOM killer takes it first)"
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    Ok(0)
}

/// Runs `iolab mixed`.
pub fn run(a: &MixedArgs, stop: &AtomicBool) -> Result<i32> {
    if !a.dir.is_dir() {
        return Err(super::usage(format!(
            "mixed: --dir {}: not a directory",
            a.dir.display()
        )));
    }
    let profile = match &a.profile {
        None => None,
        Some(p) if p.as_os_str() == "none" => Some(Arc::new(Profile::thesis_defaults())),
        Some(p) => {
            let b =
                iolab::file::read_bounded(p, iolab_reader::profile::PROFILE_MAX_BYTES, "profile")
                    .map_err(|e| super::usage(format!("mixed: --profile {}: {e}", p.display())))?;
            let s = String::from_utf8_lossy(&b);
            Some(Arc::new(Profile::from_json(&s).map_err(|e| {
                super::usage(format!("mixed: --profile {}: {e}", p.display()))
            })?))
        }
    };
    if let Some(leave) = a.balloon_leave {
        return hold_balloon(leave, stop);
    }
    let budget = match a.budget.as_str() {
        "real" => None,
        b => Some(
            crate::parse::size(b)
                .map_err(|e| super::usage(format!("mixed: --budget: {e}, or real")))?,
        ),
    };
    let spec = MixedSpec {
        budget,
        ..MixedSpec::default()
    };
    let files = MixedFiles::in_dir(&a.dir);
    mixed::prepare(&files, &spec, stop).map_err(|e| super::usage(format!("mixed: {e}")))?;
    if a.prepare {
        return Ok(0);
    }
    let t = mixed::run(&files, &spec, a.technique, &profile).map_err(anyhow::Error::msg)?;
    crate::export::stdout(&format!(
        "{} total {:.3} seq {:.3} fit {:.3} big {:.3}\n",
        a.technique,
        t.total().as_secs_f64(),
        t.seq.as_secs_f64(),
        t.fit.as_secs_f64(),
        t.big.as_secs_f64()
    ))?;
    Ok(0)
}
