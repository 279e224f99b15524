//! `iolab mixed --dir D [--technique T]`: one pass of the mixed workload
//! (see `iolab_bench::mixed`) with one technique; prints the time of each
//! third. `scripts/adaptive-vs-fixed.sh` alternates techniques over it.

use anyhow::Result;
use iolab::reader::profile::Profile;
use iolab::reader::Technique;
use iolab_bench::mixed::{self, MixedFiles, MixedSpec};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Arguments of `iolab mixed`.
#[derive(clap::Args, Debug)]
pub struct MixedArgs {
    /// Directory holding (or to hold) mixed-seq, mixed-fit and mixed-big
    /// (about 6.3 GiB; created if missing).
    #[arg(long)]
    pub dir: PathBuf,
    /// Technique: stream, buffered[:4m], mapped, direct, uring[:32], thesis, auto.
    #[arg(long, default_value = "auto")]
    pub technique: Technique,
    /// Profile for auto: a file, or "none" for the built-in defaults
    /// (default: $IOLAB_PROFILE or the usual place).
    #[arg(long)]
    pub profile: Option<PathBuf>,
    /// Only create the files.
    #[arg(long)]
    pub prepare: bool,
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
            let s = std::fs::read_to_string(p)
                .map_err(|e| super::usage(format!("mixed: --profile {}: {e}", p.display())))?;
            Some(Arc::new(Profile::from_json(&s).map_err(|e| {
                super::usage(format!("mixed: --profile {}: {e}", p.display()))
            })?))
        }
    };
    let spec = MixedSpec::default();
    let files = MixedFiles::in_dir(&a.dir);
    mixed::prepare(&files, &spec, stop).map_err(|e| super::usage(format!("mixed: {e}")))?;
    if a.prepare {
        return Ok(0);
    }
    let t = mixed::run(&files, &spec, a.technique, &profile).map_err(anyhow::Error::msg)?;
    crate::output::stdout(&format!(
        "{} total {:.3} seq {:.3} fit {:.3} big {:.3}\n",
        a.technique,
        t.total().as_secs_f64(),
        t.seq.as_secs_f64(),
        t.fit.as_secs_f64(),
        t.big.as_secs_f64()
    ))?;
    Ok(0)
}
