//! Comparing readers on one trace: every reader replays the same plan,
//! `repeat` times, in an order that rotates each round (round k starts at
//! reader k), so slow drift of a loaded machine spreads over all readers
//! instead of favouring whichever runs first. The cache is put in the
//! asked state before each replay. The winner is the reader with the
//! shortest median time; every reader's time is also given relative to it.

use super::replay::{run, Plan, PreadReader, ReplayReader, Timing};
use super::TraceError;
use iolab::pattern::Pattern;
use iolab_bench::metrics::{new_histogram, LatencySummary};
use iolab_bench::stats::median;
use serde::Serialize;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

/// The page-cache state each replay starts from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Cache {
    /// The trace's files evicted (POSIX_FADV_DONTNEED) before each replay.
    Cold,
    /// The trace's files read once before each replay.
    Warm,
    /// The trace's files evicted, then the trace replayed once with
    /// `pread` (not timed) before each replay: what a program run a second
    /// time finds in memory, the pages its own reads brought in and not the
    /// rest of its files (a database's look-ups, whose pages are cached
    /// while most of the database is not).
    Rerun,
}

impl Cache {
    /// Its name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Cache::Cold => "cold",
            Cache::Warm => "warm",
            Cache::Rerun => "rerun",
        }
    }
}

impl std::str::FromStr for Cache {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "cold" => Ok(Cache::Cold),
            "warm" => Ok(Cache::Warm),
            "rerun" => Ok(Cache::Rerun),
            _ => Err(format!(
                "unknown cache state '{s}': use cold, warm or rerun"
            )),
        }
    }
}

/// How a session runs.
#[derive(Clone, Copy, Debug)]
pub struct SessionOpts {
    /// Replays per reader.
    pub repeat: usize,
    /// Cache state before each replay.
    pub cache: Cache,
    /// When reads are issued.
    pub timing: Timing,
    /// Check every byte against the pattern.
    pub verify: bool,
}

/// One replay of one reader.
#[derive(Clone, Debug, Serialize)]
pub struct RunSummary {
    /// Round (0-based).
    pub round: usize,
    /// Wall time, ns.
    pub wall_ns: u64,
    /// Bytes read.
    pub bytes: u64,
    /// User CPU, ns.
    pub user_ns: u64,
    /// System CPU, ns.
    pub sys_ns: u64,
    /// Fraction of the files resident before the replay.
    pub resident_before: f64,
    /// Open files on which `Auto`'s run-time guard fell back to `pread`
    /// (0 for the other readers).
    pub fell_back: u64,
}

/// Everything measured for one reader.
#[derive(Clone, Debug, Serialize)]
pub struct ReaderResult {
    /// Reader name.
    pub reader: String,
    /// Each replay, in the order run.
    pub runs: Vec<RunSummary>,
    /// Median wall time over the runs, ns.
    pub median_ns: f64,
    /// Bytes per replay.
    pub bytes: u64,
    /// Requests per replay.
    pub requests: u64,
    /// Throughput at the median time, MiB/s.
    pub mib_per_s: f64,
    /// Latency over all runs.
    pub latency: LatencySummary,
    /// CPU (user + system) per replay, median, as % of the wall time.
    pub cpu_percent: f64,
    /// Median time over the winner's (1.0 for the winner).
    pub relative: f64,
    /// The fastest reader.
    pub winner: bool,
    /// Where `Auto`'s guard fell back, and why: a few of the last
    /// replay's switches, in words.
    pub switches: Vec<String>,
}

/// Switches of `Auto`'s guard kept per reader, in words.
pub const SWITCHES_SHOWN: usize = 3;

/// The block devices holding `paths`, each once.
fn devices_of(paths: &[PathBuf]) -> Vec<iolab::file::BlockDevice> {
    use std::os::unix::fs::MetadataExt;
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for p in paths {
        let Ok(md) = std::fs::metadata(p) else {
            continue;
        };
        if seen.insert(md.dev()) {
            out.extend(iolab::file::block_device_of(p));
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out.dedup_by(|a, b| a.name == b.name);
    out
}

/// Longest wait for the devices to finish what the previous replay left
/// in flight (a whole file's read-ahead of a few hundred MiB takes well
/// under this).
const IDLE_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Puts `paths` in the cache state `cache` and returns the resident
/// fraction; first waits until `devices` have nothing in flight.
fn set_cache(
    paths: &[PathBuf],
    sizes: &[u64],
    cache: Cache,
    devices: &[iolab::file::BlockDevice],
) -> Result<f64, TraceError> {
    iolab::file::wait_idle(devices, IDLE_WAIT);
    let (mut r, mut t) = (0u64, 0u64);
    for (p, &len) in paths.iter().zip(sizes) {
        let e = |e: iolab::Error| TraceError::Failed(format!("{}: {e}", p.display()));
        match cache {
            Cache::Cold => iolab::cache::evict(p).map_err(e)?,
            Cache::Warm => iolab::cache::warm(p, len).map_err(e)?,
            // As the replay before left it.
            Cache::Rerun => {}
        }
        if len > 0 {
            let x = iolab::cache::residency(p, len).map_err(e)?;
            r += x.resident_pages;
            t += x.total_pages;
        }
    }
    Ok(if t == 0 { 1.0 } else { r as f64 / t as f64 })
}

/// What one replay of one reader gave: its summary, latency, request
/// count and the guard's switches in words.
type OneReplay = (RunSummary, hdrhistogram::Histogram<u64>, u64, Vec<String>);

/// One replay of `reader` from the asked cache state (None when stopped).
#[allow(clippy::too_many_arguments)]
fn one_replay(
    plan: &Plan,
    paths: &[PathBuf],
    sizes: &[u64],
    patterns: &[Option<Pattern>],
    reader: &dyn ReplayReader,
    opts: SessionOpts,
    stop: &AtomicBool,
    round: usize,
    devices: &[iolab::file::BlockDevice],
) -> Result<Option<OneReplay>, TraceError> {
    let want = plan.bytes();
    if opts.cache == Cache::Rerun {
        // The program's first run, from a cold cache, untimed.
        set_cache(paths, sizes, Cache::Cold, devices)?;
        let first = run(plan, paths, &PreadReader, Timing::Asap, None, stop)?;
        if first.interrupted {
            return Ok(None);
        }
    }
    let resident_before = set_cache(paths, sizes, opts.cache, devices)?;
    // Only this replay's switches are counted.
    iolab_reader::guard::take_switches();
    let verify = opts.verify.then_some(patterns);
    let r = run(plan, paths, reader, opts.timing, verify, stop)?;
    if r.interrupted {
        return Ok(None);
    }
    if r.bytes != want {
        return Err(TraceError::Failed(format!(
            "{} read {} bytes, the trace names {}",
            reader.name(),
            r.bytes,
            want
        )));
    }
    let (sw, more) = iolab_reader::guard::take_switches();
    let words = sw
        .iter()
        .take(SWITCHES_SHOWN)
        .map(|s| s.to_string())
        .collect();
    let summary = RunSummary {
        round,
        wall_ns: r.wall_ns,
        bytes: r.bytes,
        user_ns: r.usage.user_ns,
        sys_ns: r.usage.sys_ns,
        resident_before,
        // Falls back only: a trial that took the technique back is not one.
        fell_back: sw.iter().filter(|s| !s.back).count() as u64 + more,
    };
    Ok(Some((summary, r.latency, r.requests, words)))
}

/// Runs every reader on `plan`; `progress` is told each (reader, round)
/// before it runs.
#[allow(clippy::too_many_arguments)]
pub fn compare(
    plan: &Plan,
    paths: &[PathBuf],
    sizes: &[u64],
    patterns: &[Option<Pattern>],
    readers: &[Box<dyn ReplayReader>],
    opts: SessionOpts,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(&str, usize),
) -> Result<Vec<ReaderResult>, TraceError> {
    let n = readers.len();
    let mut runs: Vec<Vec<RunSummary>> = vec![Vec::new(); n];
    let mut hists: Vec<_> = (0..n).map(|_| new_histogram()).collect();
    let mut requests = vec![0u64; n];
    let mut switches: Vec<Vec<String>> = vec![Vec::new(); n];
    let devices = devices_of(paths);
    'rounds: for round in 0..opts.repeat.max(1) {
        for k in 0..n {
            let i = (round + k) % n;
            if stop.load(std::sync::atomic::Ordering::Relaxed) {
                break 'rounds;
            }
            progress(&readers[i].name(), round);
            let reader = readers[i].as_ref();
            let Some((summary, latency, reqs, words)) = one_replay(
                plan, paths, sizes, patterns, reader, opts, stop, round, &devices,
            )?
            else {
                break 'rounds;
            };
            hists[i].add(&latency).expect("same bounds");
            requests[i] = reqs;
            if !words.is_empty() {
                switches[i] = words;
            }
            runs[i].push(summary);
        }
    }
    let want = plan.bytes();
    let out: Vec<ReaderResult> = (0..n)
        .filter(|&i| !runs[i].is_empty())
        .map(|i| ReaderResult {
            switches: std::mem::take(&mut switches[i]),
            ..summarize(readers[i].name(), &runs[i], want, requests[i], &hists[i])
        })
        .collect();
    Ok(ranked(out))
}

/// One reader's rounds as a result: the median time, its throughput over
/// the trace's bytes, latency and CPU (relative and winner set later).
fn summarize(
    reader: String,
    runs: &[RunSummary],
    want: u64,
    requests: u64,
    hist: &hdrhistogram::Histogram<u64>,
) -> ReaderResult {
    let times: Vec<f64> = runs.iter().map(|r| r.wall_ns as f64).collect();
    let cpu: Vec<f64> = runs
        .iter()
        .map(|r| (r.user_ns + r.sys_ns) as f64 / r.wall_ns.max(1) as f64 * 100.0)
        .collect();
    let m = median(&times);
    ReaderResult {
        reader,
        runs: runs.to_vec(),
        median_ns: m,
        bytes: want,
        requests,
        mib_per_s: want as f64 / (m / 1e9).max(1e-12) / (1u64 << 20) as f64,
        latency: LatencySummary::of(hist),
        cpu_percent: median(&cpu),
        relative: 1.0,
        winner: false,
        switches: Vec::new(),
    }
}

/// Each result's time over the fastest median; the first fastest wins.
fn ranked(mut out: Vec<ReaderResult>) -> Vec<ReaderResult> {
    let best = out
        .iter()
        .map(|r| r.median_ns)
        .fold(f64::INFINITY, f64::min);
    let mut won = false;
    for r in &mut out {
        r.relative = r.median_ns / best.max(1.0);
        if !won && r.median_ns == best {
            r.winner = true;
            won = true;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::{plan, PreadReader, Threads};
    use crate::{parse, place::place};

    /// `t` placed in a fresh directory and replayed by each of `readers`
    /// `repeat` times, cold, as fast as it goes, every byte checked.
    fn compare_cold(
        t: &crate::Trace,
        readers: &[Box<dyn ReplayReader>],
        repeat: usize,
        progress: &mut dyn FnMut(&str, usize),
    ) -> Vec<ReaderResult> {
        let d = tempfile::tempdir().unwrap();
        let stop = AtomicBool::new(false);
        let p = place(t, d.path(), &stop, &mut |_, _| {}).unwrap();
        let pl = plan(t, Threads::Recorded, None);
        let opts = SessionOpts {
            repeat,
            cache: Cache::Cold,
            timing: Timing::Asap,
            verify: true,
        };
        let (paths, sizes, patterns) = (&p.paths, &p.sizes, &p.patterns);
        compare(&pl, paths, sizes, patterns, readers, opts, &stop, progress).unwrap()
    }

    #[test]
    fn every_reader_reads_the_same_total_in_rotating_order() {
        let t = parse(
            "file,offset,len\na,0,65536\na,65536,65536\nb,0,4096\n",
            "t",
            None,
        )
        .unwrap();
        let readers: Vec<Box<dyn ReplayReader>> =
            vec![Box::new(PreadReader), Box::new(PreadReader)];
        let mut order = Vec::new();
        let r = compare_cold(&t, &readers, 3, &mut |_, round| order.push(round));
        assert_eq!(order, vec![0, 0, 1, 1, 2, 2]);
        assert_eq!(r.len(), 2);
        assert_eq!(
            r[0].runs.iter().map(|x| x.round).collect::<Vec<_>>(),
            vec![0, 1, 2]
        );
        assert!(r
            .iter()
            .all(|x| x.bytes == 65536 * 2 + 4096 && x.runs.len() == 3));
        assert_eq!(r.iter().filter(|x| x.winner).count(), 1);
        assert!(r.iter().all(|x| x.relative >= 1.0));
    }

    #[test]
    fn a_replay_records_where_autos_guard_fell_back() {
        // Runs of three 2 KiB reads, each run in a 4 MiB block of its own:
        // the built-in profile's block cache reads the whole block for the
        // third (tiny, sequential) read of each run, and loses to pread.
        let mut csv = String::from("file,offset,len\n");
        for run in 0..64u64 {
            for k in 0..3u64 {
                csv.push_str(&format!("runs,{},2048\n", run * (4 << 20) + k * 2048));
            }
        }
        let t = parse(&csv, "t", None).unwrap();
        let readers: Vec<Box<dyn ReplayReader>> = vec![
            Box::new(crate::readers::TechniqueReader::auto_builtin()),
            Box::new(PreadReader),
        ];
        let r = compare_cold(&t, &readers, 1, &mut |_, _| {});
        let auto = r.iter().find(|x| x.reader == "auto:builtin").unwrap();
        assert_eq!(auto.runs[0].fell_back, 1, "{auto:?}");
        assert!(
            auto.switches[0].contains("pread from request"),
            "{:?}",
            auto.switches
        );
        let pread = r.iter().find(|x| x.reader == "pread").unwrap();
        assert_eq!(pread.runs[0].fell_back, 0);
        assert!(pread.switches.is_empty());
    }
}
