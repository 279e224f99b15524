//! [`GpuTechnique::Threads`](super::GpuTechnique::Threads): several
//! threads, each with its own lane (staging buffers and copy queue), take
//! pieces in turn, `pread` each into the next staging buffer and queue its
//! copy. While one buffer fills, the copies out of the others run; a
//! buffer is filled again only after [`Lane::slot`] has waited for its copy.

use super::error::GpuError;
use super::options::GpuOptions;
use super::ranges::{Opened, Piece};
use super::stats::Counters;
use super::target::{Lane, Target};
use super::workers::{self, Shared};
use std::time::Instant;

/// Moves every piece to `target` with `opts.threads` threads (no more than
/// there are pieces).
pub(crate) fn run<T: Target>(
    target: &T,
    files: &[Opened],
    pieces: &[Piece],
    opts: &GpuOptions,
) -> Result<Counters, GpuError> {
    let threads = opts.threads.clamp(1, pieces.len().max(1));
    workers::run(threads, pieces.len(), |shared| {
        worker(target, files, pieces, shared, opts)
    })
}

/// One thread: its lane, then pieces until none are left; the lane's
/// copies are waited for even when a read failed.
fn worker<T: Target>(
    target: &T,
    files: &[Opened],
    pieces: &[Piece],
    shared: &Shared,
    opts: &GpuOptions,
) -> Result<Counters, GpuError> {
    let t = Instant::now();
    let slots = opts.slots.max(1);
    let mut lane = target.lane(slots, opts.piece(), opts.pinned)?;
    let mut c = Counters {
        setup: t.elapsed(),
        pinned: lane.pinned(),
        ..Counters::default()
    };
    let r = fill(&mut lane, slots, files, pieces, shared, &mut c);
    if r.is_err() {
        // The others stop now, not after this lane's copies have ended.
        shared.stop();
    }
    let t = Instant::now();
    let fin = lane.finish();
    c.wait += t.elapsed();
    r?;
    fin?;
    Ok(c)
}

/// The loop: wait for the buffer, read into it, queue its copy.
fn fill<L: Lane>(
    lane: &mut L,
    slots: usize,
    files: &[Opened],
    pieces: &[Piece],
    shared: &Shared,
    c: &mut Counters,
) -> Result<(), GpuError> {
    let mut k = 0usize;
    while let Some(i) = shared.take() {
        let p = pieces[i];
        let s = k % slots;
        k += 1;
        let t0 = Instant::now();
        let buf = &mut lane.slot(s)?[..p.len];
        let t1 = Instant::now();
        let f = &files[p.src];
        let got = crate::backend::pread_full(&f.file, &f.path, p.offset, buf)?;
        if got < p.len {
            return Err(GpuError::ShortFile {
                path: f.path.clone(),
                at: p.offset + got as u64,
                missing: (p.len - got) as u64,
            });
        }
        let t2 = Instant::now();
        lane.send(s, p.len, p.at)?;
        c.wait += t1 - t0;
        c.read += t2 - t1;
        c.copy += t2.elapsed();
        c.bytes += p.len as u64;
    }
    Ok(())
}
