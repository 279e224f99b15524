//! [`run`]: the whole of a tuning, for a program that is not the `iolab`
//! command (the Python package's `iolab.tune`): write a test file on the
//! storage to measure, measure every case, derive the profile, and remove
//! the file whatever happened.

use super::{cases, derive, mark_pareto, measure, measure_warm_offset, tune_file_len, Case};
use crate::profile::{Machine, Measurement, Profile};
use iolab::{Error, Result};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// What [`run`] is doing, for a progress display.
#[derive(Debug)]
pub enum Step<'a> {
    /// Writing the test file: `done` of `total` bytes.
    Writing {
        /// Bytes written so far.
        done: u64,
        /// Bytes the file will hold.
        total: u64,
    },
    /// About to measure `case`, the `index`-th (from 0) of `of`.
    Measuring {
        /// The configuration.
        case: &'a Case,
        /// Its place in the run.
        index: usize,
        /// Cases in all.
        of: usize,
    },
    /// `case` could not be measured here (say, O_DIRECT refused).
    Skipped {
        /// The configuration.
        case: &'a Case,
        /// Why, in the reader's words.
        why: &'a str,
    },
}

/// Measures the storage holding `dir` as `iolab tune` does and returns the
/// profile (not written anywhere: that is the caller's choice). The test
/// file (256 MiB with `quick`, else 1 GiB) is made in `dir` and removed
/// before returning, error or not. `stop` cancels ([`Error::Cancelled`]);
/// `step` hears each step, on the calling thread.
pub fn run(
    dir: &Path,
    quick: bool,
    stop: &AtomicBool,
    step: &mut dyn FnMut(Step<'_>),
) -> Result<Profile> {
    let len = tune_file_len(quick);
    check_dir(dir, len)?;
    let path = test_file_name(dir);
    let mut made = None;
    let res = iolab::file::create_pattern_file_with(
        &path,
        len,
        iolab::pattern::Pattern::new(1),
        false,
        stop,
        &mut |done| step(Step::Writing { done, total: len }),
        &mut |id| made = Some(id),
    )
    .and_then(|()| measure_all(&path, len, quick, stop, step));
    // The warm cases left the file cached: where a copy out of it lands
    // fastest is measured on it now.
    let offset = res.as_ref().ok().and_then(|_| {
        measure_warm_offset(&path, len, if quick { 5 } else { 9 })
            .map_err(|e| {
                crate::warn::emit(&format!(
                    "warning: tune: the warm copy's offset was not measured: {e}"
                ))
            })
            .ok()
    });
    if let Some(id) = made {
        iolab::file::remove_if_same(&path, id);
    }
    let ms = res?;
    let device = iolab::file::block_device_of(dir).map(|d| d.name);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    Ok(derive(&ms, offset, Machine::this(), device, now))
}

/// Refuses a `dir` that is not a directory or lacks room for two test
/// files of `len` bytes.
fn check_dir(dir: &Path, len: u64) -> Result<()> {
    if !dir.is_dir() {
        let what = if dir.exists() {
            "not a directory"
        } else {
            "no such directory"
        };
        return Err(Error::Invalid(format!(
            "tune: {}: {what}; name an existing directory on the storage to measure",
            dir.display()
        )));
    }
    let free = iolab::file::free_space(dir)?;
    if free < len * 2 {
        return Err(Error::Invalid(format!(
            "tune: {}: needs {} MiB free, has {} MiB",
            dir.display(),
            (len * 2) >> 20,
            free >> 20
        )));
    }
    Ok(())
}

/// A name in `dir` no other tuning of this process uses at the same time.
fn test_file_name(dir: &Path) -> PathBuf {
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    dir.join(format!(".iolab-tune-{}-{n}", std::process::id()))
}

/// Every case, cold ones first (each evicts the file), then the warm ones
/// (the file read into the cache once); the Pareto front marked.
fn measure_all(
    path: &Path,
    len: u64,
    quick: bool,
    stop: &AtomicBool,
    step: &mut dyn FnMut(Step<'_>),
) -> Result<Vec<Measurement>> {
    let mut cases = cases(quick);
    cases.sort_by_key(|c| c.cache == "warm");
    let budget = Duration::from_millis(if quick { 900 } else { 3500 });
    let mut warmed = false;
    let mut ms = Vec::new();
    for (index, case) in cases.iter().enumerate() {
        if stop.load(Ordering::Relaxed) {
            return Err(Error::Cancelled);
        }
        step(Step::Measuring {
            case,
            index,
            of: cases.len(),
        });
        if case.cache == "warm" && !warmed {
            iolab::cache::warm(path, len)?;
            warmed = true;
        }
        match measure(path, len, case, budget, stop) {
            Ok(m) => ms.push(m),
            Err(why) => step(Step::Skipped { case, why: &why }),
        }
    }
    if stop.load(Ordering::Relaxed) {
        return Err(Error::Cancelled);
    }
    mark_pareto(&mut ms);
    Ok(ms)
}
