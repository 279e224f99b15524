//! File system: time per 4 KiB block read with O_DIRECT for files of 1 to
//! 65536 blocks, sequential and random; the same under contention from 1..N
//! processes each reading its own file; and the size of the file cache,
//! found as the knee where re-reading a file stops being served from
//! memory. A helper process locks a balloon of memory so the page cache
//! has only a few hundred MiB of room, which keeps the files small; it is
//! released when the measurement ends or iolab exits.

use super::{io_err, meminfo_bytes, temp_dir, Config, Entry, Point, Result, Rng, Series, SysError};
use iolab::buf::AlignedBuf;
use iolab::file::OpenSpec;
use iolab::primitives as prim;
use iolab_bench::stats::Stats;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::Path;

const BLOCK: u64 = 4096;
const MIB: u64 = 1 << 20;

fn write_file(path: &Path, len: u64, seed: u8) -> Result<()> {
    let mut f =
        std::fs::File::create(path).map_err(io_err(format!("create {}", path.display())))?;
    let chunk: Vec<u8> = (0..MIB).map(|i| (i % 253) as u8 ^ seed).collect();
    let mut left = len;
    while left > 0 {
        let n = left.min(MIB) as usize;
        f.write_all(&chunk[..n])
            .map_err(io_err(format!("write {}", path.display())))?;
        left -= n as u64;
    }
    f.sync_all()
        .map_err(io_err(format!("fsync {}", path.display())))
}

fn open_direct(path: &Path) -> Result<std::fs::File> {
    iolab::file::open(
        path,
        OpenSpec {
            direct: true,
            write: false,
        },
    )
    .map_err(|e| match e {
        iolab::Error::Unsupported { why, .. } => SysError::Unsupported(why),
        e => e.into(),
    })
}

fn read_blocks(f: &std::fs::File, buf: &mut [u8], offsets: &[u64]) -> Result<()> {
    for &off in offsets {
        let n = f.read_at(buf, off).map_err(io_err("O_DIRECT pread"))?;
        if n != buf.len() {
            return Err(SysError::Unsupported(format!(
                "short O_DIRECT read: {n} bytes"
            )));
        }
    }
    Ok(())
}

/// Time per block against file size: files of 1, 4, 16... blocks up to
/// the scale's largest, each read (at most `cap` blocks of it) in random
/// or consecutive order.
fn file_reads(cfg: &Config<'_>, random: bool) -> Result<Entry> {
    let max_blocks: u64 = cfg.scale.pick(256, 4096, 65_536);
    let cap: u64 = cfg.scale.pick(256, 1024, 4096);
    let dir = temp_dir(cfg)?;
    let path = dir.path().join("blocks");
    write_file(&path, max_blocks * BLOCK, 1)?;
    let f = open_direct(&path)?;
    let mut buf = AlignedBuf::new(BLOCK as usize, BLOCK as usize)?;
    let mut rng = Rng::new(if random { 0xF11E } else { 0x5E9 });
    let mut points = Vec::new();
    let mut last = Vec::new();
    let mut k = 1u64;
    while k <= max_blocks {
        let mut v = Vec::new();
        for _ in 0..cfg.reps() {
            cfg.check_stop()?;
            let offsets = block_offsets(&mut rng, k, k.min(cap), random);
            v.push(ns_per_block(&f, &mut buf, &offsets)?);
        }
        points.push(Point::of(k as f64, &v));
        last = v;
        k *= 4;
    }
    drop(f);
    drop(dir);
    Ok(file_reads_entry(random, max_blocks, cap, points, &last))
}

/// Byte offsets of `n` of a file's `k` blocks: distinct blocks in random
/// order, or `n` consecutive ones from a random start.
fn block_offsets(rng: &mut Rng, k: u64, n: u64, random: bool) -> Vec<u64> {
    if random {
        let mut all: Vec<u64> = (0..k).collect();
        rng.shuffle(&mut all);
        all.truncate(n as usize);
        all.into_iter().map(|b| b * BLOCK).collect()
    } else {
        let start = rng.below(k - n + 1);
        (start..start + n).map(|b| b * BLOCK).collect()
    }
}

/// Ns per block of O_DIRECT reads of `offsets`.
fn ns_per_block(f: &std::fs::File, buf: &mut [u8], offsets: &[u64]) -> Result<f64> {
    let n = offsets.len() as u64;
    // Passes so that tiny files still give a measurable time.
    let passes = (64 / n).max(1);
    let t = prim::monotonic_ns();
    for _ in 0..passes {
        read_blocks(f, buf, offsets)?;
    }
    Ok((prim::monotonic_ns() - t) as f64 / (passes * n) as f64)
}

/// The entry of [`file_reads`]: its series by file size, the largest
/// file's times as the headline.
fn file_reads_entry(
    random: bool,
    max_blocks: u64,
    cap: u64,
    points: Vec<Point>,
    last: &[f64],
) -> Entry {
    let (name, how) = if random {
        ("file_read_rand", "blocks in random order without repeats")
    } else {
        ("file_read_seq", "consecutive blocks")
    };
    let mut e = Entry::new(
        name,
        "fs",
        format!(
            "O_DIRECT 4 KiB preads of {how} from files of 1..{max_blocks} blocks (at most {cap} reads per file per repeat); time / block; headline = largest file"
        ),
    );
    e.time_ns = Some(Stats::of(last));
    e.series.push(Series {
        name: name.into(),
        x_unit: "blocks".into(),
        y_unit: "ns_per_block".into(),
        points,
    });
    e.notes.push(
        "O_DIRECT skips this kernel's page cache, not caches below it (a hypervisor's, a device's)"
            .into(),
    );
    e
}

/// Sequential O_DIRECT reads, time per block by file size.
pub fn read_seq(cfg: &Config<'_>) -> Result<Entry> {
    file_reads(cfg, false)
}

/// Random O_DIRECT reads, time per block by file size.
pub fn read_rand(cfg: &Config<'_>) -> Result<Entry> {
    file_reads(cfg, true)
}

/// Time per block against the number of processes reading their own files.
pub fn contention(cfg: &Config<'_>) -> Result<Entry> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let nmax = cfg
        .scale
        .pick(2, (2 * cores).clamp(2, 8), (2 * cores).clamp(2, 8));
    let blocks: u64 = cfg.scale.pick(64, 512, 2048);
    let dir = temp_dir(cfg)?;
    let mut contenders = Contender::make(dir.path(), nmax, blocks)?;
    let mut points = Vec::new();
    let mut last = Vec::new();
    for n in 1..=nmax {
        let mut v = Vec::new();
        for _ in 0..cfg.reps() {
            cfg.check_stop()?;
            let mut shares: Vec<prim::ReadShare<'_>> = contenders
                .iter_mut()
                .take(n)
                .map(Contender::share)
                .collect();
            let ns = prim::read_in_processes(&mut shares)?;
            let per: Vec<f64> = ns.iter().map(|&t| t as f64 / blocks as f64).collect();
            v.push(Stats::of(&per).median);
        }
        points.push(Point::of(n as f64, &v));
        last = v;
    }
    drop(contenders);
    drop(dir);
    let first = points.first().map_or(f64::NAN, |p| p.y);
    let mut e = Entry::new(
        "contention",
        "fs",
        format!(
            "1..{nmax} processes (fork), each preads all {blocks} blocks of its own file in random order with O_DIRECT, all starting together; median over processes of time / block; headline = {nmax} processes"
        ),
    );
    e.time_ns = Some(Stats::of(&last));
    e.notes.push(format!(
        "{nmax} processes: {:.2}x the time per block of one",
        Stats::of(&last).median / first
    ));
    e.series.push(Series {
        name: "contention".into(),
        x_unit: "processes".into(),
        y_unit: "ns_per_block".into(),
        points,
    });
    Ok(e)
}

/// One contending process's file (opened O_DIRECT), its buffer and the
/// order it reads its blocks in.
struct Contender {
    file: std::fs::File,
    buf: AlignedBuf,
    offsets: Vec<u64>,
}

impl Contender {
    /// `n` files `reader0`.. of `blocks` blocks in `dir`, each with its
    /// blocks shuffled (one generator, file after file).
    fn make(dir: &Path, n: usize, blocks: u64) -> Result<Vec<Contender>> {
        let mut rng = Rng::new(0xC0);
        let mut v = Vec::new();
        for i in 0..n {
            let p = dir.join(format!("reader{i}"));
            write_file(&p, blocks * BLOCK, i as u8)?;
            let file = open_direct(&p)?;
            let buf = AlignedBuf::new(BLOCK as usize, BLOCK as usize)?;
            let mut offsets: Vec<u64> = (0..blocks).map(|b| b * BLOCK).collect();
            rng.shuffle(&mut offsets);
            v.push(Contender { file, buf, offsets });
        }
        Ok(v)
    }

    /// What one process of [`prim::read_in_processes`] reads.
    fn share(&mut self) -> prim::ReadShare<'_> {
        prim::ReadShare {
            file: &self.file,
            buf: &mut self.buf[..],
            offsets: &self.offsets,
        }
    }
}

fn read_through(path: &Path, len: u64) -> Result<()> {
    let f = std::fs::File::open(path).map_err(io_err(format!("open {}", path.display())))?;
    let mut buf = vec![0u8; MIB as usize];
    let mut off = 0;
    while off < len {
        let n = f
            .read_at(&mut buf[..(len - off).min(MIB) as usize], off)
            .map_err(io_err(format!("read {}", path.display())))?;
        if n == 0 {
            break;
        }
        off += n as u64;
    }
    Ok(())
}

/// File-cache size: re-read time and residency against file size, with a
/// balloon leaving the page cache a few hundred MiB.
pub fn file_cache(cfg: &Config<'_>) -> Result<Entry> {
    let room = cfg.scale.pick(48 * MIB, 256 * MIB, 512 * MIB);
    let avail0 = meminfo_bytes("MemAvailable")
        .ok_or_else(|| SysError::Unsupported("no MemAvailable in /proc/meminfo".into()))?;
    if avail0 < room + 512 * MIB {
        return Err(SysError::Unsupported(format!(
            "only {} MiB available; need {} MiB",
            avail0 / MIB,
            (room + 512 * MIB) / MIB
        )));
    }
    // Smoke scale exercises the balloon without shrinking the cache much.
    let balloon_bytes = cfg.scale.pick(64 * MIB, avail0 - room, avail0 - room);
    // A sequential re-read of a file larger than the cache misses on every
    // page (the oldest pages go first), so the knee is sharp; the sizes
    // start well below the room because the kernel keeps some of it free.
    let fractions = [0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 1.0, 1.5];
    let sizes: Vec<u64> = fractions
        .iter()
        .map(|f| ((room as f64 * f) as u64 / MIB).max(1) * MIB)
        .collect();
    let max = *sizes.last().unwrap_or(&room);
    let dir = temp_dir(cfg)?;
    let path = dir.path().join("cache");
    write_file(&path, max, 7)?;
    iolab::cache::evict(&path)?;
    cfg.check_stop()?;
    let t = prim::monotonic_ns();
    let balloon = prim::Balloon::inflate(balloon_bytes)?;
    let inflate_ms = (prim::monotonic_ns() - t) / 1_000_000;
    let avail1 = meminfo_bytes("MemAvailable").unwrap_or(0);
    let sweep = CacheSweep::measure(cfg, &path, sizes, &balloon)?;
    let ballooned = balloon.bytes();
    drop(balloon);
    drop(dir);
    let mut e = Entry::new(
        "file_cache",
        "fs",
        format!(
            "balloon process mlocks {} MiB; for files of {}..{} MiB: evict, read once, count resident pages (mincore), time a re-read; size = most of a file kept",
            ballooned / MIB,
            sweep.sizes[0] / MIB,
            max / MIB
        ),
    );
    e.notes.push(format!(
        "MemAvailable {} MiB before, {} MiB with the balloon (inflated in {inflate_ms} ms); largest Cached seen {} MiB",
        avail0 / MIB,
        avail1 / MIB,
        sweep.cached_max / MIB
    ));
    sweep.fill(&mut e);
    Ok(e)
}

/// Re-read times and resident bytes per file size, over the repeats.
struct CacheSweep {
    sizes: Vec<u64>,
    /// ns per block of the re-read, per size, per repeat.
    times: Vec<Vec<f64>>,
    /// Resident bytes after one read, per size, per repeat.
    res: Vec<Vec<f64>>,
    /// The most `Cached` seen in /proc/meminfo.
    cached_max: u64,
}

impl CacheSweep {
    /// For each size (twice at most): evict, read once, count what stayed,
    /// time a re-read; the balloon must stay alive throughout.
    fn measure(
        cfg: &Config<'_>,
        path: &Path,
        sizes: Vec<u64>,
        balloon: &prim::Balloon,
    ) -> Result<CacheSweep> {
        let reps = cfg.reps().min(2);
        let mut times: Vec<Vec<f64>> = vec![Vec::new(); sizes.len()];
        let mut res: Vec<Vec<f64>> = vec![Vec::new(); sizes.len()];
        let mut cached_max = 0u64;
        for _ in 0..reps {
            for (i, &s) in sizes.iter().enumerate() {
                cfg.check_stop()?;
                iolab::cache::evict(path)?;
                read_through(path, s)?;
                let r = iolab::cache::residency(path, s)?;
                res[i].push(r.resident_pages as f64 * iolab::usage::page_size() as f64);
                cached_max = cached_max.max(meminfo_bytes("Cached").unwrap_or(0));
                let t = prim::monotonic_ns();
                read_through(path, s)?;
                times[i].push((prim::monotonic_ns() - t) as f64 / (s / BLOCK) as f64);
                if !balloon.alive() {
                    return Err(SysError::Unsupported(
                        "the balloon helper died (memory pressure); file_cache abandoned".into(),
                    ));
                }
            }
        }
        Ok(CacheSweep {
            sizes,
            times,
            res,
            cached_max,
        })
    }

    /// The headline (the most of one file the cache held, per repeat), the
    /// knee note and both series.
    fn fill(&self, e: &mut Entry) {
        let (sizes, times, res) = (&self.sizes, &self.times, &self.res);
        let reps = res.first().map_or(0, Vec::len);
        let per_rep: Vec<f64> = (0..reps)
            .map(|r| res.iter().map(|v| v[r]).fold(0.0, f64::max))
            .collect();
        e.size_bytes = Some(Stats::of(&per_rep));
        let fast = times
            .iter()
            .map(|t| Stats::of(t).median)
            .fold(f64::INFINITY, f64::min);
        let knee = sizes
            .iter()
            .zip(times)
            .find(|(_, t)| Stats::of(t).median > 3.0 * fast)
            .map(|(s, _)| *s);
        e.notes.push(match knee {
            Some(k) => format!(
                "re-read time jumps (>3x the fastest) at {} MiB: files this big no longer come from memory",
                k / MIB
            ),
            None => format!(
                "no knee from {} to {} MiB: every size re-read at about the same speed",
                sizes[0] / MIB,
                sizes[sizes.len() - 1] / MIB
            ),
        });
        let series = |name: &str, y_unit: &str, v: &[Vec<f64>]| Series {
            name: name.into(),
            x_unit: "bytes".into(),
            y_unit: y_unit.into(),
            points: sizes
                .iter()
                .zip(v)
                .map(|(&s, v)| Point::of(s as f64, v))
                .collect(),
        };
        e.series
            .push(series("file_cache_reread", "ns_per_block", times));
        e.series.push(series("file_cache_resident", "bytes", res));
    }
}
