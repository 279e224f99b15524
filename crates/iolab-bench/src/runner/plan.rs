//! What each worker does: which files, which offsets in each, how many ops.

use crate::error::{BenchError, Result};
use crate::offsets::OffsetGen;
use crate::prepare::Prepared;
use crate::spec::{StopRule, WorkloadSpec};
use iolab::pattern::Pattern;
use std::path::PathBuf;

/// One file of a worker, with the offsets the worker visits in it.
pub(super) struct PlanFile {
    /// Index of the file in [`Prepared::files`].
    pub idx: usize,
    /// Its path (for messages).
    pub path: PathBuf,
    /// Its offsets.
    pub gen: OffsetGen,
    /// Its data pattern (to fill writes and verify reads).
    pub pattern: Option<Pattern>,
    /// The pass of [`OffsetGen`] its last op belonged to.
    pub pass_seen: u64,
}

/// The work of one worker.
pub(super) struct Plan {
    /// Worker number, from 0.
    pub worker: u32,
    /// Its files, in the order its ops go round them (fio's
    /// `file_service_type=roundrobin`); the engine's [`iolab::engine::FileId`]
    /// is the position here.
    pub files: Vec<PlanFile>,
    /// Ops to issue in the measured phase (None: until time runs out).
    pub budget: Option<u64>,
}

/// Worker `t`'s files, each with its offsets over blocks `first` ..
/// `first + count` and a seed of its own.
fn plan_files(
    spec: &WorkloadSpec,
    prep: &Prepared,
    t: u64,
    first: u64,
    count: u64,
) -> Vec<PlanFile> {
    spec.files_of(t as u32)
        .enumerate()
        .map(|(k, idx)| {
            let seed = spec.seed
                ^ (t + 1).wrapping_mul(0xD6E8_FEB8_6659_FD93)
                ^ (k as u64).wrapping_mul(0x9FB2_1C65_1E98_DF25);
            PlanFile {
                idx,
                path: prep.files[idx].path.clone(),
                gen: OffsetGen::new(spec.pattern, first, count, spec.bs, seed)
                    .with_place(spec.place)
                    .with_base(spec.offset),
                pattern: prep.files[idx].pattern,
                pass_seen: 0,
            }
        })
        .collect()
}

/// Splits `spec` over its workers; `size` is the bytes of each file in use.
pub(super) fn plans(spec: &WorkloadSpec, prep: &Prepared, size: u64) -> Result<Vec<Plan>> {
    let w = spec.workers() as u64;
    // A rank of a shared file works over its own bytes, mapped into the file.
    let size = match &spec.place {
        Some(p) if p.layout.shared() => p.rank_bytes(),
        _ => size,
    };
    let blocks = size / spec.bs;
    let total_ops = match (spec.stop.ops, spec.stop.bytes, spec.stop.time_ns) {
        (Some(o), _, _) => Some(o),
        (None, Some(b), _) => Some((b as f64 / spec.mean_len()).ceil() as u64),
        (None, None, Some(_)) => None,
        // No limit at all: the data once.
        (None, None, None) => {
            Some(spec.pattern.positions(blocks, spec.bs) * prep.files.len() as u64)
        }
    };
    let one_pass = spec.stop == StopRule::default();
    let mut v = Vec::new();
    for t in 0..w {
        // Its own files whole, or every thread a slice of each shared file.
        let (first, count) = if spec.file_per_thread || spec.pattern.with_replacement() {
            (0, blocks)
        } else {
            let a = t * blocks / w;
            (a, (t + 1) * blocks / w - a)
        };
        if count == 0 {
            return Err(BenchError::Usage(format!(
                "--threads {w}: more threads than {} blocks of --bs {} to share",
                blocks, spec.bs
            )));
        }
        let files = plan_files(spec, prep, t, first, count);
        let budget = if one_pass && !spec.pattern.with_replacement() && !spec.file_per_thread {
            // One pass: each worker exactly its own slice of each file
            // (with a stride, the blocks of it that the stride visits).
            Some(files.iter().map(|f| f.gen.positions()).sum())
        } else {
            total_ops.map(|o| o / w + u64::from(t < o % w))
        };
        v.push(Plan {
            worker: t as u32,
            files,
            budget,
        });
    }
    Ok(v)
}
