//! A per-thread io_uring that reads lists of pieces into caller-borrowed
//! buffers, keeping up to `depth` in flight: what the reader's `Uring`
//! technique, `read_many` and the whole-file path run on.
//!
//! Each thread keeps one ring (rings are cheap to keep, costly to build);
//! a piece is one read or one vectored read (several adjacent buffers).
//! Short reads are resubmitted for the remainder; a read returning 0 ends
//! the piece (end of file). The call returns only when nothing is in
//! flight, so the borrowed buffers are never written after it returns.

use io_uring::{opcode, types, IoUring};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::fs::File;
use std::os::fd::AsRawFd;

/// A request the ring reads into: it lends its buffer. The reader's
/// `ReadReq` implements it, so this file needs nothing from the reader.
pub trait Dest {
    /// The buffer the request's bytes go to.
    fn dest(&mut self) -> &mut [u8];
}

/// Part of one request's buffer: `len` bytes from `start` of request `req`.
#[derive(Clone, Copy, Debug)]
pub struct Seg {
    /// Index of the request.
    pub req: usize,
    /// Offset inside the request's buffer.
    pub start: usize,
    /// Bytes.
    pub len: usize,
}

/// One read or vectored read: `segs`, contiguous in the file from `offset`.
#[derive(Clone, Debug)]
pub struct Piece {
    /// File offset of the first byte.
    pub offset: u64,
    /// Destinations, in file order.
    pub segs: Vec<Seg>,
}

struct Run {
    done: usize,
    total: usize,
}

thread_local! {
    static RING: RefCell<Option<(IoUring, u32)>> = const { RefCell::new(None) };
}

fn ensure(slot: &mut Option<(IoUring, u32)>, depth: u32) -> std::io::Result<()> {
    if slot.as_ref().is_none_or(|(_, d)| *d < depth) {
        let entries = depth.clamp(1, 4096).next_power_of_two();
        *slot = None;
        *slot = Some((IoUring::new(entries)?, entries));
    }
    Ok(())
}

/// Reads the `plan` into the requests' buffers from `file`, up to `depth`
/// pieces in flight, calling `on_done(i, req, result)` once per request as
/// its last piece finishes (result: bytes read from its start until the
/// first short piece, or the first error). Errs only if the ring cannot be
/// set up; then nothing was read and no callback ran.
pub fn read_plan<R: Dest>(
    file: &File,
    reqs: &mut [R],
    plan: &[Piece],
    depth: u32,
    on_done: &mut dyn FnMut(usize, &mut R, std::io::Result<usize>),
) -> std::io::Result<()> {
    for p in plan {
        for s in &p.segs {
            assert!(
                s.start + s.len <= reqs[s.req].dest().len(),
                "plan outside its buffer"
            );
        }
    }
    RING.with(|c| {
        let mut c = c.borrow_mut();
        ensure(&mut c, depth)?;
        let (ring, entries) = c.as_mut().expect("ring set up above");
        let depth = depth.clamp(1, *entries) as usize;
        run(ring, file.as_raw_fd(), reqs, plan, depth, on_done);
        Ok(())
    })
}

/// Per request: results of its segments (start, bytes, full) and how many
/// segments are still out.
#[derive(Default)]
struct ReqState {
    segs_left: usize,
    got: Vec<(usize, usize, bool)>,
    err: Option<std::io::Error>,
}

fn finish_piece<R: Dest>(
    p: &Piece,
    run: &Run,
    err: Option<i32>,
    reqs: &mut [R],
    st: &mut [ReqState],
    on_done: &mut dyn FnMut(usize, &mut R, std::io::Result<usize>),
) {
    let mut at = 0usize;
    for s in &p.segs {
        let got = run.done.saturating_sub(at).min(s.len);
        at += s.len;
        let r = &mut st[s.req];
        if let Some(e) = err {
            r.err.get_or_insert(std::io::Error::from_raw_os_error(e));
        }
        r.got.push((s.start, got, got == s.len));
        r.segs_left -= 1;
        if r.segs_left == 0 {
            let res = match r.err.take() {
                Some(e) => Err(e),
                None => {
                    r.got.sort_unstable();
                    let mut n = 0;
                    for &(_, g, full) in &r.got {
                        n += g;
                        if !full {
                            break;
                        }
                    }
                    Ok(n)
                }
            };
            on_done(s.req, &mut reqs[s.req], res);
        }
    }
}

// Long on purpose: one submit/complete loop whose safety argument (ops in
// flight write into borrowed buffers until they complete) reads best whole.
fn run<R: Dest>(
    ring: &mut IoUring,
    fd: i32,
    reqs: &mut [R],
    plan: &[Piece],
    depth: usize,
    on_done: &mut dyn FnMut(usize, &mut R, std::io::Result<usize>),
) {
    let mut st: Vec<ReqState> = (0..reqs.len()).map(|_| ReqState::default()).collect();
    for p in plan {
        for s in &p.segs {
            st[s.req].segs_left += 1;
        }
    }
    // Requests with no segment (empty buffers) are done at once.
    for (i, s) in st.iter().enumerate() {
        if s.segs_left == 0 {
            on_done(i, &mut reqs[i], Ok(0));
        }
    }
    let mut runs: Vec<Run> = plan
        .iter()
        .map(|p| Run {
            done: 0,
            total: p.segs.iter().map(|s| s.len).sum(),
        })
        .collect();
    // Raw destinations per piece, taken once: the buffers stay borrowed by
    // `reqs` for the whole call and each byte belongs to one segment.
    let dests: Vec<Vec<(*mut u8, usize)>> = plan
        .iter()
        .map(|p| {
            p.segs
                .iter()
                .map(|s| (reqs[s.req].dest()[s.start..].as_mut_ptr(), s.len))
                .collect()
        })
        .collect();
    // iovec arrays must stay put while their op is in flight: one per piece.
    let mut iovs: Vec<Vec<libc::iovec>> = (0..plan.len()).map(|_| Vec::new()).collect();
    let mut retry: VecDeque<usize> = VecDeque::new();
    let mut next = 0usize;
    let mut inflight = 0usize;
    let mut failures = 0u32;
    loop {
        while inflight < depth {
            let i = match retry.pop_front() {
                Some(i) => i,
                None if next < plan.len() => {
                    next += 1;
                    next - 1
                }
                None => break,
            };
            if runs[i].total == 0 {
                finish_piece(&plan[i], &runs[i], None, reqs, &mut st, on_done);
                continue;
            }
            let v = &mut iovs[i];
            remaining_iovecs(v, &dests[i], runs[i].done);
            let off = plan[i].offset + runs[i].done as u64;
            let sqe = if v.len() == 1 {
                opcode::Read::new(types::Fd(fd), v[0].iov_base.cast(), v[0].iov_len as u32)
                    .offset(off)
                    .build()
            } else {
                opcode::Readv::new(types::Fd(fd), v.as_ptr(), v.len().min(1024) as u32)
                    .offset(off)
                    .build()
            }
            .user_data(i as u64);
            // SAFETY: the destinations are inside buffers `reqs` borrows
            // mutably for this whole call (checked against their lengths
            // above), no two segments overlap, the iovec array lives in
            // `iovs[i]` untouched until this op completes, and this
            // function does not return while any op is in flight.
            if unsafe { ring.submission().push(&sqe) }.is_err() {
                retry.push_front(i);
                break;
            }
            inflight += 1;
        }
        if inflight == 0 {
            break;
        }
        let cqes = wait_some(ring, &mut failures);
        for (i, res) in cqes {
            inflight -= 1;
            if res == -libc::EAGAIN || res == -libc::EINTR {
                retry.push_back(i);
            } else if res < 0 {
                finish_piece(&plan[i], &runs[i], Some(-res), reqs, &mut st, on_done);
            } else if res == 0 {
                finish_piece(&plan[i], &runs[i], None, reqs, &mut st, on_done);
            } else {
                runs[i].done += res as usize;
                if runs[i].done >= runs[i].total {
                    finish_piece(&plan[i], &runs[i], None, reqs, &mut st, on_done);
                } else {
                    retry.push_back(i);
                }
            }
        }
    }
}

/// Fills `v` with the parts of `dests` after the first `skip` bytes (the
/// remainder of a piece that came back short).
fn remaining_iovecs(v: &mut Vec<libc::iovec>, dests: &[(*mut u8, usize)], mut skip: usize) {
    v.clear();
    for &(ptr, len) in dests {
        if skip >= len {
            skip -= len;
            continue;
        }
        v.push(libc::iovec {
            iov_base: ptr.wrapping_add(skip).cast(),
            // One op moves at most 1 GiB; the rest follows as a short read.
            iov_len: (len - skip).min(1 << 30),
        });
        skip = 0;
    }
}

/// Submits what is queued, waits for a completion and takes every one
/// there is: (user data, result). Empty when the wait was interrupted
/// (EINTR / EAGAIN / EBUSY: the caller loops and tries again). Any other
/// failure leaves ops in flight that still write into borrowed memory, so
/// giving up is not memory-safe: retry a while, then abort.
pub fn wait_some(ring: &mut IoUring, failures: &mut u32) -> Vec<(usize, i32)> {
    if let Err(e) = ring.submit_and_wait(1) {
        if !matches!(
            e.raw_os_error(),
            Some(libc::EINTR | libc::EAGAIN | libc::EBUSY)
        ) {
            *failures += 1;
            if *failures > 10_000 {
                eprintln!("io_uring_enter keeps failing with ops in flight ({e}); aborting");
                std::process::abort();
            }
            std::thread::yield_now();
        }
        return Vec::new();
    }
    ring.completion()
        .map(|c| (c.user_data() as usize, c.result()))
        .collect()
}

/// Why [`stream_file`] stopped early.
#[derive(Debug)]
pub enum StreamError {
    /// The ring could not be set up (nothing was read).
    Setup,
    /// A read failed at this offset.
    Read(u64, std::io::Error),
}

/// Reads `file` from offset `start` to `len` in `chunk`-byte pieces (a multiple
/// of the O_DIRECT alignment), `depth` in flight, into `slots` (at least
/// `depth * chunk` bytes, aligned for O_DIRECT), handing each piece to
/// `deliver(offset, bytes)` — in file order if `ordered`, else as pieces
/// complete. `deliver` returning false stops the reading. Returns the
/// bytes delivered.
#[allow(clippy::too_many_arguments)]
pub fn stream_file(
    file: &File,
    start: u64,
    len: u64,
    chunk: usize,
    depth: u32,
    slots: &mut [u8],
    ordered: bool,
    deliver: &mut dyn FnMut(u64, &[u8]) -> bool,
) -> Result<u64, StreamError> {
    let depth = depth.max(1) as usize;
    assert!(slots.len() >= depth * chunk && chunk > 0, "slots too small");
    RING.with(|c| {
        let mut c = c.borrow_mut();
        ensure(&mut c, depth as u32).map_err(|_| StreamError::Setup)?;
        let (ring, _) = c.as_mut().expect("ring set up above");
        stream_run(
            ring,
            file.as_raw_fd(),
            start,
            len,
            chunk,
            depth,
            slots,
            ordered,
            deliver,
        )
    })
}

// Long on purpose: one submit/complete loop whose safety argument (a slot
// belongs to its op until it completes) reads best whole.
#[allow(clippy::too_many_arguments)]
fn stream_run(
    ring: &mut IoUring,
    fd: i32,
    start: u64,
    len: u64,
    chunk: usize,
    depth: usize,
    slots: &mut [u8],
    ordered: bool,
    deliver: &mut dyn FnMut(u64, &[u8]) -> bool,
) -> Result<u64, StreamError> {
    let base = slots.as_mut_ptr();
    let mut free: Vec<usize> = (0..depth).rev().collect();
    let mut off = vec![0u64; depth];
    let mut got = vec![0usize; depth];
    let mut held: std::collections::BTreeMap<u64, usize> = Default::default();
    let mut next_deliver = start;
    let mut next = start;
    let mut inflight = 0usize;
    let mut delivered = 0u64;
    let mut stop = false;
    let mut failures = 0u32;
    let mut failed: Option<(u64, std::io::Error)> = None;
    let mut resubmit: Vec<usize> = Vec::new();
    loop {
        // Queue new pieces and remainders of short ones.
        let mut to_push: Vec<usize> = std::mem::take(&mut resubmit);
        if !stop && failed.is_none() {
            while next < len {
                let Some(s) = free.pop() else { break };
                off[s] = next;
                got[s] = 0;
                next += chunk as u64;
                to_push.push(s);
            }
        }
        for s in to_push {
            let sqe = opcode::Read::new(
                types::Fd(fd),
                base.wrapping_add(s * chunk + got[s]),
                (chunk - got[s]) as u32,
            )
            .offset(off[s] + got[s] as u64)
            .build()
            .user_data(s as u64);
            // SAFETY: slot s (s*chunk .. (s+1)*chunk of `slots`, borrowed
            // mutably for this call) is owned by this op until it
            // completes: it is not in `free` and not handed to `deliver`.
            // The function does not return while ops are in flight.
            if unsafe { ring.submission().push(&sqe) }.is_err() {
                resubmit.push(s);
                continue;
            }
            inflight += 1;
        }
        if inflight == 0 {
            break;
        }
        let cqes = wait_some(ring, &mut failures);
        for (s, res) in cqes {
            inflight -= 1;
            if res == -libc::EAGAIN || res == -libc::EINTR {
                resubmit.push(s);
                continue;
            }
            if res < 0 {
                failed.get_or_insert((
                    off[s] + got[s] as u64,
                    std::io::Error::from_raw_os_error(-res),
                ));
                free.push(s);
                continue;
            }
            got[s] += res as usize;
            let end = off[s] + got[s] as u64;
            if res > 0 && got[s] < chunk && end < len {
                resubmit.push(s);
                continue;
            }
            let n = (got[s] as u64).min(len.saturating_sub(off[s])) as usize;
            let mut ready = vec![(s, n)];
            if ordered {
                held.insert(off[s], s);
                ready.clear();
                while let Some(s2) = held.remove(&next_deliver) {
                    let n2 = (got[s2] as u64).min(len.saturating_sub(off[s2])) as usize;
                    ready.push((s2, n2));
                    next_deliver += chunk as u64;
                }
            }
            for (s2, n2) in ready {
                if !stop && failed.is_none() {
                    // SAFETY: slot s2 is complete (no op writes it) and lies
                    // inside `slots`; other slots may be written meanwhile,
                    // but this view covers only s2.
                    let view = unsafe { std::slice::from_raw_parts(base.add(s2 * chunk), n2) };
                    if deliver(off[s2], view) {
                        delivered += n2 as u64;
                    } else {
                        stop = true;
                    }
                }
                free.push(s2);
            }
        }
    }
    match failed {
        Some((o, e)) => Err(StreamError::Read(o, e)),
        None => Ok(delivered),
    }
}
