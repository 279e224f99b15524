//! Rank 0 leads, the other ranks follow: for a driver that decides what to
//! measure as it goes (the lab), rank 0 sends each measurement's spec to
//! every rank, all run their part together (see [`super::run`]), and rank 0
//! gets the merged result. Followers wait between measurements sleeping, not
//! spinning in MPI, so rank 0 may measure alone meanwhile.

use super::aggregate::{Aggregate, RankReport};
use super::run::{gather, run_rank, RankRun};
use super::world::World;
use iolab_bench::error::{BenchError, Result};
use iolab_bench::prepare::{self, PrepareOpts, Prepared};
use iolab_bench::spec::WorkloadSpec;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

/// Where a spec's file name says whose file it is (per-rank layouts).
pub const RANK_MARK: &str = "{rank}";

/// The spec of rank `rank` from the spec rank 0 sends: its place and, for
/// per-rank files, its file.
pub fn for_rank(template: &WorkloadSpec, rank: u32) -> WorkloadSpec {
    let mut s = template.clone();
    let name = s
        .file
        .to_string_lossy()
        .replace(RANK_MARK, &rank.to_string());
    s.file = PathBuf::from(name);
    if let Some(p) = s.place.as_mut() {
        p.rank = rank;
    }
    s
}

/// Rank 0: measures `template` on every rank (each its own part) and
/// returns the merged result and each rank's report.
pub fn lead(
    world: &World,
    stop: &AtomicBool,
    template: &WorkloadSpec,
    prepare: &mut dyn FnMut(&WorkloadSpec) -> Result<Prepared>,
) -> Result<(Aggregate, Vec<RankReport>)> {
    let msg = serde_json::to_vec(template)
        .map_err(|e| BenchError::Usage(format!("encode a spec: {e}")))?;
    world.idle_barrier();
    world.broadcast_bytes(&msg);
    let r = RankRun {
        world,
        stop,
        wearout: false,
        fsync_on_close: false,
    };
    // The followers are inside this measurement now: an error here must
    // end them too, not leave them in a barrier.
    let mine = match run_rank(&r, &for_rank(template, 0), prepare) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("iolab: rank 0 on {}: {e}", world.host());
            world.abort(1)
        }
    };
    let all = gather(world, &mine)?.unwrap_or_default();
    let agg = Aggregate::of(&all).map_err(|e| BenchError::Usage(e.to_string()))?;
    Ok((agg, all))
}

/// Rank 0: tells the followers there is nothing more to measure.
pub fn dismiss(world: &World) {
    world.idle_barrier();
    world.broadcast_bytes(&[]);
}

/// Any rank but 0: measures what rank 0 sends until it is dismissed. A
/// failure of this rank's part ends every rank (MPI_Abort), naming it.
pub fn follow(world: &World, stop: &AtomicBool) -> Result<()> {
    loop {
        world.idle_barrier();
        let msg = world.broadcast_bytes(&[]);
        if msg.is_empty() {
            return Ok(());
        }
        let template: WorkloadSpec = serde_json::from_slice(&msg)
            .map_err(|e| BenchError::Usage(format!("decode rank 0's spec: {e}")))?;
        let spec = for_rank(&template, world.rank());
        let r = RankRun {
            world,
            stop,
            wearout: false,
            fsync_on_close: false,
        };
        let mut prep = |s: &WorkloadSpec| {
            prepare::prepare(
                s,
                true,
                PrepareOpts { overwrite: false },
                stop,
                &mut |_| {},
                &mut |_, _| {},
            )
        };
        match run_rank(&r, &spec, &mut prep) {
            Ok(mine) => {
                gather(world, &mine)?;
            }
            Err(e) => world.fail(&e.to_string(), 1),
        }
    }
}
