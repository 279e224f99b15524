//! Page-cache residency of a run's files, measured with `mincore` before
//! and after every run, and the verdict on whether the cache state the run
//! asked for held to its end.
//!
//! A buffered "cold" run fills the page cache as it reads: random reads over
//! a file smaller than memory hit pages an earlier read of the same run
//! brought in, and the run then measures a mix of device and memory. The
//! record says so instead of assuming: `resident_after` per file, and
//! `cache_held = false` for a cold run that ended more than
//! [`COLD_MAX_RESIDENT_AFTER`] resident and may have read a block twice.

use crate::error::Result;
use crate::prepare::Prepared;
pub use crate::record::FileResidency;
use crate::spec::{AccessPattern, CacheMode, WorkloadSpec};
use std::path::PathBuf;

/// Largest resident fraction a cold run may end with and still count as
/// cold (unless it read no block twice).
pub const COLD_MAX_RESIDENT_AFTER: f64 = 0.05;

/// Smallest resident fraction a warm run may end with and still count as
/// warm (memory pressure can evict a warmed file mid-run).
pub const WARM_MIN_RESIDENT_AFTER: f64 = 0.95;

/// Share of a file a buffered cold random run may touch when it is sized
/// to stay cold ([`cold_ops_limit`]): below [`COLD_MAX_RESIDENT_AFTER`],
/// with room for metadata and the odd neighbouring page.
pub const COLD_TOUCH_SHARE: f64 = 0.04;

/// Resident pages of every file of a run at one moment.
#[derive(Clone, Debug)]
pub struct Snapshot {
    files: Vec<(PathBuf, u64, u64)>,
}

impl Snapshot {
    /// Measures the `size` bytes from `offset` of every prepared file
    /// (mincore).
    pub fn take(prep: &Prepared, offset: u64, size: u64) -> Result<Self> {
        let mut files = Vec::with_capacity(prep.files.len());
        for f in &prep.files {
            let len = size.min(f.len.saturating_sub(offset));
            let r = iolab::cache::residency_range(&f.path, offset, len)?;
            files.push((f.path.clone(), r.resident_pages, r.total_pages));
        }
        Ok(Snapshot { files })
    }

    /// [`Snapshot::take`] for a run of `spec`: nothing for a run without
    /// files (`no_files`).
    pub fn of_run(spec: &WorkloadSpec, prep: &Prepared, size: u64) -> Result<Self> {
        if spec.no_files {
            return Ok(Snapshot { files: Vec::new() });
        }
        Snapshot::take(prep, spec.offset, size)
    }

    /// Resident fraction over all files (1.0 when there are no pages).
    pub fn fraction(&self) -> f64 {
        let (r, t) = self
            .files
            .iter()
            .fold((0u64, 0u64), |(r, t), f| (r + f.1, t + f.2));
        if t == 0 {
            1.0
        } else {
            r as f64 / t as f64
        }
    }

    /// Pairs this (before) snapshot with `after`, per file.
    pub fn per_file(&self, after: &Snapshot) -> Vec<FileResidency> {
        let frac = |r: u64, t: u64| if t == 0 { 1.0 } else { r as f64 / t as f64 };
        self.files
            .iter()
            .zip(&after.files)
            .map(|(b, a)| FileResidency {
                path: b.0.clone(),
                before: frac(b.1, b.2),
                after: frac(a.1, a.2),
                pages: b.2,
            })
            .collect()
    }
}

/// What the runner records about the cache around one run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CacheCheck {
    /// Per file, before and after.
    pub files: Vec<FileResidency>,
    /// Resident fraction over all files after the run.
    pub resident_after: f64,
    /// Whether the cache state asked for (`--cache cold|warm`) held to the
    /// end of the run; None for `--cache as-is`.
    pub held: Option<bool>,
}

/// Whether a run could have read any block twice: then pages it brought
/// into the cache may have served its later reads.
fn may_reread(spec: &WorkloadSpec, ops: u64) -> bool {
    spec.pattern.with_replacement() || ops.saturating_mul(spec.bs) > spec.data_bytes()
}

/// Compares the snapshot taken before a run with the cache now.
pub fn check(
    spec: &WorkloadSpec,
    prep: &Prepared,
    size: u64,
    before: &Snapshot,
    ops: u64,
) -> Result<CacheCheck> {
    let after = Snapshot::of_run(spec, prep, size)?;
    let resident_after = after.fraction();
    Ok(CacheCheck {
        files: before.per_file(&after),
        resident_after,
        held: held(spec, resident_after, ops),
    })
}

/// The verdict alone: a cold run held if it ended at most
/// [`COLD_MAX_RESIDENT_AFTER`] resident or read every block at most once
/// (a single sequential or shuffled pass: no read could hit a page the run
/// itself brought in); a warm run held if it ended at least
/// [`WARM_MIN_RESIDENT_AFTER`] resident.
pub fn held(spec: &WorkloadSpec, resident_after: f64, ops: u64) -> Option<bool> {
    match spec.cache {
        CacheMode::Cold => {
            Some(spec.direct || resident_after <= COLD_MAX_RESIDENT_AFTER || !may_reread(spec, ops))
        }
        CacheMode::Warm => Some(resident_after >= WARM_MIN_RESIDENT_AFTER),
        CacheMode::AsIs => None,
    }
}

/// For a buffered cold run that may read a block twice (random with
/// replacement): the most ops it may do and still stay cold, i.e. touch at
/// most [`COLD_TOUCH_SHARE`] of the data's pages (one page per op under
/// POSIX_FADV_RANDOM, which the runner sets for random patterns). None when
/// the run cannot warm its own reads (O_DIRECT, warm or as-is cache, or a
/// single pass).
pub fn cold_ops_limit(spec: &WorkloadSpec) -> Option<u64> {
    let one_pass = matches!(spec.pattern, AccessPattern::Seq | AccessPattern::Stride(_));
    if spec.cache != CacheMode::Cold || spec.direct || one_pass {
        return None;
    }
    let page = iolab::usage::page_size() as u64;
    let pages_per_op = spec.bs.div_ceil(page).max(1);
    let pages = spec.data_bytes() / page;
    Some(((pages as f64 * COLD_TOUCH_SHARE) as u64 / pages_per_op).max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(cache: CacheMode, pattern: AccessPattern, direct: bool) -> WorkloadSpec {
        WorkloadSpec {
            pattern,
            file: PathBuf::from("/x"),
            file_size: 1 << 30,
            direct,
            cache,
            seed: 1,
            ..WorkloadSpec::default()
        }
    }

    #[test]
    fn verdicts() {
        use AccessPattern::*;
        use CacheMode::*;
        let blocks = (1u64 << 30) / 4096;
        // Random buffered cold, ended 30 % resident: did not hold.
        assert_eq!(held(&spec(Cold, Rand, false), 0.30, 1000), Some(false));
        assert_eq!(held(&spec(Cold, Rand, false), 0.04, 1000), Some(true));
        // One sequential pass ends resident, but read nothing twice.
        assert_eq!(held(&spec(Cold, Seq, false), 1.0, blocks), Some(true));
        // A second pass would read the first pass's pages.
        assert_eq!(held(&spec(Cold, Seq, false), 1.0, blocks + 1), Some(false));
        assert_eq!(held(&spec(Cold, Rand, true), 0.5, 10), Some(true));
        assert_eq!(held(&spec(Warm, Rand, false), 0.5, 10), Some(false));
        assert_eq!(held(&spec(Warm, Rand, false), 1.0, 10), Some(true));
        assert_eq!(held(&spec(AsIs, Rand, false), 0.5, 10), None);
    }

    #[test]
    fn cold_limit_touches_under_the_threshold() {
        let s = spec(CacheMode::Cold, AccessPattern::Rand, false);
        let n = cold_ops_limit(&s).unwrap();
        let touched = n * 4096;
        assert!(touched as f64 <= COLD_MAX_RESIDENT_AFTER * (1u64 << 30) as f64);
        assert!(n > 1000);
        assert_eq!(
            cold_ops_limit(&spec(CacheMode::Cold, AccessPattern::Rand, true)),
            None
        );
        assert_eq!(
            cold_ops_limit(&spec(CacheMode::Warm, AccessPattern::Rand, false)),
            None
        );
    }
}
