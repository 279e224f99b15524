//! Reading a whole file as fast as the machine allows, handing each chunk to
//! a callback in whatever order the chunks complete.
//!
//! Cold files are read with `O_DIRECT` through io_uring (4 MiB chunks, 8 in
//! flight: enough to keep a virtio disk's queue busy without the page cache's
//! copy); files mostly in the page cache are read buffered through the same
//! ring. Where io_uring is unavailable, or `IOLAB_FORCE_PREAD=1` is set, it
//! falls back to `pread`. This is the one whole-file path: `iolab xor`,
//! `iolab cat` and [`crate::read_all`] all run on it.

use iolab::cache;
use iolab::engine::EngineKind;
use iolab::error::{Error, Result};
use iolab::file::{self, OpenSpec};
use iolab::kernel::{hugebuf::HugeBuf, ring};
use std::os::unix::fs::FileExt;
use std::path::Path;

mod into;
mod parallel;
pub mod profiled;

pub use into::read_whole_into;

/// How [`read_whole`] read the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WholeStats {
    /// Bytes handed to the callback.
    pub bytes: u64,
    /// Engine used.
    pub engine: EngineKind,
    /// Whether O_DIRECT was used.
    pub direct: bool,
    /// Threads that read (more than one only for a large cached file on a
    /// machine with idle CPUs).
    pub threads: usize,
}

/// Environment variable that forces the `pread` fallback.
pub const FORCE_PREAD_ENV: &str = "IOLAB_FORCE_PREAD";

/// How to read a whole file: piece size, pieces in flight, page cache or
/// not, and whether chunks must reach the callback in file order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Piece size, bytes (a multiple of 4096).
    pub chunk: usize,
    /// Pieces in flight.
    pub depth: u32,
    /// `Some(true)`: O_DIRECT; `Some(false)`: page cache; `None`: O_DIRECT
    /// when less than half the file is cached.
    pub direct: Option<bool>,
    /// Hand chunks to the callback in file order (for `cat`); otherwise in
    /// completion order.
    pub ordered: bool,
    /// Piece size when the file is mostly cached: small enough that the
    /// destination stays in the CPU cache (a copy into cached memory is
    /// faster than one that writes memory back), as `cat`'s 128 KiB buffer.
    pub warm_chunk: usize,
    /// Where each destination of a mostly cached file's copy starts past a
    /// page (0..64): the CPU decides which is fastest (+16 B was 10 %
    /// faster than +0 on the Xeon of earlier sessions, +0 17 % faster than
    /// +16 on an AMD EPYC). `None`: measured once per process
    /// ([`iolab::buf::buffered_slot_offset`]); a profile from `iolab tune`
    /// names it.
    pub warm_offset: Option<usize>,
    /// Threads copying a mostly cached file out of the page cache; 0: as
    /// many as this process may run on (at most [`MAX_WARM_THREADS`]) for
    /// files of [`PARALLEL_MIN`] or more, else one.
    pub warm_threads: usize,
}

/// The most threads [`Plan::warm_threads`]`= 0` picks.
pub const MAX_WARM_THREADS: usize = 4;

/// Smallest file read by several threads when it is cached: below it,
/// starting threads costs more than the copies they share.
pub const PARALLEL_MIN: u64 = 64 << 20;

impl Default for Plan {
    /// 4 MiB pieces, 8 in flight, O_DIRECT when cold, completion order.
    /// 32 MiB in flight: a cold 4 GiB file read in 3.3 s, against 6.4 s
    /// with 1 MiB x 8 and 4.7 s for fio's best (1 MiB x 32) here.
    fn default() -> Self {
        Plan {
            chunk: 4 << 20,
            depth: 8,
            direct: None,
            ordered: false,
            warm_chunk: 128 << 10,
            warm_offset: None,
            warm_threads: 0,
        }
    }
}

/// Reads all of `path`, calling `f(offset, bytes)` for each chunk (chunks
/// arrive in completion order, not file order).
pub fn read_whole(path: &Path, f: &mut dyn FnMut(u64, &[u8])) -> Result<WholeStats> {
    read_whole_plan(path, &Plan::default(), &mut |o, b| {
        f(o, b);
        true
    })
}

/// Reads all of `path` as `plan` says, calling `f(offset, bytes)` per
/// chunk; `f` returning false stops the reading early.
///
/// The pieces land in buffers backed by transparent huge pages
/// (`kernel::hugebuf`): O_DIRECT into 2 MiB pages ran about twice as
/// fast as into 4 KiB pages on a virtio disk whose queue takes 254 segments per request.
pub fn read_whole_plan(
    path: &Path,
    plan: &Plan,
    f: &mut dyn FnMut(u64, &[u8]) -> bool,
) -> Result<WholeStats> {
    let len = file::length(path)?;
    let shape = Shape::of(path, len, plan);
    let (chunk, depth) = (shape.chunk, shape.depth);
    // Room for the warm copy's offset (under 64 B) past the huge page's start.
    let mut slots = HugeBuf::new(chunk * depth as usize + 64)?;
    if shape.warm {
        return read_cached_file(path, len, plan, slots.as_mut_slice(), chunk, f);
    }
    let force_pread = std::env::var_os(FORCE_PREAD_ENV).is_some_and(|v| v != "0");
    if !force_pread {
        let ring = read_by_ring(path, len, &shape, plan.ordered, slots.as_mut_slice(), f)?;
        if let Some(stats) = ring {
            return Ok(stats);
        }
    }
    // No io_uring here: plain preads into one slot, in file order.
    read_in_order(path, len, &mut slots.as_mut_slice()[..chunk], f)
}

/// How a file is read: from the page cache or not, O_DIRECT or not, and
/// the pieces' size and number in flight.
struct Shape {
    /// Mostly in the page cache (and the plan allows reading it there).
    warm: bool,
    /// O_DIRECT (when the file system takes it).
    direct: bool,
    /// Piece size: a multiple of the O_DIRECT alignment, at least 4096.
    chunk: usize,
    /// Pieces in flight.
    depth: u32,
}

impl Shape {
    /// The shape `plan` gives `path` (of `len` bytes), from how much of it is
    /// cached and the alignment O_DIRECT needs on its file system.
    fn of(path: &Path, len: u64, plan: &Plan) -> Shape {
        let align = file::dio_alignment(path).ok();
        let warm = plan.direct != Some(true)
            && cache::residency_sampled(path, len, 256)
                .map(|r| r.fraction() >= 0.5)
                .unwrap_or(false);
        let direct = match plan.direct {
            Some(d) => d && align.is_some(),
            None => !warm && align.is_some(),
        };
        let unit = align.map_or(4096, |a| a.required.max(4096));
        let (chunk, depth) = if warm {
            // Cached: the copy is all the work; one small piece at a time.
            (plan.warm_chunk.max(4096), 1)
        } else {
            (plan.chunk, plan.depth.max(1))
        };
        let chunk = chunk.max(unit).div_ceil(unit) * unit;
        Shape {
            warm,
            direct,
            chunk,
            depth,
        }
    }
}

/// Reads the file through io_uring, `depth` pieces in flight; `None` when
/// no ring can be set up here (the caller falls back to preads).
fn read_by_ring(
    path: &Path,
    len: u64,
    shape: &Shape,
    ordered: bool,
    slots: &mut [u8],
    f: &mut dyn FnMut(u64, &[u8]) -> bool,
) -> Result<Option<WholeStats>> {
    let (fh, direct) = open_for_reading(path, shape.direct)?;
    match ring::stream_file(&fh, 0, len, shape.chunk, shape.depth, slots, ordered, f) {
        Ok(bytes) => Ok(Some(WholeStats {
            bytes,
            engine: EngineKind::Uring,
            direct,
            threads: 1,
        })),
        Err(ring::StreamError::Setup) => Ok(None),
        Err(ring::StreamError::Read(off, e)) => {
            Err(Error::io(format!("read {} at {off}", path.display()), e))
        }
    }
}

/// Opens `path` to read, O_DIRECT when `direct` and the file system takes
/// it; says whether it is.
fn open_for_reading(path: &Path, direct: bool) -> Result<(std::fs::File, bool)> {
    let fh = match file::open(
        path,
        OpenSpec {
            direct,
            write: false,
        },
    ) {
        Ok(fh) => Some(fh),
        // O_DIRECT refused by the file system: read it buffered instead.
        Err(Error::Unsupported { .. }) if direct => None,
        Err(e) => return Err(e),
    };
    Ok(match fh {
        Some(fh) => (fh, direct),
        None => (file::open(path, OpenSpec::default())?, false),
    })
}

/// A mostly cached file: the copy out of the page cache is all the work,
/// and a plain pread does it with less around it than a ring. The copy's
/// destination starts [`Plan::warm_offset`] past a page (the CPU decides
/// which offset copies fastest). Large files are shared out among the
/// idle CPUs.
fn read_cached_file(
    path: &Path,
    len: u64,
    plan: &Plan,
    slots: &mut [u8],
    chunk: usize,
    f: &mut dyn FnMut(u64, &[u8]) -> bool,
) -> Result<WholeStats> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = warm_thread_count(len, plan.warm_threads, cpus, iolab::usage::procs_running);
    if threads > 1 {
        let at = warm_offset(plan);
        let bytes = parallel::read_cached(path, len, chunk, threads, at, f)?;
        return Ok(WholeStats {
            bytes,
            engine: EngineKind::Pread,
            direct: false,
            threads,
        });
    }
    let off = warm_offset(plan);
    read_in_order(path, len, &mut slots[off..off + chunk], f)
}

/// Where the plan's warm copies land past a page (under 64 bytes).
fn warm_offset(plan: &Plan) -> usize {
    plan.warm_offset
        .unwrap_or_else(iolab::buf::buffered_slot_offset)
        % 64
}

/// Threads to copy a mostly cached file of `len` bytes out of the page
/// cache: the plan's number when it names one; else one for files below
/// [`PARALLEL_MIN`], and for larger ones one per CPU (of the `cpus` this
/// process may run on, at most [`MAX_WARM_THREADS`]) that no other task
/// wants right now. A shared copy only pays with idle cores: with a
/// compiler on the other core of this 2-core VM, two threads read a warm
/// 4 GiB file in 0.28 s against dd's 0.23 s. `runnable` is the machine's
/// runnable tasks, this thread included (`procs_running`), asked for only
/// when it matters.
fn warm_thread_count(
    len: u64,
    warm_threads: usize,
    cpus: usize,
    runnable: impl FnOnce() -> Option<usize>,
) -> usize {
    match warm_threads {
        0 if len >= PARALLEL_MIN => {
            let others = runnable().map_or(0, |r| r.saturating_sub(1));
            cpus.saturating_sub(others).clamp(1, MAX_WARM_THREADS)
        }
        0 => 1,
        n => n,
    }
}

/// Reads `path` (`len` bytes) with preads into `buf`, in file order,
/// calling `f` per piece until it returns false.
fn read_in_order(
    path: &Path,
    len: u64,
    buf: &mut [u8],
    f: &mut dyn FnMut(u64, &[u8]) -> bool,
) -> Result<WholeStats> {
    let fh = file::open(path, OpenSpec::default())?;
    let mut off = 0u64;
    let mut bytes = 0u64;
    while off < len {
        let n = fh
            .read_at(buf, off)
            .map_err(|e| Error::io(format!("read {} at {off}", path.display()), e))?;
        if n == 0 {
            break;
        }
        let n = n.min((len - off) as usize);
        bytes += n as u64;
        if !f(off, &buf[..n]) {
            break;
        }
        off += n as u64;
    }
    Ok(WholeStats {
        bytes,
        engine: EngineKind::Pread,
        direct: false,
        threads: 1,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warm_copies_are_shared_only_over_idle_cpus() {
        let big = PARALLEL_MIN;
        let never = || -> Option<usize> { panic!("procs_running asked for a small file") };
        // Small files, or a plan that names a number: no look at the machine.
        assert_eq!(warm_thread_count(big - 1, 0, 8, never), 1);
        assert_eq!(warm_thread_count(big, 3, 8, never), 3);
        // Only this thread runnable: every CPU, up to the cap.
        assert_eq!(warm_thread_count(big, 0, 2, || Some(1)), 2);
        assert_eq!(warm_thread_count(big, 0, 16, || Some(1)), MAX_WARM_THREADS);
        // A compiler on the other core of two: one thread, as dd.
        assert_eq!(warm_thread_count(big, 0, 2, || Some(2)), 1);
        assert_eq!(warm_thread_count(big, 0, 2, || Some(9)), 1);
        // Eight CPUs, five others busy: the three free ones.
        assert_eq!(warm_thread_count(big, 0, 8, || Some(6)), 3);
        // /proc/stat unreadable: as if idle.
        assert_eq!(warm_thread_count(big, 0, 2, || None), 2);
    }
}
