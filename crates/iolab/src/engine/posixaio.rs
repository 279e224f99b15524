//! `posixaio`: POSIX AIO as glibc provides it (aio_read / aio_write /
//! aio_error / aio_return / aio_suspend). glibc runs these requests on its
//! own helper threads, so this measures that implementation, not a kernel
//! interface.

use super::{Caps, Done, Engine, EngineConfig, EngineFile, EngineStats, Op, OpKind};
use crate::buf::BufPool;
use crate::error::{Errno, Error, Result};
use std::os::fd::AsRawFd;

#[derive(Clone, Copy)]
struct Slot {
    op: Op,
    moved: u32,
}

/// The POSIX AIO engine.
pub struct PosixAio {
    files: Vec<EngineFile>,
    pool: BufPool,
    /// One control block per slot; boxed so addresses stay put while glibc
    /// holds them.
    cbs: Box<[libc::aiocb]>,
    slots: Vec<Option<Slot>>,
    free: Vec<u32>,
    /// Slots in flight, in submission order.
    live: Vec<u32>,
    list: Vec<*const libc::aiocb>,
    stats: EngineStats,
}

// SAFETY: the raw pointers in the control blocks point into `pool`, owned by
// the same struct; glibc's AIO may be driven from any thread.
unsafe impl Send for PosixAio {}

fn zeroed_cb() -> libc::aiocb {
    // SAFETY: aiocb is plain old data for which all-zero is the documented
    // initial state (the glibc manual asks callers to zero it).
    let mut cb: libc::aiocb = unsafe { std::mem::zeroed() };
    cb.aio_sigevent.sigev_notify = libc::SIGEV_NONE;
    cb
}

impl PosixAio {
    /// One control block per op in flight.
    pub fn new(cfg: EngineConfig) -> Result<Self> {
        let qd = cfg.qd.max(1) as usize;
        Ok(PosixAio {
            pool: cfg.pool()?,
            files: cfg.files,
            cbs: (0..qd).map(|_| zeroed_cb()).collect(),
            slots: vec![None; qd],
            free: (0..qd as u32).rev().collect(),
            live: Vec::with_capacity(qd),
            list: Vec::with_capacity(qd),
            stats: EngineStats::default(),
        })
    }

    /// Starts (or restarts) the unmoved remainder of slot `idx`.
    fn start(&mut self, idx: u32) -> std::result::Result<(), Errno> {
        let s = self.slots[idx as usize].expect("slot in use");
        let buf = self.pool.slot_mut(s.op.buf)[s.moved as usize..].as_mut_ptr();
        let fd = self.files[s.op.file.0 as usize].file.as_raw_fd();
        let cb = &mut self.cbs[idx as usize];
        *cb = zeroed_cb();
        cb.aio_fildes = fd;
        cb.aio_buf = buf.cast();
        cb.aio_nbytes = (s.op.len - s.moved) as usize;
        cb.aio_offset = (s.op.offset + s.moved as u64) as libc::off_t;
        self.stats.enter_calls += 1;
        // SAFETY: the control block and the buffer it points to live in
        // self (boxed slice, pool) until the request completes: Drop cancels
        // and waits for every live request.
        let r = unsafe {
            match s.op.kind {
                OpKind::Read => libc::aio_read(cb),
                OpKind::Write => libc::aio_write(cb),
            }
        };
        if r != 0 {
            return Err(Errno::last());
        }
        Ok(())
    }

    /// Moves finished requests to `out`; returns how many.
    fn collect(&mut self, out: &mut Vec<Done>) -> usize {
        let mut got = 0;
        let mut k = 0;
        while k < self.live.len() {
            let idx = self.live[k];
            let cb = &mut self.cbs[idx as usize];
            // SAFETY: cb is a live control block submitted by `start`.
            let err = unsafe { libc::aio_error(cb) };
            if err == libc::EINPROGRESS {
                k += 1;
                continue;
            }
            // SAFETY: the request has finished; aio_return reaps it once.
            let ret = unsafe { libc::aio_return(cb) };
            let mut s = self.slots[idx as usize].expect("live slot");
            if err == 0 && ret > 0 && s.moved + (ret as u32) < s.op.len {
                s.moved += ret as u32;
                self.slots[idx as usize] = Some(s);
                if self.start(idx).is_ok() {
                    k += 1;
                    continue;
                }
            }
            let res = if err != 0 {
                Err(Errno(err))
            } else {
                Ok(s.moved + ret.max(0) as u32)
            };
            out.push(Done { tag: s.op.tag, res });
            self.slots[idx as usize] = None;
            self.free.push(idx);
            self.live.swap_remove(k);
            got += 1;
        }
        got
    }

    /// Blocks until at least one live request finishes.
    fn suspend(&mut self) -> Result<()> {
        self.list.clear();
        for &idx in &self.live {
            self.list
                .push(&self.cbs[idx as usize] as *const libc::aiocb);
        }
        self.stats.enter_calls += 1;
        // SAFETY: every pointer in list refers to a live control block in
        // self.cbs; a null timeout waits without limit.
        let r = unsafe {
            libc::aio_suspend(self.list.as_ptr(), self.list.len() as i32, std::ptr::null())
        };
        if r != 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINTR) && e.raw_os_error() != Some(libc::EAGAIN) {
                return Err(Error::io("aio_suspend", e));
            }
        }
        Ok(())
    }
}

impl Engine for PosixAio {
    fn name(&self) -> &'static str {
        "posixaio"
    }

    fn caps(&self) -> Caps {
        Caps::ASYNC
    }

    fn submit(&mut self, ops: &[Op]) -> Result<usize> {
        super::check_batch(ops, self.files.len(), &self.pool)?;
        let mut n = 0;
        for op in ops {
            let Some(idx) = self.free.pop() else { break };
            self.slots[idx as usize] = Some(Slot { op: *op, moved: 0 });
            match self.start(idx) {
                Ok(()) => {
                    self.live.push(idx);
                    n += 1;
                }
                Err(Errno(libc::EAGAIN)) => {
                    self.slots[idx as usize] = None;
                    self.free.push(idx);
                    break;
                }
                Err(e) => {
                    self.slots[idx as usize] = None;
                    self.free.push(idx);
                    return Err(Error::io("aio_read", e.into()));
                }
            }
        }
        Ok(n)
    }

    fn reap(&mut self, min: usize, out: &mut Vec<Done>) -> Result<usize> {
        let min = min.min(self.live.len());
        let mut got = self.collect(out);
        while got < min {
            self.suspend()?;
            got += self.collect(out);
        }
        Ok(got)
    }

    super::engine_accessors!(stats);
}

impl Drop for PosixAio {
    fn drop(&mut self) {
        for f in &self.files {
            // SAFETY: cancelling every request on an fd we own; a null
            // control block means "all of them".
            unsafe { libc::aio_cancel(f.file.as_raw_fd(), std::ptr::null_mut()) };
        }
        super::drain_in_flight(self, |e| e.live.len(), |e, sink| e.reap(1, sink).is_ok());
    }
}
