//! The ranks' communicator: the few collective operations a multi-rank run
//! needs (barrier, gather to rank 0, broadcast, maximum, abort), over MPI
//! when iolab is built with the `mpi` feature. Without it a `World` cannot
//! exist, and a binary started by `mpirun` says how to get MPI support.

use std::env;

/// Environment variables MPI launchers set in every rank: Open MPI's, then
/// the PMI ones of MPICH/Slurm.
const SIZE_VARS: [&str; 3] = ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"];
const RANK_VARS: [&str; 3] = ["OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"];

fn env_u32(names: &[&str]) -> Option<u32> {
    names
        .iter()
        .find_map(|n| env::var(n).ok()?.trim().parse().ok())
}

/// Ranks the launcher started, when this process was started by one.
pub fn launched_ranks() -> Option<u32> {
    env_u32(&SIZE_VARS)
}

/// This process's rank according to the launcher's environment (known
/// before MPI is initialised: used so that only rank 0 reports bad input).
pub fn launched_rank() -> Option<u32> {
    env_u32(&RANK_VARS)
}

/// Whether this binary was built with MPI support.
pub const MPI_BUILT: bool = cfg!(feature = "mpi");

/// Errors of the ranks' communication.
#[derive(Debug, thiserror::Error)]
pub enum WorldError {
    /// Started by mpirun, built without MPI.
    #[error("started by an MPI launcher as one of {0} ranks, but this iolab was built without MPI support: build it with `cargo build --release --features mpi` (Debian: apt-get install libopenmpi-dev openmpi-bin libclang-dev)")]
    NotBuilt(u32),
    /// MPI_Init failed or was already done.
    #[error("MPI could not be initialised")]
    Init,
    /// Ranks run different measurements or binaries.
    #[error("rank {rank} differs from rank 0: {what}")]
    Disagree {
        /// The first rank that differs.
        rank: u32,
        /// The first difference, `name: rank 0's value vs that rank's`.
        what: String,
    },
}

#[cfg(feature = "mpi")]
mod imp {
    use mpi::datatype::PartitionMut;
    use mpi::environment::Universe;
    use mpi::topology::SimpleCommunicator;
    use mpi::traits::*;
    use mpi::Count;

    pub(super) struct Inner {
        // Dropped last: finalises MPI.
        pub(super) world: SimpleCommunicator,
        pub(super) _universe: Universe,
    }

    impl Inner {
        pub(super) fn init() -> Option<Inner> {
            let universe = mpi::initialize()?;
            Some(Inner {
                world: universe.world(),
                _universe: universe,
            })
        }
        pub(super) fn rank(&self) -> u32 {
            self.world.rank() as u32
        }
        pub(super) fn size(&self) -> u32 {
            self.world.size() as u32
        }
        pub(super) fn barrier(&self) {
            self.world.barrier();
        }
        pub(super) fn broadcast_i64(&self, v: i64) -> i64 {
            let mut x = v;
            self.world.process_at_rank(0).broadcast_into(&mut x);
            x
        }
        pub(super) fn all_max_u64(&self, v: u64) -> u64 {
            let mut out = 0u64;
            self.world
                .all_reduce_into(&v, &mut out, mpi::collective::SystemOperation::max());
            out
        }
        pub(super) fn gather_bytes(&self, mine: &[u8]) -> Option<Vec<Vec<u8>>> {
            let root = self.world.process_at_rank(0);
            let len = mine.len() as Count;
            if self.world.rank() == 0 {
                let mut lens = vec![0 as Count; self.world.size() as usize];
                root.gather_into_root(&len, &mut lens[..]);
                let displs: Vec<Count> = lens
                    .iter()
                    .scan(0, |acc, &x| {
                        let d = *acc;
                        *acc += x;
                        Some(d)
                    })
                    .collect();
                let total: Count = lens.iter().sum();
                let mut buf = vec![0u8; total as usize];
                {
                    let mut part = PartitionMut::new(&mut buf[..], &lens[..], &displs[..]);
                    root.gather_varcount_into_root(mine, &mut part);
                }
                Some(
                    lens.iter()
                        .zip(&displs)
                        .map(|(&l, &d)| buf[d as usize..(d + l) as usize].to_vec())
                        .collect(),
                )
            } else {
                root.gather_into(&len);
                root.gather_varcount_into(mine);
                None
            }
        }
        pub(super) fn idle_barrier(&self) {
            let mut req = self.world.immediate_barrier();
            loop {
                match req.test() {
                    Ok(_) => return,
                    Err(r) => req = r,
                }
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        }
        pub(super) fn broadcast_bytes(&self, mine: &[u8]) -> Vec<u8> {
            let root = self.world.process_at_rank(0);
            let mut len = mine.len() as u64;
            root.broadcast_into(&mut len);
            let mut buf = if self.world.rank() == 0 {
                mine.to_vec()
            } else {
                vec![0u8; len as usize]
            };
            if len > 0 {
                root.broadcast_into(&mut buf[..]);
            }
            buf
        }
        pub(super) fn abort(&self, code: i32) -> ! {
            self.world.abort(code)
        }
        pub(super) fn host() -> String {
            mpi::environment::processor_name().unwrap_or_else(|_| "?".into())
        }
        pub(super) fn library() -> String {
            mpi::environment::library_version()
                .map(|s| s.lines().next().unwrap_or("").trim().to_string())
                .unwrap_or_else(|_| "?".into())
        }
    }
}

#[cfg(not(feature = "mpi"))]
mod imp {
    /// Uninhabited: without MPI no world exists.
    pub(super) enum Inner {}

    impl Inner {
        pub(super) fn init() -> Option<Inner> {
            None
        }
        pub(super) fn rank(&self) -> u32 {
            match *self {}
        }
        pub(super) fn size(&self) -> u32 {
            match *self {}
        }
        pub(super) fn barrier(&self) {
            match *self {}
        }
        pub(super) fn broadcast_i64(&self, _: i64) -> i64 {
            match *self {}
        }
        pub(super) fn all_max_u64(&self, _: u64) -> u64 {
            match *self {}
        }
        pub(super) fn gather_bytes(&self, _: &[u8]) -> Option<Vec<Vec<u8>>> {
            match *self {}
        }
        pub(super) fn idle_barrier(&self) {
            match *self {}
        }
        pub(super) fn broadcast_bytes(&self, _: &[u8]) -> Vec<u8> {
            match *self {}
        }
        pub(super) fn abort(&self, _: i32) -> ! {
            match *self {}
        }
        pub(super) fn host() -> String {
            String::new()
        }
        pub(super) fn library() -> String {
            String::new()
        }
    }
}

/// The ranks of one run and the collectives between them. Only the thread
/// that created it may use it (MPI initialised single-threaded); I/O threads
/// never touch it.
pub struct World {
    inner: imp::Inner,
}

impl World {
    /// Joins the run when started by an MPI launcher: `Ok(None)` when this is
    /// a plain single process (no launcher, or a launcher with one rank and
    /// no MPI built in), an error when a launcher started several ranks of a
    /// binary without MPI.
    pub fn join() -> Result<Option<World>, WorldError> {
        let Some(n) = launched_ranks() else {
            return Ok(None);
        };
        if !MPI_BUILT {
            return if n > 1 {
                Err(WorldError::NotBuilt(n))
            } else {
                Ok(None)
            };
        }
        imp::Inner::init()
            .map(|inner| Some(World { inner }))
            .ok_or(WorldError::Init)
    }

    /// This rank.
    pub fn rank(&self) -> u32 {
        self.inner.rank()
    }

    /// Ranks in the run.
    pub fn size(&self) -> u32 {
        self.inner.size()
    }

    /// Whether this is rank 0, the one that reports.
    pub fn is_root(&self) -> bool {
        self.rank() == 0
    }

    /// Waits for every rank.
    pub fn barrier(&self) {
        self.inner.barrier()
    }

    /// Rank 0's value, on every rank.
    pub fn broadcast_i64(&self, v: i64) -> i64 {
        self.inner.broadcast_i64(v)
    }

    /// The largest of every rank's value, on every rank.
    pub fn all_max_u64(&self, v: u64) -> u64 {
        self.inner.all_max_u64(v)
    }

    /// Waits for every rank like [`World::barrier`], but sleeping between
    /// looks instead of spinning: for ranks that idle while rank 0 works
    /// alone. Every rank must call this one (not `barrier`) to meet.
    pub fn idle_barrier(&self) {
        self.inner.idle_barrier()
    }

    /// Rank 0's bytes (any length), on every rank; `mine` is ignored
    /// elsewhere.
    pub fn broadcast_bytes(&self, mine: &[u8]) -> Vec<u8> {
        self.inner.broadcast_bytes(mine)
    }

    /// Every rank's bytes, in rank order, on rank 0 (None elsewhere).
    pub fn gather_bytes(&self, mine: &[u8]) -> Option<Vec<Vec<u8>>> {
        self.inner.gather_bytes(mine)
    }

    /// Ends every rank now with `code` (MPI_Abort): how a failing rank stops
    /// the others instead of leaving them waiting in a barrier.
    pub fn abort(&self, code: i32) -> ! {
        self.inner.abort(code)
    }

    /// Says "iolab: rank R on HOST: why" and ends every rank with `code`.
    /// The line goes out in one write: `eprintln!` writes its pieces one
    /// by one, and the launcher's own abort message can land between them.
    pub fn fail(&self, why: &str, code: i32) -> ! {
        self.say(why);
        self.abort(code)
    }

    /// Writes "iolab: rank R on HOST: what" to standard error in one write,
    /// so lines from ranks and from the launcher never interleave mid-line.
    pub fn say(&self, what: &str) {
        use std::io::Write;
        let line = format!("iolab: rank {} on {}: {what}\n", self.rank(), self.host());
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    }

    /// This rank's host name as MPI knows it.
    pub fn host(&self) -> String {
        imp::Inner::host()
    }

    /// The MPI library and version (first line of MPI_Get_library_version).
    pub fn library(&self) -> String {
        imp::Inner::library()
    }

    /// This rank's clock offset from rank 0's, ns (add it to a local
    /// CLOCK_REALTIME reading to get rank 0's time): rank 0 broadcasts its
    /// clock right after a barrier; the error is the broadcast's latency
    /// (microseconds on one host or a fast network), which is why aggregate
    /// bandwidth is only quoted for phases of a second or more.
    pub fn clock_offset_ns(&self) -> i64 {
        self.barrier();
        let root = self.broadcast_i64(realtime_ns());
        let mine = realtime_ns();
        root - mine
    }

    /// Checks that every rank runs the same measurement with the same
    /// binary: `facts` are (name, value) pairs; rank 0 names the first rank
    /// and the first fact that differ. Every rank gets the same verdict.
    pub fn agree(&self, facts: &[(String, String)]) -> Result<(), WorldError> {
        let mine = serde_json::to_vec(facts).expect("strings serialise");
        let verdict = match self.gather_bytes(&mine) {
            Some(all) => first_difference(facts, &all),
            None => None,
        };
        let code = self.broadcast_i64(verdict.as_ref().map_or(-1, |(r, _)| i64::from(*r)));
        match (code, verdict) {
            (-1, _) => Ok(()),
            (_, Some((rank, what))) => Err(WorldError::Disagree { rank, what }),
            (r, None) => Err(WorldError::Disagree {
                rank: r as u32,
                what: "see rank 0's report".into(),
            }),
        }
    }
}

/// Wall-clock time, ns since the epoch (shared by ranks on one host).
pub fn realtime_ns() -> i64 {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    d.as_nanos() as i64
}

/// The first rank whose facts differ from `root`'s, and how.
fn first_difference(root: &[(String, String)], all: &[Vec<u8>]) -> Option<(u32, String)> {
    for (rank, bytes) in all.iter().enumerate() {
        let theirs: Vec<(String, String)> = serde_json::from_slice(bytes).unwrap_or_default();
        if theirs == root {
            continue;
        }
        for i in 0..root.len().max(theirs.len()) {
            let a = root.get(i);
            let b = theirs.get(i);
            if a != b {
                let name = a.or(b).map_or("?", |x| x.0.as_str());
                let show =
                    |x: Option<&(String, String)>| x.map_or("(none)".into(), |x| x.1.clone());
                return Some((rank as u32, format!("{name}: {} vs {}", show(a), show(b))));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(bs: &str) -> Vec<(String, String)> {
        vec![
            ("version".into(), "0.1.0".into()),
            ("--bs".into(), bs.into()),
        ]
    }

    #[test]
    fn the_first_difference_is_named() {
        let root = facts("4096");
        let enc = |f: &Vec<(String, String)>| serde_json::to_vec(f).unwrap();
        let all = vec![
            enc(&root),
            enc(&root),
            enc(&facts("8192")),
            enc(&facts("1")),
        ];
        let (rank, what) = first_difference(&root, &all).unwrap();
        assert_eq!(rank, 2);
        assert_eq!(what, "--bs: 4096 vs 8192");
        assert!(first_difference(&root, &[enc(&root)]).is_none());
    }
}
