//! `libaio`: Linux native AIO through the raw system calls (io_setup,
//! io_submit, io_getevents, io_destroy); no C library needed. One io_submit
//! per batch, io_getevents waits for what the runner asks. Linux AIO is only
//! asynchronous for O_DIRECT: with buffered I/O, io_submit does the read
//! itself before returning ([`buffered_warning`]).

use super::{Caps, Done, Engine, EngineConfig, EngineFile, EngineStats, Op, OpKind};
use crate::buf::BufPool;
use crate::error::{Error, Result};
use std::os::fd::AsRawFd;

/// The kernel's `struct iocb` (include/uapi/linux/aio_abi.h), little-endian layout.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Iocb {
    aio_data: u64,
    aio_key: u32,
    aio_rw_flags: i32,
    aio_lio_opcode: u16,
    aio_reqprio: i16,
    aio_fildes: u32,
    aio_buf: u64,
    aio_nbytes: u64,
    aio_offset: i64,
    aio_reserved2: u64,
    aio_flags: u32,
    aio_resfd: u32,
}

/// The kernel's `struct io_event`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct IoEvent {
    data: u64,
    obj: u64,
    res: i64,
    res2: i64,
}

const IOCB_CMD_PREAD: u16 = 0;
const IOCB_CMD_PWRITE: u16 = 1;

// The layouts must match the kernel ABI exactly.
const _: () = assert!(std::mem::size_of::<Iocb>() == 64);
const _: () = assert!(std::mem::size_of::<IoEvent>() == 32);

/// The warning to show when Linux AIO is used without O_DIRECT.
pub fn buffered_warning(direct: bool) -> Option<&'static str> {
    (!direct).then_some(
        "libaio without --direct runs synchronously: io_submit reads through the page cache before it returns",
    )
}

#[derive(Clone, Copy)]
struct Slot {
    op: Op,
    moved: u32,
}

/// The Linux AIO engine.
pub struct Libaio {
    ctx: libc::c_ulong,
    files: Vec<EngineFile>,
    pool: BufPool,
    /// One control block per slot; boxed so their addresses stay put while
    /// the kernel holds them.
    iocbs: Box<[Iocb]>,
    slots: Vec<Option<Slot>>,
    free: Vec<u32>,
    inflight: usize,
    events: Vec<IoEvent>,
    ptrs: Vec<*mut Iocb>,
    stats: EngineStats,
}

// SAFETY: the raw pointers in `ptrs` point into `iocbs`, owned by the same
// struct; the AIO context belongs to whichever thread owns the engine.
unsafe impl Send for Libaio {}

impl Libaio {
    /// Sets up an AIO context of `qd` events.
    pub fn new(cfg: EngineConfig) -> Result<Self> {
        let qd = cfg.qd.max(1) as usize;
        let mut ctx: libc::c_ulong = 0;
        // SAFETY: io_setup writes the new context id into `ctx`, a valid u64.
        let r = unsafe {
            libc::syscall(
                libc::SYS_io_setup,
                qd as libc::c_long,
                &mut ctx as *mut libc::c_ulong,
            )
        };
        if r < 0 {
            let e = std::io::Error::last_os_error();
            return Err(match e.raw_os_error() {
                Some(libc::EAGAIN) => Error::Unsupported {
                    feature: "--engine libaio".into(),
                    why: format!(
                        "io_setup({qd}) exceeds the system's AIO event limit (/proc/sys/fs/aio-max-nr); lower --qd or --threads"
                    ),
                },
                Some(libc::ENOSYS) => Error::Unsupported {
                    feature: "--engine libaio".into(),
                    why: "this kernel has no Linux AIO (CONFIG_AIO off)".into(),
                },
                _ => Error::io("io_setup", e),
            });
        }
        Ok(Libaio {
            ctx,
            pool: cfg.pool()?,
            files: cfg.files,
            iocbs: vec![Iocb::default(); qd].into_boxed_slice(),
            slots: vec![None; qd],
            free: (0..qd as u32).rev().collect(),
            inflight: 0,
            events: vec![IoEvent::default(); qd],
            ptrs: Vec::with_capacity(qd),
            stats: EngineStats::default(),
        })
    }

    /// Fills slot `idx`'s control block for the op's unmoved remainder.
    fn prep(&mut self, idx: u32) -> *mut Iocb {
        let s = self.slots[idx as usize].expect("slot in flight");
        let buf = self.pool.slot_mut(s.op.buf)[s.moved as usize..].as_mut_ptr();
        let cb = &mut self.iocbs[idx as usize];
        *cb = Iocb {
            aio_data: idx as u64,
            aio_lio_opcode: match s.op.kind {
                OpKind::Read => IOCB_CMD_PREAD,
                OpKind::Write => IOCB_CMD_PWRITE,
            },
            aio_fildes: self.files[s.op.file.0 as usize].file.as_raw_fd() as u32,
            aio_buf: buf as u64,
            aio_nbytes: (s.op.len - s.moved) as u64,
            aio_offset: (s.op.offset + s.moved as u64) as i64,
            ..Iocb::default()
        };
        cb as *mut Iocb
    }

    /// io_submit of `self.ptrs`; returns how many the kernel took.
    fn io_submit(&mut self) -> Result<usize> {
        let mut done = 0;
        while done < self.ptrs.len() {
            self.stats.enter_calls += 1;
            // SAFETY: ptrs[done..] point to initialised iocbs in self.iocbs,
            // whose buffers live in self.pool; both outlive the I/O (Drop
            // waits for every op in flight).
            let r = unsafe {
                libc::syscall(
                    libc::SYS_io_submit,
                    self.ctx,
                    (self.ptrs.len() - done) as libc::c_long,
                    self.ptrs.as_mut_ptr().add(done),
                )
            };
            if r < 0 {
                let e = std::io::Error::last_os_error();
                match e.raw_os_error() {
                    Some(libc::EINTR) => continue,
                    // No room now: the caller gets back what was not taken.
                    Some(libc::EAGAIN) => break,
                    _ if done > 0 => break,
                    _ => return Err(Error::io("io_submit", e)),
                }
            }
            if r == 0 {
                break;
            }
            done += r as usize;
        }
        Ok(done)
    }

    /// io_getevents for at least `min` events (or none, without waiting,
    /// when `min` is 0); returns how many landed in `self.events`.
    fn getevents(&mut self, min: usize) -> Result<usize> {
        let mut zero = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        let timeout: *mut libc::timespec = if min == 0 {
            &mut zero
        } else {
            std::ptr::null_mut()
        };
        loop {
            self.stats.enter_calls += 1;
            // SAFETY: events has room for `inflight <= qd` entries; the
            // timeout is null (wait) or points at a live zero timespec.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_io_getevents,
                    self.ctx,
                    min as libc::c_long,
                    self.inflight as libc::c_long,
                    self.events.as_mut_ptr(),
                    timeout,
                )
            };
            if r >= 0 {
                return Ok(r as usize);
            }
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINTR) {
                return Err(Error::io("io_getevents", e));
            }
        }
    }

    /// Turns the first `n` events into completions (resubmitting short
    /// transfers and EAGAIN); returns the completions appended.
    fn complete(&mut self, n: usize, out: &mut Vec<Done>) -> Result<usize> {
        let mut got = 0;
        self.ptrs.clear();
        for k in 0..n {
            let ev = self.events[k];
            let idx = ev.data as u32;
            let mut s = self.slots[idx as usize].expect("event for a live slot");
            let res = ev.res;
            let retry = res == -(libc::EAGAIN as i64) || res == -(libc::EINTR as i64);
            if retry || (res > 0 && s.moved + (res as u32) < s.op.len) {
                if !retry {
                    s.moved += res as u32;
                    self.slots[idx as usize] = Some(s);
                }
                let p = self.prep(idx);
                self.ptrs.push(p);
                continue;
            }
            out.push(Done::of(s.op.tag, s.moved, res));
            self.slots[idx as usize] = None;
            self.free.push(idx);
            self.inflight -= 1;
            got += 1;
        }
        while !self.ptrs.is_empty() {
            let taken = self.io_submit()?;
            self.ptrs.drain(..taken);
        }
        Ok(got)
    }
}

impl Engine for Libaio {
    fn name(&self) -> &'static str {
        "libaio"
    }

    fn caps(&self) -> Caps {
        Caps::ASYNC
    }

    fn submit(&mut self, ops: &[Op]) -> Result<usize> {
        super::check_batch(ops, self.files.len(), &self.pool)?;
        self.ptrs.clear();
        let mut taken_slots = Vec::with_capacity(ops.len());
        for op in ops {
            let Some(idx) = self.free.pop() else { break };
            self.slots[idx as usize] = Some(Slot { op: *op, moved: 0 });
            let p = self.prep(idx);
            self.ptrs.push(p);
            taken_slots.push(idx);
        }
        let n = self.io_submit()?;
        // Give back the slots of ops the kernel did not take.
        for &idx in taken_slots[n..].iter().rev() {
            self.slots[idx as usize] = None;
            self.free.push(idx);
        }
        self.inflight += n;
        Ok(n)
    }

    fn reap(&mut self, min: usize, out: &mut Vec<Done>) -> Result<usize> {
        let min = min.min(self.inflight);
        if self.inflight == 0 {
            return Ok(0);
        }
        if min == 0 {
            let n = self.getevents(0)?;
            return self.complete(n, out);
        }
        let mut got = 0;
        while got < min {
            let n = self.getevents((min - got).min(self.inflight))?;
            got += self.complete(n, out)?;
        }
        Ok(got)
    }

    super::engine_accessors!(stats);
}

impl Drop for Libaio {
    fn drop(&mut self) {
        // The kernel may still write into the pool: wait for every op.
        super::drain_in_flight(self, |e| e.inflight, |e, sink| e.reap(1, sink).is_ok());
        // SAFETY: the context is ours and nothing is in flight any more.
        unsafe { libc::syscall(libc::SYS_io_destroy, self.ctx) };
    }
}
