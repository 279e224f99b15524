//! What each worker does: which file, which offsets, how many ops.

use crate::error::{BenchError, Result};
use crate::offsets::OffsetGen;
use crate::prepare::Prepared;
use crate::spec::{StopRule, WorkloadSpec};
use iolab::pattern::Pattern;
use std::path::PathBuf;

/// The work of one worker.
pub(super) struct Plan {
    /// Worker number, from 0.
    pub worker: u32,
    /// Index of its file in [`Prepared::files`].
    pub file_idx: usize,
    /// That file's path (for messages).
    pub path: PathBuf,
    /// Its offsets.
    pub gen: OffsetGen,
    /// Ops to issue in the measured phase (None: until time runs out).
    pub budget: Option<u64>,
    /// The file's data pattern (to fill writes and verify reads).
    pub pattern: Option<Pattern>,
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
        (None, Some(b), _) => Some(b.div_ceil(spec.bs)),
        (None, None, Some(_)) => None,
        // No limit at all: the data once.
        (None, None, None) => {
            Some(spec.pattern.positions(blocks, spec.bs) * prep.files.len() as u64)
        }
    };
    let one_pass = spec.stop == StopRule::default();
    let mut v = Vec::new();
    for t in 0..w {
        let (file_idx, first, count) = if spec.file_per_thread {
            (t as usize, 0, blocks)
        } else if spec.pattern.with_replacement() {
            (0, 0, blocks)
        } else {
            let a = t * blocks / w;
            let b = (t + 1) * blocks / w;
            (0, a, b - a)
        };
        if count == 0 {
            return Err(BenchError::Usage(format!(
                "--threads {w}: more threads than {} blocks of --bs {} to share",
                blocks, spec.bs
            )));
        }
        let seed = spec.seed ^ (t + 1).wrapping_mul(0xD6E8_FEB8_6659_FD93);
        let gen = OffsetGen::new(spec.pattern, first, count, spec.bs, seed)
            .with_place(spec.place)
            .with_base(spec.offset);
        let budget = if one_pass && !spec.pattern.with_replacement() && !spec.file_per_thread {
            // One pass: each worker exactly its own slice (with a stride,
            // the blocks of it that the stride visits).
            Some(gen.positions())
        } else {
            total_ops.map(|o| o / w + u64::from(t < o % w))
        };
        v.push(Plan {
            worker: t as u32,
            file_idx,
            path: prep.files[file_idx].path.clone(),
            gen,
            budget,
            pattern: prep.files[file_idx].pattern,
        });
    }
    Ok(v)
}
