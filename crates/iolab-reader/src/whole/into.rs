//! A whole file read straight into the caller's memory: the kernel's copy
//! out of the page cache, or the device's DMA with `O_DIRECT`, lands in
//! the destination itself, with no buffer of ours in between and no copy
//! after. What [`crate::read_into`] and the Python package's `iolab.read`
//! run on.

use super::{warm_thread_count, Plan, WholeStats, FORCE_PREAD_ENV};
use crate::ReadReq;
use iolab::cache;
use iolab::engine::EngineKind;
use iolab::error::{Error, Result};
use iolab::file::{self, OpenSpec};
use iolab::kernel::ring::{self, Piece, Seg};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// Reads `path` from its start into `dst` until `dst` is full or the file
/// ends; returns how (its `bytes`: what was read). A file mostly in the
/// page cache (or one that cannot be read with O_DIRECT) is read with
/// preads straight into `dst`, shared among the idle CPUs from
/// [`super::PARALLEL_MIN`] on; a cold one with O_DIRECT io_uring reads of
/// the plan's pieces straight into `dst` when `dst` is aligned as O_DIRECT
/// needs, else on the bounce-buffer path ([`super::read_whole_plan`]).
pub fn read_whole_into(path: &Path, plan: &Plan, dst: &mut [u8]) -> Result<WholeStats> {
    let len = file::length(path)?;
    let n = len.min(dst.len() as u64) as usize;
    let dst = &mut dst[..n];
    let align = file::dio_alignment(path).ok();
    let warm = plan.direct != Some(true)
        && cache::residency_sampled(path, len, 256).is_ok_and(|r| r.fraction() >= 0.5);
    let force_pread = std::env::var_os(FORCE_PREAD_ENV).is_some_and(|v| v != "0");
    let direct = !warm && plan.direct != Some(false) && !force_pread;
    match align {
        Some(a) if direct && (dst.as_ptr() as usize).is_multiple_of(a.mem) => {
            if let Some(stats) = direct_into(path, plan, a.required.max(4096), dst)? {
                return Ok(stats);
            }
        }
        Some(_) if direct => return bounced(path, plan, dst),
        _ => {}
    }
    preads_into(path, len, plan, dst)
}

/// The bounce-buffer path, for a destination O_DIRECT cannot use.
fn bounced(path: &Path, plan: &Plan, dst: &mut [u8]) -> Result<WholeStats> {
    let mut stats = super::read_whole_plan(path, plan, &mut |off, b| {
        let o = off as usize;
        if o < dst.len() {
            let k = b.len().min(dst.len() - o);
            dst[o..o + k].copy_from_slice(&b[..k]);
        }
        true
    })?;
    stats.bytes = stats.bytes.min(dst.len() as u64);
    Ok(stats)
}

/// Preads straight into `dst` (of a file of `len` bytes), each thread its
/// own contiguous part, so each also faults in its own part of `dst`.
fn preads_into(path: &Path, len: u64, plan: &Plan, dst: &mut [u8]) -> Result<WholeStats> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = warm_thread_count(len, plan.warm_threads, cpus, iolab::usage::procs_running);
    let fh = file::open(path, OpenSpec::default())?;
    // Parts of whole 2 MiB pages (a huge page is faulted by one thread).
    let part = dst.len().div_ceil(threads).div_ceil(2 << 20) * (2 << 20);
    let bytes = if threads <= 1 || dst.len() <= part {
        fill(&fh, dst, 0).map_err(|(at, e)| read_err(path, at, e))?
    } else {
        std::thread::scope(|s| {
            let hs: Vec<_> = dst
                .chunks_mut(part.max(1))
                .enumerate()
                .map(|(i, d)| {
                    let fh = &fh;
                    s.spawn(move || fill(fh, d, (i * part) as u64))
                })
                .collect();
            // A part that ended early (the file shrank) ends the bytes read.
            let mut bytes = 0usize;
            let mut short = false;
            for (i, h) in hs.into_iter().enumerate() {
                let got = h.join().expect("a pread thread panicked");
                let got = got.map_err(|(at, e)| read_err(path, at, e))?;
                if !short {
                    bytes = i * part + got;
                    short = got < part;
                }
            }
            Ok::<usize, Error>(bytes)
        })?
    };
    Ok(WholeStats {
        bytes: bytes as u64,
        engine: EngineKind::Pread,
        direct: false,
        threads,
    })
}

fn read_err(path: &Path, at: u64, e: std::io::Error) -> Error {
    Error::io(format!("read {} at {at}", path.display()), e)
}

/// Preads into `buf` from file offset `off` until it is full or the file
/// ends; returns the bytes read, or the offset that failed.
fn fill(fh: &File, buf: &mut [u8], off: u64) -> std::result::Result<usize, (u64, std::io::Error)> {
    let mut done = 0;
    while done < buf.len() {
        let at = off + done as u64;
        match fh.read_at(&mut buf[done..], at) {
            Ok(0) => break,
            Ok(k) => done += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err((at, e)),
        }
    }
    Ok(done)
}

/// O_DIRECT io_uring reads of the plan's pieces straight into `dst`
/// (aligned for O_DIRECT), the plan's depth in flight; the last partial
/// block (`unit` is the O_DIRECT size unit) by one buffered pread. `None`
/// when O_DIRECT or io_uring is not to be had here (nothing was read).
fn direct_into(
    path: &Path,
    plan: &Plan,
    unit: usize,
    dst: &mut [u8],
) -> Result<Option<WholeStats>> {
    let fh = match file::open(
        path,
        OpenSpec {
            direct: true,
            write: false,
        },
    ) {
        Ok(fh) => fh,
        Err(Error::Unsupported { .. }) => return Ok(None),
        Err(e) => return Err(e),
    };
    let chunk = plan.chunk.max(unit).div_ceil(unit) * unit;
    let body = dst.len() / unit * unit;
    let (head, tail) = dst.split_at_mut(body);
    let got = ring_pieces(&fh, head, chunk, plan.depth.max(1));
    let (mut bytes, whole) = match got {
        Ok(Some(r)) => r,
        Ok(None) => return Ok(None),
        Err((at, e)) => return Err(read_err(path, at, e)),
    };
    if whole && !tail.is_empty() {
        let plain = file::open(path, OpenSpec::default())?;
        bytes += fill(&plain, tail, body as u64).map_err(|(at, e)| read_err(path, at, e))?;
    }
    Ok(Some(direct_stats(bytes)))
}

/// Reads `dst` from the start of `fh` in `chunk`-byte pieces, `depth` in
/// flight: the bytes up to the first piece the file ended in, and whether
/// every piece was whole; `None` when no ring could be set up; the first
/// error with its offset.
fn ring_pieces(
    fh: &File,
    dst: &mut [u8],
    chunk: usize,
    depth: u32,
) -> std::result::Result<Option<(usize, bool)>, (u64, std::io::Error)> {
    let mut reqs: Vec<ReadReq<'_>> = dst
        .chunks_mut(chunk)
        .enumerate()
        .map(|(i, b)| ReadReq::new((i * chunk) as u64, b))
        .collect();
    let pieces: Vec<Piece> = reqs
        .iter()
        .enumerate()
        .map(|(i, r)| Piece {
            offset: r.offset,
            segs: vec![Seg {
                req: i,
                start: 0,
                len: r.buf.len(),
            }],
        })
        .collect();
    let mut got = vec![0usize; reqs.len()];
    let mut failed = None;
    let set_up = ring::read_plan(fh, &mut reqs, &pieces, depth, &mut |i, r, res| match res {
        Ok(k) => got[i] = k,
        Err(e) => {
            failed.get_or_insert((r.offset, e));
        }
    });
    if set_up.is_err() {
        return Ok(None);
    }
    if let Some(f) = failed {
        return Err(f);
    }
    let mut bytes = 0usize;
    for (r, &k) in reqs.iter().zip(&got) {
        bytes += k;
        if k < r.buf.len() {
            return Ok(Some((bytes, false)));
        }
    }
    Ok(Some((bytes, true)))
}

fn direct_stats(bytes: usize) -> WholeStats {
    WholeStats {
        bytes: bytes as u64,
        engine: EngineKind::Uring,
        direct: true,
        threads: 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab::buf::AlignedBuf;

    /// A file of `len` bytes that differ from place to place.
    fn file_of(len: usize) -> (tempfile::TempDir, std::path::PathBuf, Vec<u8>) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let data: Vec<u8> = (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        std::fs::write(&p, &data).unwrap();
        (d, p, data)
    }

    fn cold_plan() -> Plan {
        Plan {
            chunk: 1 << 20,
            depth: 4,
            ..Plan::default()
        }
    }

    #[test]
    fn a_cold_file_lands_in_an_aligned_buffer_by_o_direct_with_its_tail() {
        let len = (9 << 20) + 1234;
        let (_d, p, data) = file_of(len);
        iolab::cache::evict(&p).unwrap();
        let mut dst = AlignedBuf::new(len, 4096).unwrap();
        let st = read_whole_into(&p, &cold_plan(), &mut dst).unwrap();
        assert_eq!(st.bytes, len as u64);
        iolab::require!(
            st.direct,
            "O_DIRECT is not available on the temporary directory"
        );
        assert_eq!(st.engine, EngineKind::Uring);
        assert!(dst[..] == data[..]);
    }

    #[test]
    fn an_unaligned_buffer_takes_the_bounce_path() {
        let len = (3 << 20) + 5;
        let (_d, p, data) = file_of(len);
        iolab::cache::evict(&p).unwrap();
        let mut mem = AlignedBuf::new(len + 1, 4096).unwrap();
        let dst = &mut mem[1..];
        let st = read_whole_into(&p, &cold_plan(), dst).unwrap();
        assert_eq!(st.bytes, len as u64);
        assert!(dst[..] == data[..]);
    }

    #[test]
    fn a_cached_file_is_shared_among_threads_straight_into_the_buffer() {
        let len = (65 << 20) + 4097;
        let (_d, p, data) = file_of(len);
        std::fs::read(&p).unwrap();
        let plan = Plan {
            warm_threads: 3,
            ..Plan::default()
        };
        let mut dst = vec![0u8; len];
        let st = read_whole_into(&p, &plan, &mut dst).unwrap();
        assert_eq!((st.bytes, st.threads, st.direct), (len as u64, 3, false));
        assert!(dst == data);
    }

    #[test]
    fn a_short_buffer_gets_the_start_and_a_long_one_the_whole_file() {
        let (_d, p, data) = file_of(100_000);
        for plan in [cold_plan(), Plan::default()] {
            iolab::cache::evict(&p).unwrap();
            let mut short = AlignedBuf::new(40_960, 4096).unwrap();
            let st = read_whole_into(&p, &plan, &mut short).unwrap();
            assert_eq!(st.bytes, 40_960);
            assert!(short[..] == data[..40_960]);
            let mut long = AlignedBuf::new(200_000, 4096).unwrap();
            let st = read_whole_into(&p, &plan, &mut long).unwrap();
            assert_eq!(st.bytes, 100_000);
            assert!(long[..100_000] == data[..] && long[100_000..].iter().all(|&b| b == 0));
        }
        let (_e, empty, _) = file_of(0);
        assert_eq!(
            read_whole_into(&empty, &cold_plan(), &mut [0u8; 8])
                .unwrap()
                .bytes,
            0
        );
    }
}
