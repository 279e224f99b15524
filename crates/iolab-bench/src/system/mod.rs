//! System microbenchmarks (`iolab sys`): what the operating system's basic
//! operations cost on this machine — clocks, calls, tasks and context
//! switches, memory latency and bandwidth, page faults, loopback networking
//! and file reads — in the spirit of lmbench and of the classic
//! "system measurement" course projects.
//!
//! Each measurement is an entry of [`MEASUREMENTS`]: a name, a group and a
//! function that repeats the experiment [`Config::repeat`] times and
//! returns an [`Entry`] with the spread across repeats. [`run`] runs a
//! selection, in order, and stops early when asked.

pub mod calls;
pub mod faults;
pub mod fsys;
pub mod memory;
pub mod net;
pub mod net_server;
pub mod record;
pub mod tasks;
pub mod timing;

pub use record::{Entry, Point, Series, SysReport, SCHEMA_VERSION};

use crate::stats::Stats;
use std::hint::black_box;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// What can go wrong in a system measurement.
#[derive(Debug, thiserror::Error)]
pub enum SysError {
    /// A kernel call through the iolab layer failed.
    #[error(transparent)]
    Iolab(#[from] iolab::Error),
    /// A standard-library I/O call failed; `what` says which step.
    #[error("{what}: {source}")]
    Io {
        /// The step.
        what: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// This machine cannot run the measurement (it is skipped).
    #[error("{0}")]
    Unsupported(String),
    /// No measurement or group has this name.
    #[error("unknown measurement '{0}'")]
    Unknown(String),
    /// The user asked to stop.
    #[error("cancelled")]
    Cancelled,
}

/// Result of this module.
pub type Result<T, E = SysError> = std::result::Result<T, E>;

/// Wraps an I/O error with the step that failed. The step's text becomes a
/// `String` only on error, so hot loops pay nothing for it.
pub(crate) fn io_err<S: Into<String>>(what: S) -> impl FnOnce(std::io::Error) -> SysError {
    move |source| SysError::Io {
        what: what.into(),
        source,
    }
}

/// How big the experiments are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// Tiny: for tests (seconds for everything, debug build).
    Smoke,
    /// `--quick`: under 45 s for everything.
    Quick,
    /// The default: under 3 minutes for everything.
    Full,
}

impl Scale {
    /// Name as recorded (`smoke`, `quick`, `full`).
    pub fn name(self) -> &'static str {
        match self {
            Scale::Smoke => "smoke",
            Scale::Quick => "quick",
            Scale::Full => "full",
        }
    }

    /// Picks by scale.
    pub fn pick<T>(self, smoke: T, quick: T, full: T) -> T {
        match self {
            Scale::Smoke => smoke,
            Scale::Quick => quick,
            Scale::Full => full,
        }
    }

    /// Wall time one repeat of a cheap operation aims for, ns.
    fn target_ns(self) -> u64 {
        self.pick(2_000_000, 15_000_000, 60_000_000)
    }
}

/// How to run.
#[derive(Debug)]
pub struct Config<'a> {
    /// Experiment size.
    pub scale: Scale,
    /// Repeats per measurement (at least 1).
    pub repeat: usize,
    /// Directory under which a temporary directory for files is made.
    pub dir: PathBuf,
    /// Set (e.g. by Ctrl-C) to stop as soon as possible.
    pub stop: &'a AtomicBool,
}

impl Config<'_> {
    pub(crate) fn check_stop(&self) -> Result<()> {
        if self.stop.load(Ordering::Relaxed) {
            Err(SysError::Cancelled)
        } else {
            Ok(())
        }
    }

    pub(crate) fn reps(&self) -> usize {
        self.repeat.max(1)
    }

    /// Times `f`, returning ns per call. Finds a count that takes about the
    /// scale's target time (at most `max_ops`), then runs it once timed.
    pub(crate) fn per_op(&self, max_ops: u64, f: &mut dyn FnMut() -> Result<()>) -> Result<f64> {
        let target = self.scale.target_ns();
        let mut n = 1u64;
        loop {
            self.check_stop()?;
            let t = Instant::now();
            for _ in 0..n {
                f()?;
            }
            let dt = t.elapsed().as_nanos() as u64;
            if dt >= target / 8 || n >= max_ops {
                // Scale up to the target from this pilot run, then measure.
                let per = dt.max(1) as f64 / n as f64;
                let m = ((target as f64 / per) as u64).clamp(1, max_ops.max(1));
                let t = Instant::now();
                for _ in 0..m {
                    f()?;
                }
                return Ok(t.elapsed().as_nanos() as f64 / m as f64);
            }
            n = (n * 4).min(max_ops);
        }
    }

    /// Repeats `per_op` and returns the statistics across repeats.
    pub(crate) fn repeat_per_op(
        &self,
        max_ops: u64,
        f: &mut dyn FnMut() -> Result<()>,
    ) -> Result<Stats> {
        let mut v = Vec::with_capacity(self.reps());
        for _ in 0..self.reps() {
            v.push(self.per_op(max_ops, f)?);
        }
        Ok(Stats::of(&v))
    }

    /// Repeats `f` (which returns one value) and returns the statistics.
    pub(crate) fn repeat_values(&self, f: &mut dyn FnMut() -> Result<f64>) -> Result<Stats> {
        let mut v = Vec::with_capacity(self.reps());
        for _ in 0..self.reps() {
            self.check_stop()?;
            v.push(f()?);
        }
        Ok(Stats::of(&v))
    }
}

/// Keeps a value alive and opaque to the optimiser.
#[inline]
pub(crate) fn keep<T>(x: T) -> T {
    black_box(x)
}

/// One named measurement.
#[derive(Clone, Copy)]
pub struct Measurement {
    /// Name as the CLI spells it.
    pub name: &'static str,
    /// Group name.
    pub group: &'static str,
    /// What it measures, in a few words.
    pub about: &'static str,
    run: fn(&Config<'_>) -> Result<Entry>,
}

impl std::fmt::Debug for Measurement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Measurement")
            .field("name", &self.name)
            .field("group", &self.group)
            .finish()
    }
}

impl Measurement {
    /// Runs it.
    pub fn run(&self, cfg: &Config<'_>) -> Result<Entry> {
        (self.run)(cfg)
    }
}

macro_rules! m {
    ($name:literal, $group:literal, $about:literal, $f:path) => {
        Measurement {
            name: $name,
            group: $group,
            about: $about,
            run: $f,
        }
    };
}

/// Every measurement, in the order a full run takes them.
pub const MEASUREMENTS: &[Measurement] = &[
    m!(
        "clock_res",
        "timing",
        "smallest step of CLOCK_MONOTONIC",
        timing::clock_res
    ),
    m!(
        "clock_read",
        "timing",
        "cost of clock_gettime (vDSO)",
        timing::clock_read
    ),
    m!(
        "rdtscp",
        "timing",
        "cost of reading the TSC with RDTSCP",
        timing::rdtscp
    ),
    m!(
        "loop",
        "timing",
        "overhead of one loop iteration",
        timing::loop_overhead
    ),
    m!(
        "call0",
        "calls",
        "procedure call, 0 arguments",
        calls::call0
    ),
    m!("call1", "calls", "procedure call, 1 argument", calls::call1),
    m!(
        "call2",
        "calls",
        "procedure call, 2 arguments",
        calls::call2
    ),
    m!(
        "call3",
        "calls",
        "procedure call, 3 arguments",
        calls::call3
    ),
    m!(
        "call4",
        "calls",
        "procedure call, 4 arguments",
        calls::call4
    ),
    m!(
        "call5",
        "calls",
        "procedure call, 5 arguments",
        calls::call5
    ),
    m!(
        "call6",
        "calls",
        "procedure call, 6 arguments",
        calls::call6
    ),
    m!(
        "call7",
        "calls",
        "procedure call, 7 arguments",
        calls::call7
    ),
    m!("getpid", "calls", "getpid system call", calls::getpid),
    m!("getuid", "calls", "getuid system call", calls::getuid),
    m!("fstat", "calls", "fstat of an open file", calls::fstat),
    m!("lseek", "calls", "lseek of an open file", calls::lseek),
    m!("read1", "calls", "1-byte read of /dev/zero", calls::read1),
    m!(
        "write_null",
        "calls",
        "1-byte write to /dev/null",
        calls::write_null
    ),
    m!("thread", "tasks", "thread create + join", tasks::thread),
    m!("fork", "tasks", "fork + _exit + waitpid", tasks::fork),
    m!(
        "spawn",
        "tasks",
        "posix_spawn /bin/true + waitpid",
        tasks::spawn
    ),
    m!(
        "ctx_thread_1cpu",
        "tasks",
        "context switch, 2 threads on 1 CPU",
        tasks::ctx_thread_1cpu
    ),
    m!(
        "ctx_thread_2cpu",
        "tasks",
        "thread ping-pong across 2 CPUs (one way)",
        tasks::ctx_thread_2cpu
    ),
    m!(
        "ctx_proc_1cpu",
        "tasks",
        "context switch, 2 processes on 1 CPU",
        tasks::ctx_proc_1cpu
    ),
    m!(
        "ctx_proc_2cpu",
        "tasks",
        "process ping-pong across 2 CPUs (one way)",
        tasks::ctx_proc_2cpu
    ),
    m!(
        "mem_latency",
        "memory",
        "load latency against working set",
        memory::latency
    ),
    m!(
        "bw_read",
        "memory",
        "read bandwidth, 1 thread",
        memory::bw_read
    ),
    m!(
        "bw_write",
        "memory",
        "write bandwidth, 1 thread",
        memory::bw_write
    ),
    m!(
        "bw_copy",
        "memory",
        "copy bandwidth, 1 thread",
        memory::bw_copy
    ),
    m!(
        "bw_read_all",
        "memory",
        "read bandwidth, all threads",
        memory::bw_read_all
    ),
    m!(
        "bw_write_all",
        "memory",
        "write bandwidth, all threads",
        memory::bw_write_all
    ),
    m!(
        "bw_copy_all",
        "memory",
        "copy bandwidth, all threads",
        memory::bw_copy_all
    ),
    m!(
        "fault_minor",
        "faults",
        "minor page fault (anonymous first touch)",
        faults::minor
    ),
    m!(
        "fault_major",
        "faults",
        "major page fault (cold file mapping)",
        faults::major
    ),
    m!(
        "tcp_rtt",
        "net",
        "TCP round trip on loopback by size",
        net::tcp_rtt
    ),
    m!(
        "udp_rtt",
        "net",
        "UDP round trip on loopback by size",
        net::udp_rtt
    ),
    m!(
        "unix_rtt",
        "net",
        "Unix socket round trip by size",
        net::unix_rtt
    ),
    m!(
        "pipe_rtt",
        "net",
        "pipe round trip between threads by size",
        net::pipe_rtt
    ),
    m!("tcp_bw", "net", "TCP bandwidth on loopback", net::tcp_bw),
    m!(
        "tcp_connect",
        "net",
        "TCP connect + close on loopback",
        net::tcp_connect
    ),
    m!(
        "file_read_seq",
        "fs",
        "O_DIRECT sequential read per block",
        fsys::read_seq
    ),
    m!(
        "file_read_rand",
        "fs",
        "O_DIRECT random read per block",
        fsys::read_rand
    ),
    m!(
        "contention",
        "fs",
        "O_DIRECT read per block against processes",
        fsys::contention
    ),
    m!(
        "file_cache",
        "fs",
        "file cache size (re-read knee)",
        fsys::file_cache
    ),
];

/// Measurements a `--quick` run of everything leaves out (naming them still
/// runs them): locking most of memory for the file-cache balloon takes
/// close to a minute on a VM whose host backs memory on first touch.
pub const QUICK_SKIPS: &[&str] = &["file_cache"];

/// The group names, in order.
pub const GROUPS: &[&str] = &["timing", "calls", "tasks", "memory", "faults", "net", "fs"];

/// Resolves names (measurement or group names, `all`) to measurements, in
/// registry order without duplicates. Empty means all.
pub fn select(names: &[String]) -> Result<Vec<&'static Measurement>> {
    if names.is_empty() || names.iter().any(|n| n == "all") {
        return Ok(MEASUREMENTS.iter().collect());
    }
    for n in names {
        if !MEASUREMENTS.iter().any(|m| m.name == n || m.group == n) {
            return Err(SysError::Unknown(n.clone()));
        }
    }
    Ok(MEASUREMENTS
        .iter()
        .filter(|m| names.iter().any(|n| m.name == n || m.group == n))
        .collect())
}

/// Runs `list` in order, calling `done` after each (with its result). A
/// measurement this machine cannot run is reported as `Err(Unsupported)`
/// and the run goes on; cancellation ends it.
pub fn run(
    list: &[&Measurement],
    cfg: &Config<'_>,
    done: &mut dyn FnMut(&Measurement, &Result<Entry>),
) -> Result<()> {
    for m in list {
        cfg.check_stop()?;
        let r = m.run(cfg);
        done(m, &r);
        if let Err(SysError::Cancelled) = r {
            return Err(SysError::Cancelled);
        }
    }
    Ok(())
}

/// A small fast random generator (splitmix64) for permutations and offsets.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed)
    }
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in 0..n (n > 0).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        ((self.next() as u128 * n as u128) >> 64) as u64
    }
    pub(crate) fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            v.swap(i, j);
        }
    }
}

/// A temporary directory under `cfg.dir`, removed on drop.
pub(crate) fn temp_dir(cfg: &Config<'_>) -> Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix(".iolab-sys-")
        .tempdir_in(&cfg.dir)
        .map_err(io_err(format!(
            "create a temporary directory in {}",
            cfg.dir.display()
        )))
}

/// A `/proc/meminfo` field, bytes.
pub(crate) fn meminfo_bytes(field: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/meminfo").ok()?;
    s.lines()
        .find(|l| l.starts_with(field) && l[field.len()..].starts_with(':'))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<u64>().ok())
        .map(|kb| kb * 1024)
}

#[cfg(test)]
mod tests;
