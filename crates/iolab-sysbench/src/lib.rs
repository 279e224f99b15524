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
#![forbid(unsafe_code)]

pub mod calls;
pub mod faults;
pub mod fsys;
pub mod memory;
pub mod net;
pub mod net_server;
pub mod result;
pub mod tasks;
pub mod timing;

mod common;

pub use common::meminfo_bytes;
pub(crate) use common::{io_err, keep, temp_dir};
pub use common::{Config, Result, Scale, SysError};
pub(crate) use iolab_bench::random::Rng;
pub use result::{Entry, Point, Series, SysReport, SCHEMA_VERSION};

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
    ($name:literal, $group:literal, $about:literal, $f:expr) => {
        Measurement {
            name: $name,
            group: $group,
            about: $about,
            run: $f,
        }
    };
}

/// Every measurement, in the order a full run takes them: name, group, what
/// it measures, the function (one line each, so the table reads as one;
/// variants of one measurement call it with their arguments).
#[rustfmt::skip]
pub const MEASUREMENTS: &[Measurement] = &[
    m!("clock_res", "timing", "smallest step of CLOCK_MONOTONIC", timing::clock_res),
    m!("clock_read", "timing", "cost of clock_gettime (vDSO)", timing::clock_read),
    m!("rdtscp", "timing", "cost of reading the TSC with RDTSCP", timing::rdtscp),
    m!("loop", "timing", "overhead of one loop iteration", timing::loop_overhead),
    m!("call0", "calls", "procedure call, 0 arguments", calls::call0),
    m!("call1", "calls", "procedure call, 1 argument", calls::call1),
    m!("call2", "calls", "procedure call, 2 arguments", calls::call2),
    m!("call3", "calls", "procedure call, 3 arguments", calls::call3),
    m!("call4", "calls", "procedure call, 4 arguments", calls::call4),
    m!("call5", "calls", "procedure call, 5 arguments", calls::call5),
    m!("call6", "calls", "procedure call, 6 arguments", calls::call6),
    m!("call7", "calls", "procedure call, 7 arguments", calls::call7),
    m!("getpid", "calls", "getpid system call", calls::getpid),
    m!("getuid", "calls", "getuid system call", calls::getuid),
    m!("fstat", "calls", "fstat of an open file", calls::fstat),
    m!("lseek", "calls", "lseek of an open file", calls::lseek),
    m!("read1", "calls", "1-byte read of /dev/zero", calls::read1),
    m!("write_null", "calls", "1-byte write to /dev/null", calls::write_null),
    m!("thread", "tasks", "thread create + join", tasks::thread),
    m!("fork", "tasks", "fork + _exit + waitpid", tasks::fork),
    m!("spawn", "tasks", "posix_spawn /bin/true + waitpid", tasks::spawn),
    m!("ctx_thread_1cpu", "tasks", "context switch, 2 threads on 1 CPU", tasks::ctx_thread_1cpu),
    m!("ctx_thread_2cpu", "tasks", "thread ping-pong across 2 CPUs (one way)", tasks::ctx_thread_2cpu),
    m!("ctx_proc_1cpu", "tasks", "context switch, 2 processes on 1 CPU", tasks::ctx_proc_1cpu),
    m!("ctx_proc_2cpu", "tasks", "process ping-pong across 2 CPUs (one way)", tasks::ctx_proc_2cpu),
    m!("mem_latency", "memory", "load latency against working set", memory::latency),
    m!("bw_read", "memory", "read bandwidth, 1 thread", |c| memory::bandwidth(c, memory::Kind::Read, false)),
    m!("bw_write", "memory", "write bandwidth, 1 thread", |c| memory::bandwidth(c, memory::Kind::Write, false)),
    m!("bw_copy", "memory", "copy bandwidth, 1 thread", |c| memory::bandwidth(c, memory::Kind::Copy, false)),
    m!("bw_read_all", "memory", "read bandwidth, all threads", |c| memory::bandwidth(c, memory::Kind::Read, true)),
    m!("bw_write_all", "memory", "write bandwidth, all threads", |c| memory::bandwidth(c, memory::Kind::Write, true)),
    m!("bw_copy_all", "memory", "copy bandwidth, all threads", |c| memory::bandwidth(c, memory::Kind::Copy, true)),
    m!("fault_minor", "faults", "minor page fault (anonymous first touch)", faults::minor),
    m!("fault_major", "faults", "major page fault (cold file mapping)", faults::major),
    m!("tcp_rtt", "net", "TCP round trip on loopback by size", net::tcp_rtt),
    m!("udp_rtt", "net", "UDP round trip on loopback by size", net::udp_rtt),
    m!("unix_rtt", "net", "Unix socket round trip by size", net::unix_rtt),
    m!("pipe_rtt", "net", "pipe round trip between threads by size", net::pipe_rtt),
    m!("tcp_bw", "net", "TCP bandwidth on loopback", net::tcp_bw),
    m!("tcp_connect", "net", "TCP connect + close on loopback", net::tcp_connect),
    m!("file_read_seq", "fs", "O_DIRECT sequential read per block", fsys::read_seq),
    m!("file_read_rand", "fs", "O_DIRECT random read per block", fsys::read_rand),
    m!("contention", "fs", "O_DIRECT read per block against processes", fsys::contention),
    m!("file_cache", "fs", "file cache size (re-read knee)", fsys::file_cache),
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

#[cfg(test)]
mod tests;
