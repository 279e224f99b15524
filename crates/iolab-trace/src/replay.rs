//! Issuing a trace's reads through a reader, timed.
//!
//! A [`Plan`] is the reads each replay thread issues, in order: one thread
//! per recorded thread, or N threads (recorded threads dealt round-robin;
//! when there are fewer recorded threads than N, the read list is cut into
//! N contiguous parts, which keeps sequential runs sequential). With
//! coalescing, a read that starts where the same thread's previous read of
//! the same file ended joins it, up to a size limit: what an application
//! with a larger block would have asked for.
//!
//! Each thread opens a file the first time it reads it (the open is part
//! of the measured time, as it is for the application) and keeps it open,
//! up to [`MAX_OPEN`] files (then the least recently used is closed).
//! Latency is per request (the whole read, however many calls it took).

use super::{Trace, TraceError};
use hdrhistogram::Histogram;
use iolab::pattern::Pattern;
use iolab::usage::Usage;
use iolab_bench::metrics::new_histogram;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// A way of reading files that a replay can use.
pub trait ReplayReader: Send + Sync {
    /// Name shown in tables (`pread`, `buffered:4m`, `auto`, ...).
    fn name(&self) -> String;
    /// Opens `path` for reading.
    fn open(&self, path: &Path) -> std::io::Result<Box<dyn ReplayFile>>;
}

/// An open file of a [`ReplayReader`].
pub trait ReplayFile: Send {
    /// Reads up to `buf.len()` bytes at `offset`; 0 at end of file.
    fn read_at(&mut self, buf: &mut [u8], offset: u64) -> std::io::Result<usize>;
}

/// The plainest reader: one `pread` per request.
#[derive(Clone, Copy, Debug, Default)]
pub struct PreadReader;

struct PreadFile(std::fs::File);

impl ReplayFile for PreadFile {
    fn read_at(&mut self, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
        std::os::unix::fs::FileExt::read_at(&self.0, buf, offset)
    }
}

impl ReplayReader for PreadReader {
    fn name(&self) -> String {
        "pread".into()
    }
    fn open(&self, path: &Path) -> std::io::Result<Box<dyn ReplayFile>> {
        Ok(Box::new(PreadFile(std::fs::File::open(path)?)))
    }
}

/// One request of a plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlanRead {
    /// Trace file index.
    pub file: u32,
    /// Offset.
    pub offset: u64,
    /// Length.
    pub len: u64,
    /// Recorded time, ns since the trace began.
    pub t_ns: Option<u64>,
}

/// How many replay threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Threads {
    /// One per recorded thread.
    Recorded,
    /// Exactly this many.
    Count(usize),
}

/// When to issue each read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timing {
    /// As soon as the previous one is done.
    Asap,
    /// Not before its recorded time (relative to the replay's start).
    Recorded,
}

/// The reads of each replay thread.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    /// Per thread, in issue order.
    pub threads: Vec<Vec<PlanRead>>,
}

impl Plan {
    /// Bytes the plan reads.
    pub fn bytes(&self) -> u64 {
        self.threads.iter().flatten().map(|r| r.len).sum()
    }
    /// Requests in the plan.
    pub fn requests(&self) -> usize {
        self.threads.iter().map(|t| t.len()).sum()
    }
}

/// Builds the plan of `t`; `coalesce` is the largest merged request.
pub fn plan(t: &Trace, threads: Threads, coalesce: Option<u64>) -> Plan {
    let pr = |r: &super::TraceRead| PlanRead {
        file: r.file,
        offset: r.offset,
        len: r.len,
        t_ns: r.t_ns,
    };
    let rec = t.threads();
    let mut out: Vec<Vec<PlanRead>> = match threads {
        Threads::Recorded => {
            let idx: HashMap<u64, usize> = rec.iter().enumerate().map(|(i, &t)| (t, i)).collect();
            let mut v = vec![Vec::new(); rec.len()];
            for r in &t.reads {
                v[idx[&r.thread]].push(pr(r));
            }
            v
        }
        Threads::Count(n) if rec.len() >= n => {
            let n = n.max(1);
            let idx: HashMap<u64, usize> =
                rec.iter().enumerate().map(|(i, &t)| (t, i % n)).collect();
            let mut v = vec![Vec::new(); n];
            for r in &t.reads {
                v[idx[&r.thread]].push(pr(r));
            }
            v
        }
        Threads::Count(n) => {
            let all: Vec<PlanRead> = t.reads.iter().map(pr).collect();
            let per = all.len().div_ceil(n.max(1)).max(1);
            all.chunks(per).map(|c| c.to_vec()).collect()
        }
    };
    if let Some(max) = coalesce {
        for th in &mut out {
            let mut merged: Vec<PlanRead> = Vec::with_capacity(th.len());
            for r in th.drain(..) {
                match merged.last_mut() {
                    Some(p)
                        if p.file == r.file
                            && p.offset + p.len == r.offset
                            && p.len + r.len <= max =>
                    {
                        p.len += r.len
                    }
                    _ => merged.push(r),
                }
            }
            *th = merged;
        }
    }
    out.retain(|t| !t.is_empty());
    Plan { threads: out }
}

/// Files one replay thread keeps open at most (a trace of a recursive grep
/// names thousands; the process's descriptor limit is often 1024).
pub const MAX_OPEN: usize = 256;

/// What one replay thread returns: bytes, requests, latency, interrupted.
type ThreadResult = Result<(u64, u64, Histogram<u64>, bool), TraceError>;

/// What one replay of a plan measured.
#[derive(Debug)]
pub struct RunResult {
    /// Wall time from the first request to the last completion, ns.
    pub wall_ns: u64,
    /// Bytes read.
    pub bytes: u64,
    /// Requests completed.
    pub requests: u64,
    /// Per-request latency, ns.
    pub latency: Histogram<u64>,
    /// CPU and faults of the whole process over the run.
    pub usage: Usage,
    /// Stopped early by Ctrl-C.
    pub interrupted: bool,
}

fn io_err(path: &Path, what: &str, e: std::io::Error) -> TraceError {
    TraceError::Io {
        path: path.to_path_buf(),
        source: std::io::Error::new(e.kind(), format!("{what}: {e}")),
    }
}

/// What every replay thread shares.
struct Shared<'a> {
    paths: &'a [PathBuf],
    reader: &'a dyn ReplayReader,
    timing: Timing,
    verify: Option<&'a [Option<Pattern>]>,
    stop: &'a AtomicBool,
    /// When the replay started, and the trace's first time stamp.
    start: Instant,
    t_first: u64,
}

/// Replays `plan` against `paths` with `reader`. With `verify`, every
/// request's bytes are checked against the file's pattern.
pub fn run(
    plan: &Plan,
    paths: &[PathBuf],
    reader: &dyn ReplayReader,
    timing: Timing,
    verify: Option<&[Option<Pattern>]>,
    stop: &AtomicBool,
) -> Result<RunResult, TraceError> {
    let t_first = plan
        .threads
        .iter()
        .flatten()
        .filter_map(|r| r.t_ns)
        .min()
        .unwrap_or(0);
    let u0 = Usage::now();
    let sh = Shared {
        paths,
        reader,
        timing,
        verify,
        stop,
        start: Instant::now(),
        t_first,
    };
    let results = replay_threads(plan, &sh);
    let wall_ns = sh.start.elapsed().as_nanos() as u64;
    let usage = Usage::now().since(&u0);
    let mut latency = new_histogram();
    let (mut bytes, mut requests, mut interrupted) = (0, 0, false);
    for r in results {
        let (b, n, h, i) = r?;
        bytes += b;
        requests += n;
        interrupted |= i;
        latency.add(&h).expect("same histogram bounds");
    }
    Ok(RunResult {
        wall_ns,
        bytes,
        requests,
        latency,
        usage,
        interrupted,
    })
}

/// Each of the plan's threads replayed on a thread of its own; a thread
/// that panicked is a failed replay.
fn replay_threads(plan: &Plan, sh: &Shared) -> Vec<ThreadResult> {
    std::thread::scope(|s| {
        let handles: Vec<_> = plan
            .threads
            .iter()
            .map(|reads| s.spawn(move || replay_thread(reads, sh)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(TraceError::Failed("a replay thread panicked".into())))
            })
            .collect()
    })
}

/// One thread's reads, in order: wait for the recorded time (if asked),
/// open the file (keeping at most `MAX_OPEN`), read, time, verify.
fn replay_thread(reads: &[PlanRead], sh: &Shared) -> ThreadResult {
    let mut hist = new_histogram();
    let max = reads.iter().map(|r| r.len).max().unwrap_or(0) as usize;
    let mut buf = vec![0u8; max];
    let mut open: HashMap<u32, (Box<dyn ReplayFile>, u64)> = HashMap::new();
    let mut clock = 0u64;
    let (mut bytes, mut n) = (0u64, 0u64);
    for r in reads {
        if sh.stop.load(Ordering::Relaxed) {
            return Ok((bytes, n, hist, true));
        }
        if let (Timing::Recorded, Some(t)) = (sh.timing, r.t_ns) {
            let due = sh.start + Duration::from_nanos(t - sh.t_first);
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
        }
        let path = &sh.paths[r.file as usize];
        clock += 1;
        let f = open_file(&mut open, r.file, clock, path, sh.reader)?;
        let len = r.len as usize;
        let t0 = Instant::now();
        read_full(f, &mut buf[..len], r.offset, path, sh.reader)?;
        let _ = hist.record((t0.elapsed().as_nanos() as u64).max(1));
        if let Some(Some(p)) = sh.verify.map(|v| &v[r.file as usize]) {
            p.verify(&buf[..len], r.offset).map_err(|m| {
                TraceError::Failed(format!(
                    "{}: --verify: byte at offset {} read with {} is {:#04x}, the pattern has {:#04x}",
                    path.display(),
                    m.offset,
                    sh.reader.name(),
                    m.got,
                    m.expected
                ))
            })?;
        }
        bytes += r.len;
        n += 1;
    }
    Ok((bytes, n, hist, false))
}

/// The thread's open file `file`, opened now if needed; when `MAX_OPEN`
/// are open, the one used least recently is closed first.
fn open_file<'o>(
    open: &'o mut HashMap<u32, (Box<dyn ReplayFile>, u64)>,
    file: u32,
    clock: u64,
    path: &Path,
    reader: &dyn ReplayReader,
) -> Result<&'o mut dyn ReplayFile, TraceError> {
    if !open.contains_key(&file) && open.len() >= MAX_OPEN {
        if let Some(&old) = open.iter().min_by_key(|(_, v)| v.1).map(|(k, _)| k) {
            open.remove(&old);
        }
    }
    let (f, used) = match open.entry(file) {
        std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
        std::collections::hash_map::Entry::Vacant(e) => {
            e.insert((reader.open(path).map_err(|e| io_err(path, "open", e))?, 0))
        }
    };
    *used = clock;
    Ok(&mut **f)
}

/// Reads all of `buf` at `offset`; a read of 0 bytes before the end is
/// an error (the file is shorter than the trace needs).
fn read_full(
    f: &mut dyn ReplayFile,
    buf: &mut [u8],
    offset: u64,
    path: &Path,
    reader: &dyn ReplayReader,
) -> Result<(), TraceError> {
    let len = buf.len();
    let mut got = 0usize;
    while got < len {
        let k = f
            .read_at(&mut buf[got..len], offset + got as u64)
            .map_err(|e| io_err(path, &format!("read at {}", offset + got as u64), e))?;
        if k == 0 {
            return Err(TraceError::Failed(format!(
                "{}: short read with {}: {} of {} bytes at offset {} (the file is shorter than the trace needs)",
                path.display(),
                reader.name(),
                got,
                len,
                offset
            )));
        }
        got += k;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse;

    /// Makes the trace's files under `dir` and plans its replay as recorded.
    fn place_and_plan(t: &Trace, dir: &Path) -> (crate::place::Placed, Plan) {
        let stop = AtomicBool::new(false);
        let placed = crate::place::place(t, dir, &stop, &mut |_, _| {}).unwrap();
        (placed, plan(t, Threads::Recorded, None))
    }

    /// Replays with pread as fast as it goes, checking the bytes.
    fn replay_verified(p: &Plan, placed: &crate::place::Placed) -> Result<RunResult, TraceError> {
        let stop = AtomicBool::new(false);
        run(
            p,
            &placed.paths,
            &PreadReader,
            Timing::Asap,
            Some(&placed.patterns),
            &stop,
        )
    }

    fn trace() -> Trace {
        parse(
            "file,offset,len,thread\na,0,4096,1\na,4096,4096,1\nb,0,100,2\na,8192,4096,1\na,100,10,2\nb,100,50,2\n",
            "t",
            None,
        )
        .unwrap()
    }

    #[test]
    fn plans_per_thread_n_threads_and_coalesced() {
        let t = trace();
        let p = plan(&t, Threads::Recorded, None);
        assert_eq!(p.threads.len(), 2);
        assert_eq!(p.threads[0].len(), 3);
        assert_eq!(p.threads[1].len(), 3);
        let p = plan(&t, Threads::Count(1), None);
        assert_eq!(p.threads.len(), 1);
        assert_eq!(p.requests(), 6);
        let p = plan(&t, Threads::Count(3), None);
        assert_eq!(p.threads.len(), 3);
        assert_eq!(p.bytes(), t.total_bytes());
        let p = plan(&t, Threads::Recorded, Some(8192));
        assert_eq!(p.threads[0].len(), 2, "{:?}", p.threads[0]);
        assert_eq!(p.threads[0][0].len, 8192);
        assert_eq!(p.threads[1].len(), 3, "different files do not merge");
        assert_eq!(p.bytes(), t.total_bytes());
    }

    #[test]
    fn replays_exactly_the_traced_bytes_and_verifies_them() {
        let d = tempfile::tempdir().unwrap();
        let t = trace();
        let (placed, p) = place_and_plan(&t, d.path());
        let r = replay_verified(&p, &placed).unwrap();
        assert_eq!(r.bytes, t.total_bytes());
        assert_eq!(r.requests, 6);
        assert_eq!(r.latency.len(), 6);
        // Damage one byte the trace reads: verification names it.
        let a = &placed.paths[0];
        let mut bytes = std::fs::read(a).unwrap();
        bytes[5000] ^= 0xff;
        std::fs::write(a, &bytes).unwrap();
        let e = replay_verified(&p, &placed).unwrap_err();
        assert!(e.to_string().contains("offset 5000"), "{e}");
        // A file shorter than the trace: a short read, reported.
        std::fs::write(&placed.paths[1], b"x").unwrap();
        let stop = AtomicBool::new(false);
        let e = run(&p, &placed.paths, &PreadReader, Timing::Asap, None, &stop).unwrap_err();
        assert!(e.to_string().contains("short read"), "{e}");
    }

    #[test]
    fn more_files_than_it_keeps_open() {
        let d = tempfile::tempdir().unwrap();
        let mut csv = String::from("file,offset,len\n");
        for round in 0..2 {
            for i in 0..MAX_OPEN + 20 {
                csv.push_str(&format!("f{i},{round},1\n"));
            }
        }
        let t = parse(&csv, "t", None).unwrap();
        let (placed, p) = place_and_plan(&t, d.path());
        let r = replay_verified(&p, &placed).unwrap();
        assert_eq!(r.requests as usize, 2 * (MAX_OPEN + 20));
    }
}
