//! The mixed workload that compares `Auto` with every fixed technique: a
//! third large sequential reads, a third small random reads over a file
//! that fits in memory, a third small random reads over a file that does
//! not fit the memory left to it.
//!
//! "The memory left to it" is either simulated (`budget: Some(b)`: every
//! reader is told `b` bytes are free for the page cache) or real (`None`:
//! the readers read MemAvailable while `iolab mixed --balloon-leave SIZE`
//! holds the rest of memory in an mlock balloon, as
//! `scripts/adaptive-vs-fixed.sh` does). Each phase starts with its file
//! evicted.

use iolab_reader::profile::Profile;
use iolab_reader::{Hints, Options, ReadReq, Reader, Technique};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Sizes of the mixed workload.
#[derive(Clone, Copy, Debug)]
pub struct MixedSpec {
    /// File read sequentially, bytes.
    pub seq_len: u64,
    /// Request size of the sequential phase.
    pub seq_req: usize,
    /// File that fits in memory, bytes.
    pub fit_len: u64,
    /// Random reads over it.
    pub fit_reads: usize,
    /// File that does not fit, bytes.
    pub big_len: u64,
    /// Random reads over it.
    pub big_reads: usize,
    /// Size of the random reads.
    pub small: usize,
    /// Random reads are issued in batches of this many (`read_many`).
    pub batch: usize,
    /// Memory the readers are told is free for the page cache (None: what
    /// /proc/meminfo says, for runs under a real memory balloon).
    pub budget: Option<u64>,
}

impl Default for MixedSpec {
    fn default() -> Self {
        MixedSpec {
            seq_len: 2 << 30,
            seq_req: 4 << 20,
            fit_len: 256 << 20,
            fit_reads: 131_072,
            big_len: 4 << 30,
            big_reads: 16_384,
            small: 4096,
            batch: 32,
            budget: Some(1 << 30),
        }
    }
}

/// The three files.
#[derive(Clone, Debug)]
pub struct MixedFiles {
    /// Read sequentially.
    pub seq: PathBuf,
    /// Fits.
    pub fit: PathBuf,
    /// Does not fit.
    pub big: PathBuf,
}

impl MixedFiles {
    /// The files' names in `dir`.
    pub fn in_dir(dir: &Path) -> Self {
        MixedFiles {
            seq: dir.join("mixed-seq"),
            fit: dir.join("mixed-fit"),
            big: dir.join("mixed-big"),
        }
    }
}

/// Creates the files that are missing; refuses ones of the wrong size.
pub fn prepare(files: &MixedFiles, spec: &MixedSpec, stop: &AtomicBool) -> Result<(), String> {
    for (p, len) in [
        (&files.seq, spec.seq_len),
        (&files.fit, spec.fit_len),
        (&files.big, spec.big_len),
    ] {
        match std::fs::metadata(p) {
            Ok(m) if m.len() == len => {}
            Ok(m) => {
                return Err(format!(
                "{} exists with {} bytes, the workload needs {len}; remove it or use another --dir",
                p.display(),
                m.len()
            ))
            }
            Err(_) => iolab::file::create_pattern_file(
                p,
                len,
                iolab::pattern::Pattern::new(len),
                false,
                stop,
                &mut |_| {},
            )
            .map_err(|e| e.to_string())?,
        }
    }
    Ok(())
}

/// Time of each phase.
#[derive(Clone, Copy, Debug, Default)]
pub struct MixedTimes {
    /// Large sequential reads.
    pub seq: Duration,
    /// Small random reads, file fits.
    pub fit: Duration,
    /// Small random reads, file does not fit.
    pub big: Duration,
}

impl MixedTimes {
    /// All three.
    pub fn total(&self) -> Duration {
        self.seq + self.fit + self.big
    }
}

fn offsets(n: usize, len: u64, small: usize, seed: u64) -> Vec<u64> {
    let mut x = seed | 1;
    let blocks = len / small as u64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % blocks * small as u64
        })
        .collect()
}

fn opts(t: Technique, p: &Option<Arc<Profile>>, budget: Option<u64>, hints: Hints) -> Options {
    let mut o = Options::new(t).hints(hints);
    o.memory_budget = budget;
    o.profile = p.clone();
    o
}

fn random_phase(r: &Reader, offs: &[u64], small: usize, batch: usize) -> Result<(), String> {
    let mut bufs: Vec<Vec<u8>> = (0..batch).map(|_| vec![0u8; small]).collect();
    for chunk in offs.chunks(batch) {
        let mut reqs = ReadReq::batch(chunk, &mut bufs);
        r.read_many(&mut reqs);
        for q in &reqs {
            match &q.result {
                Some(Ok(n)) if *n == small => {}
                Some(Ok(n)) => return Err(format!("short read {n} at {}", q.offset)),
                Some(Err(e)) => return Err(e.to_string()),
                None => return Err("a request was not completed".into()),
            }
        }
    }
    Ok(())
}

/// Runs the three phases with `t` (each file evicted first). `profile`:
/// the profile `Auto` uses (None: the process's).
pub fn run(
    files: &MixedFiles,
    spec: &MixedSpec,
    t: Technique,
    profile: &Option<Arc<Profile>>,
) -> Result<MixedTimes, String> {
    let open = |path: &std::path::Path, random: bool, expected_fraction: f64| {
        let hints = Hints {
            random,
            expected_fraction,
        };
        Reader::open(path, opts(t, profile, spec.budget, hints)).map_err(|e| e.to_string())
    };
    // 1. Large sequential reads of a file that does not stay cached.
    let seq = evicted_around(&files.seq, || {
        let r = open(&files.seq, false, 1.0)?;
        let mut buf = vec![0u8; spec.seq_req];
        let t0 = Instant::now();
        let mut off = 0;
        while off < spec.seq_len {
            let n = r.read_at(off, &mut buf).map_err(|e| e.to_string())?;
            if n == 0 {
                break;
            }
            off += n as u64;
        }
        Ok(t0.elapsed())
    })?;
    // 2. Small random reads over a file that fits (read about twice over).
    let fit = evicted_around(&files.fit, || {
        let r = open(&files.fit, true, 1.0)?;
        let offs = offsets(spec.fit_reads, spec.fit_len, spec.small, 12345);
        let t0 = Instant::now();
        random_phase(&r, &offs, spec.small, spec.batch)?;
        Ok(t0.elapsed())
    })?;
    // 3. Small random reads over a file that does not fit.
    let frac = (spec.big_reads * spec.small) as f64 / spec.big_len as f64;
    let big = evicted_around(&files.big, || {
        let r = open(&files.big, true, frac)?;
        let offs = offsets(spec.big_reads, spec.big_len, spec.small, 777);
        let t0 = Instant::now();
        random_phase(&r, &offs, spec.small, spec.batch)?;
        Ok(t0.elapsed())
    })?;
    Ok(MixedTimes { seq, fit, big })
}

/// Runs one phase with `path` evicted before it and after it (the reader
/// is dropped inside `phase`, before the second eviction).
fn evicted_around(
    path: &std::path::Path,
    phase: impl FnOnce() -> Result<Duration, String>,
) -> Result<Duration, String> {
    iolab::cache::evict(path).map_err(|e| e.to_string())?;
    let took = phase()?;
    iolab::cache::evict(path).map_err(|e| e.to_string())?;
    Ok(took)
}
