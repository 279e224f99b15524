//! Memory: load latency against working-set size (dependent loads around a
//! random cycle, one load per 64-byte line, so neither prefetchers nor
//! out-of-order execution can hide a miss), with the CPU's caches read from
//! sysfs and the plateaus named; and read, write and copy bandwidth for one
//! thread and for all threads.

use super::{keep, Config, Entry, Point, Result, Rng, Scale, Series};
use crate::result::{CacheLevel, Plateau};
use iolab::primitives as prim;
use iolab_bench::stats::Stats;
use std::sync::Barrier;

const KIB: u64 = 1024;
const MIB: u64 = 1024 * 1024;
const LINE: usize = 64;
const WORDS_PER_LINE: usize = LINE / 4;

/// Data and unified caches of CPU 0, from sysfs, by level.
pub fn cache_levels() -> Vec<CacheLevel> {
    let mut out = Vec::new();
    let base = std::path::Path::new("/sys/devices/system/cpu/cpu0/cache");
    let Ok(rd) = std::fs::read_dir(base) else {
        return out;
    };
    for d in rd.flatten() {
        if !d.file_name().to_string_lossy().starts_with("index") {
            continue;
        }
        let get = |f: &str| {
            std::fs::read_to_string(d.path().join(f))
                .map(|s| s.trim().to_string())
                .ok()
        };
        let (Some(level), Some(kind), Some(size)) = (get("level"), get("type"), get("size")) else {
            continue;
        };
        if kind == "Instruction" {
            continue;
        }
        let Some(size_bytes) = parse_size(&size) else {
            continue;
        };
        out.push(CacheLevel {
            level: level.parse().unwrap_or(0),
            kind,
            size_bytes,
        });
    }
    out.sort_by_key(|c| (c.level, c.size_bytes));
    out
}

/// "48K", "32768K", "1M", "123" to bytes.
fn parse_size(s: &str) -> Option<u64> {
    let (num, mul) = match s.chars().last()? {
        'K' | 'k' => (&s[..s.len() - 1], KIB),
        'M' | 'm' => (&s[..s.len() - 1], MIB),
        'G' | 'g' => (&s[..s.len() - 1], 1024 * MIB),
        _ => (s, 1),
    };
    num.trim().parse::<u64>().ok().map(|n| n * mul)
}

fn working_sets(scale: Scale, max: u64) -> Vec<u64> {
    let mut v = Vec::new();
    let mut s = KIB;
    while s <= max {
        v.push(s);
        match scale {
            Scale::Smoke => s *= 4,
            _ => {
                if s + s / 2 <= max && s >= 4 * KIB {
                    v.push(s + s / 2);
                }
                s *= 2;
            }
        }
    }
    if v.last() != Some(&max) {
        v.push(max);
    }
    v
}

/// Links the first `ws` bytes of `arr` into one random cycle over its lines.
fn build_cycle(arr: &mut [u32], ws: u64, rng: &mut Rng) {
    let lines = (ws as usize / LINE).max(1);
    let mut order: Vec<u32> = (0..lines as u32).collect();
    rng.shuffle(&mut order);
    for k in 0..lines {
        let from = order[k] as usize * WORDS_PER_LINE;
        let to = order[(k + 1) % lines] * WORDS_PER_LINE as u32;
        arr[from] = to;
    }
}

/// Links the first `ws` bytes of `arr` in address order, one load per
/// 64-byte line, the last back to the first: lmbench's `lat_mem_rd` order at
/// its default stride, which hardware prefetchers follow.
fn build_stride(arr: &mut [u32], ws: u64) {
    let lines = (ws as usize / LINE).max(1);
    for k in 0..lines {
        arr[k * WORDS_PER_LINE] = (((k + 1) % lines) * WORDS_PER_LINE) as u32;
    }
}

/// One series over `sizes`: the walk `build` lays out in `arr`, followed
/// `reps` times for about `target` ns each.
fn walk_series(
    cfg: &Config<'_>,
    arr: &mut [u32],
    sizes: &[u64],
    target: u64,
    mut build: impl FnMut(&mut [u32], u64),
) -> Result<Vec<Vec<f64>>> {
    let mut ys = Vec::with_capacity(sizes.len());
    for &ws in sizes {
        cfg.check_stop()?;
        build(arr, ws);
        ys.push((0..cfg.reps()).map(|_| chase(arr, target)).collect());
    }
    Ok(ys)
}

/// The plateau of each cache level and of RAM (the median latency over the
/// sizes inside each level's window), and the RAM plateau per repeat.
fn plateaus_of(
    caches: &[CacheLevel],
    sizes: &[u64],
    ys: &[Vec<f64>],
    reps: usize,
) -> (Vec<Plateau>, Vec<f64>) {
    let windows = plateau_windows(caches);
    let mut plateaus = Vec::new();
    let mut ram_per_rep: Vec<f64> = Vec::new();
    for (name, lo, hi) in &windows {
        let idx: Vec<usize> = (0..sizes.len())
            .filter(|&i| sizes[i] >= *lo && sizes[i] <= *hi)
            .collect();
        if idx.is_empty() {
            continue;
        }
        let mut med: Vec<f64> = idx.iter().map(|&i| Stats::of(&ys[i]).median).collect();
        let mut idx = idx;
        if name != "RAM" {
            // A cache's plateau is flat: it ends where the latency leaves
            // it (a VM or a shared cache may hold less than sysfs says).
            let keep = flat_prefix(&med);
            med.truncate(keep);
            idx.truncate(keep);
        }
        plateaus.push(Plateau {
            name: name.clone(),
            from_bytes: sizes[idx[0]],
            to_bytes: sizes[*idx.last().unwrap_or(&idx[0])],
            latency_ns: Stats::of(&med).median,
        });
        if name == "RAM" {
            ram_per_rep = (0..reps)
                .map(|r| Stats::of(&idx.iter().map(|&i| ys[i][r]).collect::<Vec<_>>()).median)
                .collect();
        }
    }
    (plateaus, ram_per_rep)
}

/// How many of `med` (latencies by growing size) form a plateau: each
/// within 1.5x of the lowest before it. At least one.
fn flat_prefix(med: &[f64]) -> usize {
    let mut low = f64::INFINITY;
    for (i, &m) in med.iter().enumerate() {
        if i > 0 && m > 1.5 * low {
            return i;
        }
        low = low.min(m);
    }
    med.len()
}

/// A latency series: the repeats' ns at each working-set size.
fn ns_by_size(name: &str, sizes: &[u64], ys: &[Vec<f64>]) -> Series {
    Series {
        name: name.into(),
        x_unit: "bytes".into(),
        y_unit: "ns".into(),
        points: sizes
            .iter()
            .zip(ys)
            .map(|(&x, v)| Point::of(x as f64, v))
            .collect(),
    }
}

/// Follows the cycle for about `target_ns` of this thread's CPU time;
/// returns ns per load. CPU time, not wall time: on a shared machine a walk
/// descheduled for most of its wall time measured 5-10x its latency.
fn chase(arr: &[u32], target_ns: u64) -> f64 {
    let mut p = 0u32;
    let mut loads = 0u64;
    let t = prim::thread_cpu_ns();
    loop {
        for _ in 0..4096 {
            p = arr[p as usize];
        }
        loads += 4096;
        let dt = prim::thread_cpu_ns() - t;
        if dt >= target_ns {
            keep(p);
            return dt as f64 / loads as f64;
        }
    }
}

fn plateau_windows(caches: &[CacheLevel]) -> Vec<(String, u64, u64)> {
    // One size per level: the largest data/unified cache of that level.
    let mut sizes: Vec<(u32, u64)> = Vec::new();
    for c in caches {
        match sizes.iter_mut().find(|(l, _)| *l == c.level) {
            Some(s) => s.1 = s.1.max(c.size_bytes),
            None => sizes.push((c.level, c.size_bytes)),
        }
    }
    let mut w = Vec::new();
    let mut lo = 0u64;
    for &(l, size) in &sizes {
        w.push((format!("L{l}"), lo, size / 2));
        lo = size * 2;
    }
    w.push(("RAM".to_string(), lo.max(2 * KIB), u64::MAX));
    w
}

/// Load latency against working-set size, 1 KiB up to 1 GiB (256 MiB with
/// `--quick`), at least 4x the largest cache.
pub fn latency(cfg: &Config<'_>) -> Result<Entry> {
    let caches = cache_levels();
    let max = largest_working_set(cfg, &caches);
    let walks = Walks::measure(cfg, max)?;
    let (plateaus, ram_per_rep) = plateaus_of(&caches, &walks.sizes, &walks.random, cfg.reps());
    let mut e = Entry::new(
        "mem_latency",
        "memory",
        format!(
            "dependent 4-byte loads around one random cycle over the 64-byte lines of a working set of 1 KiB..{} MiB (4 KiB pages, no huge pages); timed in the walking thread's CPU time; headline = RAM plateau",
            max / MIB
        ),
    );
    walks.describe(&mut e, ram_per_rep);
    e.cache_levels = caches;
    e.plateaus = plateaus;
    Ok(e)
}

/// The size of the largest of `caches`, bytes; 32 MiB where the machine
/// names none (a buffer past it is measured in memory, not in a cache).
fn largest_cache(caches: &[CacheLevel]) -> u64 {
    caches
        .iter()
        .map(|c| c.size_bytes)
        .max()
        .unwrap_or(32 * MIB)
}

/// The largest working set walked: the scale's, at least 4x the largest
/// cache, at most a quarter of the memory available (and 4 GiB).
fn largest_working_set(cfg: &Config<'_>, caches: &[CacheLevel]) -> u64 {
    let largest = largest_cache(caches);
    let want = cfg
        .scale
        .pick(128 * MIB, 256 * MIB, 1024 * MIB)
        .max((4 * largest).next_power_of_two());
    let mem_cap = super::meminfo_bytes("MemAvailable").unwrap_or(4096 * MIB) / 4;
    want.min(mem_cap.max(64 * MIB)).min(4096 * MIB)
}

/// The load-latency walks: ns per load by working-set size, one vector of
/// repetitions per size.
struct Walks {
    /// Working-set sizes of the random walk.
    sizes: Vec<u64>,
    /// The random cycle on 4 KiB pages, per size.
    random: Vec<Vec<f64>>,
    /// The pages the random and stride walks ran on.
    backing: iolab::mem::Backing,
    /// The sizes (up to 256 MiB) of the two comparison walks.
    small: Vec<u64>,
    /// lmbench's 64-byte stride, per small size.
    stride: Vec<Vec<f64>>,
    /// The random cycle on 2 MiB pages, per small size, with the pages it
    /// got (`None` without transparent huge pages).
    huge: Option<(Vec<Vec<f64>>, iolab::mem::Backing)>,
}

impl Walks {
    /// Walks working sets of 1 KiB up to `max` bytes.
    fn measure(cfg: &Config<'_>, max: u64) -> Result<Walks> {
        let sizes = working_sets(cfg.scale, max);
        let target = cfg.scale.pick(1_000_000, 4_000_000, 12_000_000);
        let mut arr = vec![0u32; (max as usize) / 4];
        let mut rng = Rng::new(0x10AD);
        let ys = walk_series(cfg, &mut arr, &sizes, target, |a, ws| {
            build_cycle(a, ws, &mut rng)
        })?;
        // What pages the walk ran on decides how many loads also miss the TLB:
        // record it rather than assume it.
        let backing = iolab::mem::Backing::measure(
            iolab::mem::MemKind::Malloc,
            arr.as_ptr() as usize,
            arr.len() * 4,
        );
        // lmbench's order on the same pages: what `lat_mem_rd LEN 64` measures.
        // These two comparison walks stop at 256 MiB: far past the TLB's reach,
        // and a 2 GiB cycle per series would double the measurement's time.
        let small: Vec<u64> = sizes.iter().copied().filter(|&s| s <= 256 * MIB).collect();
        let stride = walk_series(cfg, &mut arr, &small, target, build_stride)?;
        drop(arr);
        // The random cycle again on 2 MiB pages: the same cache misses without
        // most of the TLB misses (and, in a VM, the two-level page walks).
        let huge = random_on_huge_pages(cfg, max.min(256 * MIB), &small, target)?;
        Ok(Walks {
            sizes,
            random: ys,
            backing,
            small,
            stride,
            huge,
        })
    }

    /// The walks' notes, headline (`ram_per_rep`: the RAM plateau's ns per
    /// repetition) and series, into `e`.
    fn describe(self, e: &mut Entry, mut ram_per_rep: Vec<f64>) {
        let Walks {
            sizes,
            random: ys,
            backing,
            small,
            stride,
            huge,
        } = self;
        e.notes.push(format!(
            "walk buffer {}; with 4 KiB pages a working set beyond the second-level TLB's reach (a few MiB) adds a page walk to most loads, with 2 MiB pages not until hundreds of MiB",
            backing.describe()
        ));
        e.notes.push(compare_note(
            &sizes,
            &ys,
            &stride,
            huge.as_ref().map(|h| &h.0),
        ));
        if ram_per_rep.is_empty() {
            // Not enough range for a RAM plateau: report the largest size.
            ram_per_rep = ys.last().cloned().unwrap_or_default();
            e.notes.push(
                "no size beyond 2x the last cache; headline is the largest working set".into(),
            );
        }
        e.time_ns = Some(Stats::of(&ram_per_rep));
        e.series.push(ns_by_size("mem_latency", &sizes, &ys));
        e.series
            .push(ns_by_size("mem_latency.stride64", &small, &stride));
        if let Some((h, b)) = &huge {
            e.series
                .push(ns_by_size("mem_latency.random_huge", &small, h));
            e.notes
                .push(format!("random_huge walk buffer {}", b.describe()));
        }
    }
}

/// The random cycle over `sizes` in a buffer of 2 MiB transparent huge
/// pages, with the backing it got; `None` when THP is unavailable.
fn random_on_huge_pages(
    cfg: &Config<'_>,
    max: u64,
    sizes: &[u64],
    target: u64,
) -> Result<Option<(Vec<Vec<f64>>, iolab::mem::Backing)>> {
    let mem = iolab::mem::MemKind::Thp;
    let Ok(mut buf) = iolab::buf::AlignedBuf::with_mem(max as usize, 2 << 20, mem) else {
        return Ok(None);
    };
    let backing = buf.backing();
    let words: &mut [u32] = bytemuck::cast_slice_mut(&mut buf[..]);
    let mut rng = Rng::new(0x10AD);
    let ys = walk_series(cfg, words, sizes, target, |a, ws| {
        build_cycle(a, ws, &mut rng)
    })?;
    Ok(Some((ys, backing)))
}

/// Says, with this run's numbers at the size nearest 16 MiB, what each
/// walk measures, so a difference from lmbench is explained, not guessed.
fn compare_note(
    sizes: &[u64],
    random: &[Vec<f64>],
    stride: &[Vec<f64>],
    huge: Option<&Vec<Vec<f64>>>,
) -> String {
    let i = (0..sizes.len())
        .min_by_key(|&i| sizes[i].abs_diff(16 * MIB))
        .unwrap_or(0);
    let med = |ys: &[Vec<f64>]| ys.get(i).map_or(f64::NAN, |v| Stats::of(v).median);
    let huge = huge.map_or("n/a".to_string(), |h| format!("{:.1} ns", med(h)));
    format!(
        "what each walk measures, at {} MiB: random cycle on 4 KiB pages {:.1} ns (every load a cache miss and, past the TLB's reach, a page walk), random cycle on 2 MiB pages {huge} (the cache miss alone), stride 64 in address order on 4 KiB pages {:.1} ns (lmbench lat_mem_rd's default order: prefetchers hide most misses). Compare `lat_mem_rd LEN 64` with mem_latency.stride64 and `lat_mem_rd -t` with mem_latency",
        sizes.get(i).copied().unwrap_or(0) / MIB,
        med(random),
        med(stride),
    )
}

/// What each pass of a bandwidth measurement does to its buffer.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Sums the buffer's u64 words.
    Read,
    /// Fills the buffer (memset).
    Write,
    /// Copies the buffer into a second one (memcpy).
    Copy,
}

/// Memory bandwidth of `kind` passes over a buffer past the largest cache,
/// on one thread or (`all`) on every CPU at once: the entries `bw_read`,
/// `bw_write`, `bw_copy` and their `_all` forms.
pub fn bandwidth(cfg: &Config<'_>, kind: Kind, all: bool) -> Result<Entry> {
    let largest = largest_cache(&cache_levels());
    let bytes = cfg
        .scale
        .pick(64 * MIB, 128 * MIB, 256 * MIB)
        .max(4 * largest)
        .min(1024 * MIB) as usize;
    let threads = if all {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        1
    };
    let passes: usize = cfg.scale.pick(1, 2, 4);
    let words = bytes / 8;
    let mut bufs: Vec<(Vec<u64>, Vec<u64>)> = (0..threads)
        .map(|t| {
            let src = vec![t as u64 + 1; words];
            let dst = if kind == Kind::Copy {
                // Touched now, so the first pass does not pay page faults.
                vec![1u64; words]
            } else {
                Vec::new()
            };
            (src, dst)
        })
        .collect();
    let mut per_rep = Vec::new();
    for _ in 0..cfg.reps() {
        cfg.check_stop()?;
        let (start, end) = timed_passes(&mut bufs, kind, passes);
        let moved = (bytes * passes * threads) as f64;
        per_rep.push(moved / (MIB as f64) / ((end - start).max(1) as f64 / 1e9));
    }
    let (name, what) = bandwidth_names(kind, all);
    let mut e = Entry::new(
        name,
        "memory",
        format!(
            "{threads} thread(s), each {passes} pass(es) over its own {} MiB buffer: {what}; total bytes / wall time",
            bytes as u64 / MIB
        ),
    );
    e.bandwidth_mib_s = Some(Stats::of(&per_rep));
    Ok(e)
}

/// One thread per buffer pair, released together, each making `passes`
/// passes of `kind`; the earliest start and latest end, ns.
fn timed_passes(bufs: &mut [(Vec<u64>, Vec<u64>)], kind: Kind, passes: usize) -> (u64, u64) {
    let barrier = Barrier::new(bufs.len());
    let spans: Vec<(u64, u64)> = std::thread::scope(|s| {
        let hs: Vec<_> = bufs
            .iter_mut()
            .map(|(src, dst)| {
                let barrier = &barrier;
                s.spawn(move || {
                    barrier.wait();
                    let t0 = prim::monotonic_ns();
                    for p in 0..passes {
                        match kind {
                            Kind::Read => {
                                keep(src.iter().fold(0u64, |a, &x| a.wrapping_add(x)));
                            }
                            Kind::Write => src.fill(p as u64),
                            Kind::Copy => dst.copy_from_slice(src),
                        }
                        keep(&*src);
                        keep(&*dst);
                    }
                    (t0, prim::monotonic_ns())
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap_or((0, 1))).collect()
    });
    let start = spans.iter().map(|s| s.0).min().unwrap_or(0);
    let end = spans.iter().map(|s| s.1).max().unwrap_or(1);
    (start, end)
}

/// The entry's name and what its passes do.
fn bandwidth_names(kind: Kind, all: bool) -> (&'static str, &'static str) {
    const COPY: &str = "copy_from_slice (memcpy), bytes copied counted once";
    match (kind, all) {
        (Kind::Read, false) => ("bw_read", "sum of u64 words"),
        (Kind::Write, false) => ("bw_write", "fill (memset)"),
        (Kind::Copy, false) => ("bw_copy", COPY),
        (Kind::Read, true) => ("bw_read_all", "sum of u64 words"),
        (Kind::Write, true) => ("bw_write_all", "fill (memset)"),
        (Kind::Copy, true) => ("bw_copy_all", COPY),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plateau_ends_where_the_latency_leaves_it() {
        assert_eq!(flat_prefix(&[20.0, 21.0, 22.0, 97.0, 155.0]), 3);
        assert_eq!(flat_prefix(&[20.0, 25.0, 29.0]), 3);
        assert_eq!(flat_prefix(&[90.0]), 1);
    }

    #[test]
    fn sizes_parse_and_windows() {
        assert_eq!(parse_size("48K"), Some(48 * KIB));
        assert_eq!(parse_size("1M"), Some(MIB));
        let w = plateau_windows(&[
            CacheLevel {
                level: 1,
                kind: "Data".into(),
                size_bytes: 32 * KIB,
            },
            CacheLevel {
                level: 2,
                kind: "Unified".into(),
                size_bytes: MIB,
            },
        ]);
        assert_eq!(w[0], ("L1".into(), 0, 16 * KIB));
        assert_eq!(w[1], ("L2".into(), 64 * KIB, 512 * KIB));
        assert_eq!(w[2].0, "RAM");
        assert_eq!(w[2].1, 2 * MIB);
    }
}
