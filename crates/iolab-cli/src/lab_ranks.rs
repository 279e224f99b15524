//! `mpirun -n N iolab lab run …`: rank 0 runs the lab as usual (records,
//! figures, output) and leads the measurements that use ranks (`mt-suite`);
//! the other ranks only follow them and exit when rank 0 is done. Started
//! without a launcher, the lab runs alone.

use anyhow::Result;
use iolab_mpi::serve::{dismiss, follow};
use iolab_mpi::World;
use std::sync::atomic::AtomicBool;

/// How this process takes part in a lab run.
pub enum Joined {
    /// No launcher: a plain lab run.
    Alone,
    /// Rank 0: runs the lab; the followers are dismissed when this drops.
    Leader(Leader),
    /// Another rank: it followed rank 0 until dismissed; exit with this.
    Followed(i32),
}

/// Rank 0's hold on the run: dismisses the followers when dropped, however
/// the lab ends (done, bad input, an error), so none waits forever.
pub struct Leader(World);

impl Drop for Leader {
    fn drop(&mut self) {
        dismiss(&self.0);
    }
}

impl Joined {
    /// The ranks, for rank 0 (None alone).
    pub fn world(&self) -> Option<&World> {
        match self {
            Joined::Leader(l) => Some(&l.0),
            _ => None,
        }
    }
}

/// Joins the ranks when started by an MPI launcher; the other ranks follow
/// rank 0's measurements here and only return when dismissed.
pub fn join(stop: &AtomicBool) -> Result<Joined> {
    let world = match World::join() {
        Ok(Some(w)) => w,
        Ok(None) => return Ok(Joined::Alone),
        Err(e) => return Err(crate::error::usage(e.to_string())),
    };
    if world.is_root() {
        return Ok(Joined::Leader(Leader(world)));
    }
    match follow(&world, stop) {
        Ok(()) => Ok(Joined::Followed(0)),
        Err(e) => world.fail(&e.to_string(), 1),
    }
}
