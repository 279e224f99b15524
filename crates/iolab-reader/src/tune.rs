//! `iolab tune`: measure this machine's ways of reading (techniques ×
//! request size × depth × threads, sequential and random, cold and warm),
//! keep the Pareto front (throughput up, p99.9 latency and CPU down) and
//! reduce it to a [`Profile`] that `Auto` decides with.

use crate::profile::{Machine, Measurement, Profile};
use crate::{Options, ReadReq, Reader, Technique, WholePlan};
use iolab::buf::{CopyOffset, COPY_OFFSETS};
use iolab::usage::Usage;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod run;
pub use run::{run, Step};

/// One configuration to measure.
#[derive(Clone, Debug)]
pub struct Case {
    /// "seq" or "rand".
    pub pattern: &'static str,
    /// "cold" or "warm".
    pub cache: &'static str,
    /// The technique (ignored for whole-file cases).
    pub technique: Technique,
    /// Request size.
    pub block: usize,
    /// Requests per batch (`read_many`) per thread; 1 = `read_at`.
    pub depth: u32,
    /// Threads.
    pub threads: usize,
    /// A whole-file read with this plan instead of `Reader` requests.
    pub whole: Option<WholePlan>,
}

impl Case {
    /// A short label.
    pub fn label(&self) -> String {
        match &self.whole {
            Some(p) => format!(
                "{} {} whole {} {}x{}",
                self.pattern,
                self.cache,
                match p.direct {
                    Some(true) => "direct",
                    Some(false) => "buffered",
                    None => "auto",
                },
                size(if self.cache == "warm" {
                    p.warm_chunk
                } else {
                    p.chunk
                }),
                p.depth
            ),
            None => format!(
                "{} {} {} {} depth {} threads {}",
                self.pattern,
                self.cache,
                self.technique,
                size(self.block),
                self.depth,
                self.threads
            ),
        }
    }

    fn technique_name(&self) -> String {
        match &self.whole {
            Some(p) => format!(
                "whole:{}",
                if p.direct == Some(true) {
                    "direct"
                } else {
                    "buffered"
                }
            ),
            None => self.technique.to_string(),
        }
    }
}

fn size(n: usize) -> String {
    if n >= 1 << 20 {
        format!("{}m", n >> 20)
    } else {
        format!("{}k", n >> 10)
    }
}

fn whole(direct: bool, chunk: usize, depth: u32) -> Option<WholePlan> {
    Some(WholePlan {
        chunk,
        depth,
        direct: Some(direct),
        ordered: false,
        warm_chunk: chunk,
        warm_threads: 1,
        ..WholePlan::default()
    })
}

/// Where the copy out of the cached `path` (the tune file) lands fastest:
/// [`iolab::buf::copy_offset_rates`] over its first 64 MiB in 1 MiB pieces.
pub fn measure_warm_offset(path: &Path, len: u64, rounds: usize) -> std::io::Result<CopyOffset> {
    let f = std::fs::File::open(path)?;
    iolab::buf::copy_offset_rates(&f, len.min(64 << 20), 1 << 20, rounds)
}

/// The configurations `iolab tune` measures (`quick`: fewer).
// Long on purpose: the table of configurations `iolab tune` measures.
pub fn cases(quick: bool) -> Vec<Case> {
    let c = |pattern, cache, technique, block, depth, threads| Case {
        pattern,
        cache,
        technique,
        block,
        depth,
        threads,
        whole: None,
    };
    let w = |cache, direct, chunk, depth| Case {
        pattern: "seq",
        cache,
        technique: Technique::Stream,
        block: chunk,
        depth,
        threads: 1,
        whole: whole(direct, chunk, depth),
    };
    let k = 1usize << 10;
    let m = 1usize << 20;
    let mut v = vec![
        w("cold", true, m, 8),
        w("cold", true, 4 * m, 4),
        w("cold", false, m, 8),
        c("seq", "cold", Technique::Stream, m, 1, 1),
        c("seq", "cold", Technique::Stream, m, 1, 2),
        c("seq", "cold", Technique::Uring { depth: 8 }, 4 * m, 1, 1),
        c("seq", "cold", Technique::Mapped, m, 1, 1),
        w("warm", false, 128 * k, 1),
        w("warm", false, m, 1),
        c("seq", "warm", Technique::Stream, 128 * k, 1, 1),
        c("seq", "warm", Technique::Mapped, m, 1, 1),
        c("rand", "cold", Technique::Stream, 4 * k, 1, 1),
        c("rand", "cold", Technique::Stream, 4 * k, 1, 2),
        c("rand", "cold", Technique::Mapped, 4 * k, 1, 1),
        c("rand", "cold", Technique::Direct, 4 * k, 1, 1),
        c("rand", "cold", Technique::Stream, 32 * k, 1, 1),
        c("rand", "cold", Technique::Direct, 32 * k, 1, 1),
        c("rand", "cold", Technique::Stream, 128 * k, 1, 1),
        c("rand", "cold", Technique::Direct, 128 * k, 1, 1),
        c("rand", "cold", Technique::Uring { depth: 8 }, 4 * k, 8, 1),
        c("rand", "cold", Technique::Uring { depth: 32 }, 4 * k, 32, 1),
        c("rand", "warm", Technique::Stream, 4 * k, 1, 1),
        c("rand", "warm", Technique::Mapped, 4 * k, 1, 1),
        c("rand", "warm", Technique::Stream, 32 * k, 1, 1),
        c("rand", "warm", Technique::Mapped, 32 * k, 1, 1),
        c("rand", "warm", Technique::Stream, 128 * k, 1, 1),
        c("rand", "warm", Technique::Mapped, 128 * k, 1, 1),
    ];
    if !quick {
        v.extend([
            w("cold", true, 2 * m, 16),
            w("cold", true, m, 16),
            c("seq", "cold", Technique::Stream, 4 * m, 1, 4),
            c(
                "seq",
                "cold",
                Technique::Buffered { block: 4 * m },
                64 * k,
                1,
                1,
            ),
            c("seq", "cold", Technique::Direct, 4 * m, 1, 1),
            w("warm", false, 512 * k, 1),
            c("rand", "cold", Technique::Stream, 4 * k, 1, 4),
            c("rand", "cold", Technique::Uring { depth: 64 }, 4 * k, 64, 1),
            c(
                "rand",
                "cold",
                Technique::Uring { depth: 128 },
                4 * k,
                128,
                1,
            ),
            c(
                "rand",
                "cold",
                Technique::Uring { depth: 32 },
                64 * k,
                32,
                1,
            ),
            c("rand", "cold", Technique::Stream, 64 * k, 1, 1),
            c("rand", "warm", Technique::Stream, 4 * k, 1, 2),
            c("rand", "warm", Technique::Mapped, 4 * k, 1, 2),
            c("rand", "warm", Technique::Uring { depth: 8 }, 4 * k, 8, 1),
        ]);
    }
    v
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn hist() -> hdrhistogram::Histogram<u64> {
    hdrhistogram::Histogram::new_with_bounds(1, 600_000_000_000, 3).expect("valid bounds")
}

/// Measures one case on `path` (of `len` bytes) for about `budget`.
pub fn measure(
    path: &Path,
    len: u64,
    case: &Case,
    budget: Duration,
    stop: &AtomicBool,
) -> Result<Measurement, String> {
    if case.cache == "cold" {
        iolab::cache::evict(path).map_err(|e| e.to_string())?;
    }
    let u0 = Usage::now();
    let t0 = Instant::now();
    let mut h = hist();
    let bytes = if let Some(plan) = &case.whole {
        read_whole_timed(path, plan, budget, t0, stop, &mut h)?
    } else {
        read_requests_timed(path, len, case, budget, t0, stop, &mut h)?
    };
    let secs = t0.elapsed().as_secs_f64().max(1e-9);
    let u = Usage::now().since(&u0);
    Ok(measurement(case, bytes, &h, secs, &u))
}

/// Reads the whole file as `plan` says until `budget` from `t0` is spent,
/// recording the time between chunks into `h`; the bytes read.
fn read_whole_timed(
    path: &Path,
    plan: &WholePlan,
    budget: Duration,
    t0: Instant,
    stop: &AtomicBool,
    h: &mut hdrhistogram::Histogram<u64>,
) -> Result<u64, String> {
    let mut bytes = 0u64;
    let mut last = Instant::now();
    crate::read_whole_with(path, plan, &mut |_, b| {
        let now = Instant::now();
        let _ = h.record(now.duration_since(last).as_nanos().max(1) as u64);
        last = now;
        bytes += b.len() as u64;
        t0.elapsed() < budget && !stop.load(Ordering::Relaxed)
    })
    .map_err(|e| e.to_string())?;
    Ok(bytes)
}

/// Reads with the case's technique, request size, depth and threads until
/// `budget` from `t0` is spent, adding each thread's latencies into `h`;
/// the bytes read.
fn read_requests_timed(
    path: &Path,
    len: u64,
    case: &Case,
    budget: Duration,
    t0: Instant,
    stop: &AtomicBool,
    h: &mut hdrhistogram::Histogram<u64>,
) -> Result<u64, String> {
    let mut bytes = 0u64;
    let opts = Options::new(case.technique)
        .profile(Arc::new(Profile::thesis_defaults()))
        .hints(crate::Hints {
            random: case.pattern == "rand",
            expected_fraction: 1.0,
        });
    let r = Reader::open(path, opts).map_err(|e| e.to_string())?;
    let results: Vec<(u64, hdrhistogram::Histogram<u64>)> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..case.threads)
            .map(|k| {
                let r = &r;
                s.spawn(move || worker(r, len, case, k, budget, t0, stop))
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().unwrap_or((0, hist())))
            .collect()
    });
    for (b, hh) in results {
        bytes += b;
        let _ = h.add(&hh);
    }
    Ok(bytes)
}

/// The case's figures: throughput over `secs`, p99.9 of `h`, and CPU time
/// (`u`) per GiB.
fn measurement(
    case: &Case,
    bytes: u64,
    h: &hdrhistogram::Histogram<u64>,
    secs: f64,
    u: &Usage,
) -> Measurement {
    let gib = bytes as f64 / (1u64 << 30) as f64;
    Measurement {
        pattern: case.pattern.into(),
        cache: case.cache.into(),
        technique: case.technique_name(),
        block: if let Some(p) = &case.whole {
            if case.cache == "warm" {
                p.warm_chunk
            } else {
                p.chunk
            }
        } else {
            case.block
        },
        depth: case.whole.as_ref().map_or(case.depth, |p| p.depth),
        threads: case.threads,
        mib_s: bytes as f64 / secs / (1 << 20) as f64,
        p999_us: h.value_at_quantile(0.999) as f64 / 1000.0,
        cpu_ms_per_gib: if gib > 0.0 {
            (u.user_ns + u.sys_ns) as f64 / 1e6 / gib
        } else {
            0.0
        },
        pareto: false,
    }
}

fn worker(
    r: &Reader,
    len: u64,
    case: &Case,
    k: usize,
    budget: Duration,
    t0: Instant,
    stop: &AtomicBool,
) -> (u64, hdrhistogram::Histogram<u64>) {
    let mut h = hist();
    let mut bytes = 0u64;
    let bs = case.block as u64;
    let depth = case.depth.max(1) as usize;
    let mut bufs: Vec<Vec<u8>> = (0..depth).map(|_| vec![0u8; case.block]).collect();
    let blocks = (len / bs).max(1);
    let per = (blocks / case.threads as u64).max(1);
    let mut next = k as u64 * per;
    let end = (next + per).min(blocks);
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ ((k as u64 + 1) * 0x1234_5677));
    let cap = cold_random_cap(case, len);
    while t0.elapsed() < budget && !stop.load(Ordering::Relaxed) && bytes < cap {
        let mut offs = Vec::with_capacity(depth);
        for _ in 0..depth {
            if case.pattern == "seq" {
                if next >= end {
                    break;
                }
                offs.push(next * bs);
                next += 1;
            } else {
                offs.push(rng.next() % blocks * bs);
            }
        }
        if offs.is_empty() {
            break;
        }
        let t = Instant::now();
        if depth == 1 {
            match r.read_at(offs[0], &mut bufs[0]) {
                Ok(n) => bytes += n as u64,
                Err(_) => break,
            }
        } else {
            let mut reqs = ReadReq::batch(&offs, &mut bufs);
            r.read_many(&mut reqs);
            for q in &reqs {
                if let Some(Ok(n)) = q.result {
                    bytes += n as u64;
                }
            }
        }
        let _ = h.record(t.elapsed().as_nanos().max(1) as u64);
    }
    (bytes, h)
}

/// Bytes a thread of `case` reads at most: random reads of cold data
/// larger than a page stop at a sixteenth of the file (per thread).
/// Without the cap, the kernel's read-ahead around each 32 KiB `pread`
/// cached the 256 MiB test file within a tenth of the budget, and what
/// was measured as cold ran at 4.4 GB/s, copies out of the page cache.
fn cold_random_cap(case: &Case, len: u64) -> u64 {
    if case.pattern == "rand" && case.cache == "cold" && case.block > 4096 {
        (len / 16 / case.threads.max(1) as u64).max(case.block as u64)
    } else {
        u64::MAX
    }
}

/// Marks the Pareto front within each (pattern, cache) group: no other
/// measurement of the group is at least as good on all three of
/// throughput, p99.9 and CPU, and better on one.
pub fn mark_pareto(ms: &mut [Measurement]) {
    let n = ms.len();
    for i in 0..n {
        let a = &ms[i];
        let dominated = (0..n).any(|j| {
            let b = &ms[j];
            j != i
                && b.pattern == a.pattern
                && b.cache == a.cache
                && b.mib_s >= a.mib_s
                && b.p999_us <= a.p999_us
                && b.cpu_ms_per_gib <= a.cpu_ms_per_gib
                && (b.mib_s > a.mib_s
                    || b.p999_us < a.p999_us
                    || b.cpu_ms_per_gib < a.cpu_ms_per_gib)
        });
        ms[i].pareto = !dominated;
    }
}

fn best(ms: &[Measurement], f: impl Fn(&Measurement) -> bool) -> Option<&Measurement> {
    ms.iter()
        .filter(|m| f(m))
        .max_by(|a, b| a.mib_s.total_cmp(&b.mib_s))
}

/// The best measurement of random reads of `bs` bytes, one thread, with
/// `technique` and the page cache `cache` ("cold" or "warm").
fn random_one_thread<'a>(
    ms: &'a [Measurement],
    cache: &str,
    bs: usize,
    technique: &str,
) -> Option<&'a Measurement> {
    best(ms, |m| {
        m.pattern == "rand"
            && m.cache == cache
            && m.block == bs
            && m.technique == technique
            && m.threads == 1
    })
}

/// Reduces measurements to a profile (pure: unit-testable).
pub fn derive(
    ms: &[Measurement],
    warm_offset: Option<CopyOffset>,
    machine: Machine,
    device: Option<String>,
    now_unix: u64,
) -> Profile {
    let mut p = Profile::thesis_defaults();
    p.source = "iolab tune".into();
    p.machine = machine;
    p.device = device;
    p.created_unix = now_unix;
    p.fit_fraction = 0.5;
    let mut rec = Vec::new();
    derive_whole(ms, &mut p, &mut rec);
    if let Some(o) = warm_offset {
        p.whole.warm_offset = Some(o.offset);
        rec.push(format!(
            "Copies out of the page cache land fastest {} B past a page here ({:.0} MiB/s at +{} B, {:.0} at +{} B).",
            o.offset, o.mib_s[0], COPY_OFFSETS[0], o.mib_s[1], COPY_OFFSETS[1]
        ));
    }
    derive_random_cold(ms, &mut p, &mut rec);
    derive_random_warm(ms, &mut p, &mut rec);
    p.recommendations = rec;
    p.measurements = ms.to_vec();
    p
}

/// Whole files and large reads: cold (direct or not, pieces, depth) and
/// warm (piece size).
fn derive_whole(ms: &[Measurement], p: &mut Profile, rec: &mut Vec<String>) {
    if let Some(b) = best(ms, |m| m.pattern == "seq" && m.cache == "cold") {
        let direct = b.technique == "whole:direct" || b.technique == "direct";
        p.whole.direct_cold = direct;
        p.seq_direct = direct;
        if b.technique.starts_with("whole:") {
            p.whole.block = b.block;
            p.whole.depth = b.depth;
            p.seq_depth = b.depth.max(1);
            p.seq_block = b.block;
        }
        rec.push(format!(
            "Large reads of files not in memory: {} ({}-byte pieces, {} in flight) at {:.0} MiB/s.",
            if direct {
                "O_DIRECT, bypassing the page cache"
            } else {
                "through the page cache"
            },
            b.block,
            b.depth,
            b.mib_s
        ));
    }
    if let Some(b) = best(ms, |m| {
        m.pattern == "seq" && m.cache == "warm" && m.technique.starts_with("whole:")
    }) {
        p.whole.warm_block = b.block;
        rec.push(format!(
            "Files already in memory: copy them out in {}-byte pieces ({:.0} MiB/s).",
            b.block, b.mib_s
        ));
    }
}

/// The smallest [`Profile::cold_small_max`] a measurement may set: one
/// O_DIRECT read of 32 KiB beat one `pread` of cold data on the corpus's
/// machine (633 and 496 MiB/s against 450 and 484 in two runs of
/// `iolab tune --quick`), but sending uncached random reads of
/// 16 KiB and more to O_DIRECT made the train half slower (Python's
/// start-up 1.10 times the best fixed reader against 1.01, the image
/// loader 1.02 against 0.99): a `pread` also reads ahead for the reads
/// after it, which one read at a time does not measure.
const COLD_SMALL_FLOOR: usize = 32 << 10;

/// Small random reads of data not cached: io_uring's depth, and whether
/// the mapping's read-around beats one pread at a time.
fn derive_random_cold(ms: &[Measurement], p: &mut Profile, rec: &mut Vec<String>) {
    let cold4k = |m: &Measurement| m.pattern == "rand" && m.cache == "cold" && m.block == 4096;
    let qd1 = best(ms, |m| {
        cold4k(m) && m.technique == "stream" && m.threads == 1
    });
    let mapped_cold = best(ms, |m| cold4k(m) && m.technique == "mapped");
    if let Some(b) = best(ms, |m| cold4k(m) && m.technique.starts_with("uring")) {
        p.random_depth = b.depth;
        rec.push(format!(
            "Batches of small random reads of data not cached: io_uring with {} in flight ({:.0} MiB/s{}).",
            b.depth,
            b.mib_s,
            qd1.map_or(String::new(), |q| format!(", {:.1}x one pread at a time", b.mib_s / q.mib_s.max(1e-9)))
        ));
    }
    // Up to which size one pread of cold data keeps up with one O_DIRECT
    // read, never below the built-in bound (see `COLD_SMALL_FLOOR`).
    let one = |bs: usize, t: &str| random_one_thread(ms, "cold", bs, t);
    let mut measured = 4096;
    for bs in [32usize << 10, 128 << 10] {
        match (one(bs, "stream"), one(bs, "direct")) {
            (Some(s), Some(d)) if s.mib_s >= d.mib_s => measured = bs,
            (Some(_), Some(_)) => break,
            _ => {}
        }
    }
    if one(32 << 10, "direct").is_some() {
        p.cold_small_max = measured.max(COLD_SMALL_FLOOR);
        rec.push(format!(
            "Random reads of data not cached: one pread keeps up with one O_DIRECT read up to {measured} bytes; reads up to {} bytes stay preads, larger ones go O_DIRECT.",
            p.cold_small_max
        ));
    }
    p.mmap_small_cold = match (mapped_cold, qd1) {
        (Some(m), Some(q)) => m.mib_s > q.mib_s,
        _ => false,
    };
    rec.push(if p.mmap_small_cold {
        "Small random reads of data not cached: the mapping's read-around (a page fault reads the pages around it too) pays off here.".to_string()
    } else {
        "Small random reads of data not cached: pread, not the mapping (a page fault reads the pages around it too, more than asked).".to_string()
    });
}

/// Small random reads of cached data: up to which size copying from a
/// mapping beats a pread, one thread.
fn derive_random_warm(ms: &[Measurement], p: &mut Profile, rec: &mut Vec<String>) {
    let mut small_max = 0;
    for bs in [4096usize, 32 << 10, 128 << 10] {
        let one = |t: &str| random_one_thread(ms, "warm", bs, t);
        if let (Some(s), Some(mm)) = (one("stream"), one("mapped")) {
            if mm.mib_s >= s.mib_s {
                small_max = bs;
            }
        }
    }
    p.mmap_small_warm = small_max > 0;
    if small_max > 0 {
        p.small_max = small_max;
        rec.push(format!(
            "Random reads of cached data up to {} bytes: copy from a memory mapping (beats a system call).",
            small_max
        ));
    } else {
        rec.push("Random reads of cached data: pread (the mapping did not win here).".into());
    }
}

/// Creates the tuning file, or reuses one already there of the right size.
pub fn tune_file_len(quick: bool) -> u64 {
    if quick {
        256 << 20
    } else {
        1 << 30
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(
        pattern: &str,
        cache: &str,
        technique: &str,
        block: usize,
        depth: u32,
        mib_s: f64,
    ) -> Measurement {
        Measurement {
            pattern: pattern.into(),
            cache: cache.into(),
            technique: technique.into(),
            block,
            depth,
            threads: 1,
            mib_s,
            p999_us: 100.0,
            cpu_ms_per_gib: 100.0,
            pareto: false,
        }
    }

    #[test]
    fn derive_picks_the_winners() {
        let ms = vec![
            m("seq", "cold", "whole:direct", 1 << 20, 8, 900.0),
            m("seq", "cold", "whole:buffered", 1 << 20, 8, 500.0),
            m("seq", "cold", "stream", 1 << 20, 1, 300.0),
            m("seq", "warm", "whole:buffered", 128 << 10, 1, 3000.0),
            m("rand", "cold", "stream", 4096, 1, 20.0),
            m("rand", "cold", "mapped", 4096, 1, 10.0),
            m("rand", "cold", "uring:32", 4096, 32, 120.0),
            m("rand", "cold", "uring:8", 4096, 8, 80.0),
            m("rand", "warm", "stream", 4096, 1, 900.0),
            m("rand", "warm", "mapped", 4096, 1, 1500.0),
            m("rand", "warm", "stream", 32 << 10, 1, 2500.0),
            m("rand", "warm", "mapped", 32 << 10, 1, 2000.0),
        ];
        let p = derive(&ms, None, Machine::default(), Some("vda".into()), 1);
        // Without a measured offset: measured when first needed.
        assert_eq!(p.whole.warm_offset, None);
        let fast0 = CopyOffset {
            offset: 0,
            mib_s: [25_000.0, 21_000.0],
        };
        let q = derive(&ms, Some(fast0), Machine::default(), None, 1);
        assert_eq!(q.whole.warm_offset, Some(0));
        assert!(
            q.recommendations
                .iter()
                .any(|r| r.contains("0 B past a page")),
            "{:?}",
            q.recommendations
        );
        assert!(p.whole.direct_cold && p.seq_direct);
        assert_eq!((p.whole.block, p.whole.depth), (1 << 20, 8));
        assert_eq!(p.whole.warm_block, 128 << 10);
        assert_eq!(p.random_depth, 32);
        assert!(!p.mmap_small_cold);
        assert!(p.mmap_small_warm);
        assert_eq!(p.small_max, 4096);
        assert_eq!(p.device.as_deref(), Some("vda"));
        assert!(p.recommendations.len() >= 4);
        // No cold read larger than 4 KiB measured: the built-in bound.
        assert_eq!(p.cold_small_max, 32 << 10);
    }

    #[test]
    fn cold_reads_are_small_up_to_where_one_pread_keeps_up_with_o_direct_not_below_the_floor() {
        let cold = |s32: f64, d32: f64, s128: f64, d128: f64| {
            let ms = vec![
                m("rand", "cold", "stream", 4096, 1, 20.0),
                m("rand", "cold", "direct", 4096, 1, 25.0),
                m("rand", "cold", "stream", 32 << 10, 1, s32),
                m("rand", "cold", "direct", 32 << 10, 1, d32),
                m("rand", "cold", "stream", 128 << 10, 1, s128),
                m("rand", "cold", "direct", 128 << 10, 1, d128),
            ];
            derive(&ms, None, Machine::default(), None, 1).cold_small_max
        };
        // O_DIRECT ahead from 32 KiB: the floor (a pread's read-ahead
        // serves the reads after it, which one read at a time misses).
        assert_eq!(cold(100.0, 150.0, 300.0, 500.0), COLD_SMALL_FLOOR);
        // pread keeps up at 32 KiB, not at 128 KiB.
        assert_eq!(cold(150.0, 140.0, 300.0, 500.0), 32 << 10);
        // pread keeps up at both.
        assert_eq!(cold(150.0, 140.0, 520.0, 500.0), 128 << 10);
        // A larger size does not count once a smaller one lost.
        assert_eq!(cold(100.0, 150.0, 520.0, 500.0), COLD_SMALL_FLOOR);
    }

    #[test]
    fn the_warm_offset_is_measured_on_a_real_cached_file() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        std::fs::write(&p, vec![7u8; 4 << 20]).unwrap();
        let o = measure_warm_offset(&p, 4 << 20, 3).unwrap();
        assert!(COPY_OFFSETS.contains(&o.offset), "{o:?}");
        assert!(o.mib_s.iter().all(|r| *r > 0.0), "{o:?}");
        // The one chosen is the one with the higher median.
        let i = COPY_OFFSETS.iter().position(|x| *x == o.offset).unwrap();
        assert!(o.mib_s[i] >= o.mib_s[1 - i], "{o:?}");
    }

    #[test]
    fn pareto_front_per_group() {
        let mut ms = vec![
            m("rand", "cold", "a", 4096, 1, 100.0),
            m("rand", "cold", "b", 4096, 1, 50.0), // dominated by a
            m("seq", "cold", "c", 4096, 1, 10.0),  // alone in its group
        ];
        ms[0].cpu_ms_per_gib = 50.0;
        mark_pareto(&mut ms);
        assert_eq!(
            ms.iter().map(|m| m.pareto).collect::<Vec<_>>(),
            [true, false, true]
        );
    }
}
