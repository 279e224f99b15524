//! What the measuring commands (`bench`, `bench --vs`, the survey) share
//! for one invocation: the session's options, the files it prepares, and
//! where a temporary file goes.

use crate::cleanup;
use anyhow::Result;
use iolab_bench::prepare::{self, PrepareOpts, Prepared};
use iolab_bench::spec::WorkloadSpec;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

/// Options shared by every configuration of one invocation.
pub struct Session<'a> {
    /// Ctrl-C flag.
    pub stop: &'a AtomicBool,
    /// Repeats per configuration.
    pub repeat: u32,
    /// Whether --size was given (a missing file may be created).
    pub size_given: bool,
    /// Overwrite permission.
    pub overwrite: bool,
    /// Show live intervals on stderr.
    pub live: bool,
    /// The wakers running next to the runs (`--waker`), for the records.
    pub waker: Option<iolab_bench::env::WakerInfo>,
}

/// Prepares the files of `spec` (creating missing ones with a progress bar).
pub fn prepare_files(spec: &WorkloadSpec, ses: &Session, temp: bool) -> Result<Prepared> {
    let mut bar: Option<indicatif::ProgressBar> = None;
    let prep = prepare::prepare(
        spec,
        ses.size_given,
        PrepareOpts {
            overwrite: ses.overwrite,
        },
        ses.stop,
        &mut |p| {
            // Called the moment the file is made (O_EXCL): this inode, not
            // whatever later has its name, is ours to remove on Ctrl-C, or
            // at exit if temporary.
            if let Some(id) = iolab::file::FileIdent::of_path(p) {
                cleanup::register_created(p, id);
            }
        },
        &mut |n, total| {
            let b = bar.get_or_insert_with(|| crate::progress::bytes(total, "creating test file"));
            b.set_position(n);
        },
    )?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if !temp {
        for f in &prep.files {
            cleanup::keep(&f.path);
        }
    }
    Ok(prep)
}

/// A temporary file path in `dir` (not yet created; `dir` may be missing,
/// to be made by [`crate::work_dir::ensure`]).
pub fn temp_path(dir: &Path) -> Result<PathBuf> {
    crate::work_dir::check("--dir", dir)?;
    Ok(dir.join(format!(".iolab-{}.tmp", std::process::id())))
}
