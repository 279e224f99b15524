//! Batches of reads: [`ReadReq`], the planner that splits large requests
//! and merges neighbours into vectored reads, and the fallback that reads
//! a batch with a few threads where io_uring is missing.

use super::backend::{Backend, Src};
use super::error::ReadError;
pub use super::request::ReadReq;
use iolab::kernel::ring::{Piece, Seg};

/// Largest piece one op reads; larger requests are split so the ring's
/// depth works within one request too.
pub(crate) const PIECE: usize = 1 << 20;
/// Largest merged (vectored) read.
const MERGE_MAX: usize = 1 << 20;
/// Most buffers merged into one vectored read.
const MERGE_IOVS: usize = 64;

/// Splits requests into pieces of at most `piece` bytes and, when `merge`,
/// joins requests that touch end to start into one vectored read.
pub(crate) fn plan(reqs: &[ReadReq<'_>], piece: usize, merge: bool) -> Vec<Piece> {
    let mut order: Vec<usize> = (0..reqs.len()).collect();
    if merge {
        order.sort_by_key(|&i| reqs[i].offset);
    }
    let mut out: Vec<Piece> = Vec::with_capacity(reqs.len());
    let mut open: Option<(u64, usize)> = None; // (end offset, bytes) of the last piece
    for i in order {
        let r = &reqs[i];
        let len = r.buf.len();
        if len == 0 {
            continue;
        }
        if merge && len < MERGE_MAX {
            if let (Some((end, bytes)), Some(last)) = (open, out.last_mut()) {
                if end == r.offset && bytes + len <= MERGE_MAX && last.segs.len() < MERGE_IOVS {
                    last.segs.push(Seg {
                        req: i,
                        start: 0,
                        len,
                    });
                    open = Some((end + len as u64, bytes + len));
                    continue;
                }
            }
        }
        let mut start = 0;
        while start < len {
            let n = piece.min(len - start);
            out.push(Piece {
                offset: r.offset + start as u64,
                segs: vec![Seg {
                    req: i,
                    start,
                    len: n,
                }],
            });
            start += n;
        }
        open = Some((r.offset + len as u64, len.min(piece)));
        if len > piece {
            open = None;
        }
    }
    out
}

/// Reads a batch through this thread's io_uring. Returns false (and reads
/// nothing) if io_uring is unavailable.
pub(crate) fn via_ring(
    src: &Src,
    reqs: &mut [ReadReq<'_>],
    depth: u32,
    merge: bool,
    done: &mut dyn FnMut(usize, &ReadReq<'_>),
) -> bool {
    let plan = plan(reqs, PIECE, merge);
    let path = &src.path;
    iolab::kernel::ring::read_plan(&src.file, reqs, &plan, depth, &mut |i, r, res| {
        r.result = Some(res.map_err(|e| ReadError::io(path, r.offset, r.buf.len(), e)));
        done(i, r);
    })
    .is_ok()
}

/// Reads a batch with up to `threads` threads, each taking requests in
/// turn through `backend.read_at`; `done` runs on the calling thread, as
/// each thread finishes its share.
#[allow(clippy::needless_range_loop)] // done(i, &reqs[i]) after each mutation
pub(crate) fn via_threads(
    backend: &dyn Backend,
    reqs: &mut [ReadReq<'_>],
    threads: usize,
    done: &mut dyn FnMut(usize, &ReadReq<'_>),
) {
    let threads = threads.clamp(1, reqs.len().max(1));
    if threads == 1 {
        for i in 0..reqs.len() {
            let r = &mut reqs[i];
            r.result = Some(backend.read_at(r.offset, r.buf));
            done(i, &reqs[i]);
        }
        return;
    }
    let per = reqs.len().div_ceil(threads);
    let (tx, rx) = std::sync::mpsc::channel::<usize>();
    std::thread::scope(|s| {
        for (k, chunk) in reqs.chunks_mut(per).enumerate() {
            let tx = tx.clone();
            s.spawn(move || {
                for r in chunk.iter_mut() {
                    r.result = Some(backend.read_at(r.offset, r.buf));
                }
                let _ = tx.send(k);
            });
        }
    });
    drop(tx);
    // All threads have finished (scope joined); hand out in share order.
    let shares: Vec<usize> = rx.iter().collect();
    for k in shares {
        let lo = k * per;
        let hi = (lo + per).min(reqs.len());
        for i in lo..hi {
            done(i, &reqs[i]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neighbours_merge_and_large_requests_split() {
        let mut a = vec![0u8; 4096];
        let mut b = vec![0u8; 4096];
        let mut c = vec![0u8; 3 * PIECE + 5];
        let mut d = vec![0u8; 10];
        let reqs = vec![
            ReadReq::new(4096, &mut b),
            ReadReq::new(0, &mut a),
            ReadReq::new(1 << 30, &mut c),
            ReadReq::new(8192 + 1, &mut d),
        ];
        let p = plan(&reqs, PIECE, true);
        // a and b merge (0..8192); d is one byte past b's end: separate; c splits in 4.
        assert_eq!(p.len(), 1 + 1 + 4);
        assert_eq!(p[0].offset, 0);
        assert_eq!(p[0].segs.len(), 2);
        assert_eq!((p[0].segs[0].req, p[0].segs[1].req), (1, 0));
        let c_pieces: Vec<_> = p.iter().filter(|x| x.segs[0].req == 2).collect();
        assert_eq!(c_pieces.len(), 4);
        assert_eq!(c_pieces[3].segs[0].len, 5);
        let covered: usize = p.iter().flat_map(|x| &x.segs).map(|s| s.len).sum();
        assert_eq!(covered, 4096 * 2 + 3 * PIECE + 5 + 10);
        let unmerged = plan(&reqs, PIECE, false);
        assert_eq!(unmerged.len(), 1 + 1 + 4 + 1);
    }
}
