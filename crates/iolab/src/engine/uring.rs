//! `uring`: io_uring with up to `qd` ops in flight. Each `submit` pushes one
//! batch of SQEs and makes one `io_uring_enter`; `reap` drains the CQ and
//! waits in the kernel only for what the runner needs. Short transfers and
//! EAGAIN are resubmitted for the remainder. Options: registered files,
//! fixed (registered) buffers, SQPOLL, IOPOLL.
//!
//! The ring is set up single-issuer with deferred task work where the kernel
//! has it (6.1+): each worker owns its ring, and completions then run in the
//! worker's own context at reap time instead of interrupting it.
//!
//! With SQPOLL the engine follows fio's io_uring engine (compared against
//! engines/io_uring.c) where that pays: the files are always registered
//! (otherwise the kernel's SQ thread takes a file reference for every SQE),
//! the ring gets COOP_TASKRUN, and submitting is only a store to the SQ tail
//! (a system call only when the SQ thread sleeps and asks to be woken).
//! How it waits for completions is `cq_wait`'s choice: spinning on the CQ
//! ring as fio does when a core is free for it, else sleeping in
//! `io_uring_enter`.

use super::cq_wait::{Spinner, SPIN_LIMIT};
use super::{Caps, Done, Engine, EngineConfig, EngineFile, EngineStats, Op, OpKind};
use crate::buf::BufPool;
use crate::error::{Error, Result};
use io_uring::{opcode, squeue, types, IoUring, Probe};
use std::os::fd::AsRawFd;

/// What the engine remembers about an op in flight.
#[derive(Clone, Copy)]
struct Slot {
    op: Op,
    /// Bytes already moved (for short-transfer resubmission).
    moved: u32,
}

/// The io_uring engine.
pub struct Uring {
    // Field order matters for Drop: the ring goes before the buffers.
    ring: IoUring,
    files: Vec<EngineFile>,
    pool: BufPool,
    slots: Vec<Option<Slot>>,
    free: Vec<u32>,
    inflight: usize,
    reg_files: bool,
    fixed_bufs: bool,
    /// SQEs pushed since the last enter (resubmissions made while reaping).
    unsubmitted: bool,
    /// With SQPOLL: whether waits spin on the CQ ring (see `cq_wait`).
    spinner: Spinner,
    stats: EngineStats,
}

fn setup_err(feature: &str, e: std::io::Error) -> Error {
    match e.raw_os_error() {
        Some(libc::EPERM) | Some(libc::ENOSYS) => Error::Unsupported {
            feature: "--engine uring".into(),
            why: "io_uring is disabled or missing in this kernel (see /proc/sys/kernel/io_uring_disabled)".into(),
        },
        Some(libc::EINVAL) | Some(libc::EOPNOTSUPP) => Error::Unsupported {
            feature: feature.into(),
            why: format!("the kernel refused it ({e})"),
        },
        _ => Error::io(format!("io_uring setup ({feature})"), e),
    }
}

/// Polled completion needs O_DIRECT and a device with poll queues.
fn check_iopoll(cfg: &EngineConfig) -> Result<()> {
    if !cfg.direct {
        return Err(Error::Invalid(
            "--iopoll needs --direct: polled completion bypasses the page cache".into(),
        ));
    }
    for f in &cfg.files {
        if let Some(d) = crate::file::block_device_of(&f.path) {
            if d.queue_attr("io_poll").as_deref() == Some("0") {
                return Err(Error::Unsupported {
                    feature: "--iopoll".into(),
                    why: format!(
                        "device {} has no poll queues (/sys/block/{}/queue/io_poll is 0; NVMe needs the nvme.poll_queues module parameter)",
                        d.name, d.name
                    ),
                });
            }
        }
    }
    Ok(())
}

/// A ring of `qd` (rounded up to a power of two) entries with the options'
/// flags, and the modern ones where the kernel takes them.
fn setup_ring(u: &super::UringOpts, qd: u32) -> Result<IoUring> {
    let entries = qd.next_power_of_two();
    let build = |modern: bool| {
        let mut b = IoUring::builder();
        if u.sqpoll {
            b.setup_sqpoll(u.sqpoll_idle_ms.unwrap_or(1000));
            if let Some(c) = u.sqpoll_cpu {
                b.setup_sqpoll_cpu(c);
            }
        }
        if u.iopoll {
            b.setup_iopoll();
        }
        if modern {
            // As fio's own peak tool sets up its rings: no SQ index
            // array (6.6+), and for rings the worker drives itself, one
            // issuer whose completions run when it reaps (6.1+).
            b.setup_no_sqarray();
            if u.sqpoll {
                // fio's flags for an SQPOLL ring (DEFER_TASKRUN is
                // refused with SQPOLL): no interrupting task work.
                b.setup_coop_taskrun();
            } else {
                b.setup_single_issuer().setup_defer_taskrun();
            }
        }
        b.setup_cqsize(entries * 2).build(entries)
    };
    let feature = if u.sqpoll {
        "--sqpoll"
    } else if u.iopoll {
        "--iopoll"
    } else {
        "--engine uring"
    };
    // Older kernels reject these flags with EINVAL: retry with none of them.
    build(true)
        .or_else(|_| build(false))
        .map_err(|e| setup_err(feature, e))
}

/// Refuses a kernel whose io_uring lacks READ and WRITE (before 5.6).
fn probe_read_write(ring: &IoUring) -> Result<()> {
    let mut probe = Probe::new();
    if ring.submitter().register_probe(&mut probe).is_ok()
        && !(probe.is_supported(opcode::Read::CODE) && probe.is_supported(opcode::Write::CODE))
    {
        return Err(Error::Unsupported {
            feature: "--engine uring".into(),
            why: "this kernel's io_uring lacks the READ/WRITE opcodes (needs 5.6+)".into(),
        });
    }
    Ok(())
}

/// Registers the files and the buffer slots, as the options ask.
fn register(
    ring: &IoUring,
    u: &super::UringOpts,
    files: &[EngineFile],
    pool: &mut BufPool,
) -> Result<()> {
    if u.reg_files {
        let fds: Vec<_> = files.iter().map(|f| f.file.as_raw_fd()).collect();
        ring.submitter()
            .register_files(&fds)
            .map_err(|e| setup_err("--reg-files", e))?;
    }
    if u.fixed_bufs {
        let iov: Vec<libc::iovec> = (0..pool.count())
            .map(|i| libc::iovec {
                iov_base: pool.slot_ptr(i).cast(),
                iov_len: pool.slot_len(),
            })
            .collect();
        // SAFETY: the iovecs describe memory owned by the pool, which lives
        // in the engine and is dropped only after the ring (field order,
        // and Drop waits for every op in flight).
        unsafe { ring.submitter().register_buffers(&iov) }
            .map_err(|e| setup_err("--fixed-bufs", e))?;
    }
    Ok(())
}

impl Uring {
    /// Sets up the ring, registers what the options ask, and probes that
    /// the read/write opcodes exist.
    pub fn new(cfg: EngineConfig) -> Result<Self> {
        let mut u = cfg.opts.uring;
        // As fio does: the SQ thread should not take a file reference per SQE.
        u.reg_files |= u.sqpoll;
        // fio's io_uring `hipri` is IOPOLL; iolab's --hipri means the same here.
        u.iopoll |= cfg.opts.hipri;
        if u.iopoll {
            check_iopoll(&cfg)?;
        }
        let qd = cfg.qd.max(1);
        let ring = setup_ring(&u, qd)?;
        probe_read_write(&ring)?;
        let mut pool = cfg.pool()?;
        register(&ring, &u, &cfg.files, &mut pool)?;
        Ok(Uring {
            ring,
            files: cfg.files,
            pool,
            slots: vec![None; qd as usize],
            free: (0..qd).rev().collect(),
            inflight: 0,
            reg_files: u.reg_files,
            fixed_bufs: u.fixed_bufs,
            unsubmitted: false,
            spinner: Spinner::new(u.sqpoll_wait, u.sqpoll),
            stats: EngineStats::default(),
        })
    }

    /// Builds the SQE for the not-yet-moved remainder of slot `idx`.
    fn sqe(&mut self, idx: u32) -> squeue::Entry {
        let s = self.slots[idx as usize].expect("slot in flight");
        let op = s.op;
        let off = op.offset + s.moved as u64;
        let len = op.len - s.moved;
        let buf_index = op.buf.0 as u16;
        // The pointer stays valid: the pool is not touched while the op is
        // in flight (the runner only reads a slot after its completion).
        let ptr = self.pool.slot_mut(op.buf)[s.moved as usize..].as_mut_ptr();
        let fi = op.file.0 as usize;
        let raw = self.files[fi].file.as_raw_fd();
        macro_rules! with_fd {
            ($build:expr) => {
                if self.reg_files {
                    let fd = types::Fixed(op.file.0);
                    $build(fd)
                } else {
                    let fd = types::Fd(raw);
                    $build(fd)
                }
            };
        }
        let e = match (op.kind, self.fixed_bufs) {
            (OpKind::Read, false) => {
                with_fd!(|fd| opcode::Read::new(fd, ptr, len).offset(off).build())
            }
            (OpKind::Read, true) => {
                with_fd!(|fd| opcode::ReadFixed::new(fd, ptr, len, buf_index)
                    .offset(off)
                    .build())
            }
            (OpKind::Write, false) => {
                with_fd!(|fd| opcode::Write::new(fd, ptr, len).offset(off).build())
            }
            (OpKind::Write, true) => {
                with_fd!(|fd| opcode::WriteFixed::new(fd, ptr, len, buf_index)
                    .offset(off)
                    .build())
            }
        };
        self.stats.fixed_buf_ops += u64::from(self.fixed_bufs);
        self.stats.fixed_file_ops += u64::from(self.reg_files);
        e.user_data(idx as u64)
    }

    fn push(&mut self, idx: u32) -> bool {
        let e = self.sqe(idx);
        // SAFETY: the entry points into slot memory owned by self.pool, which
        // outlives the op (Drop drains all ops before the pool is freed), and
        // the slot is not reused until its completion is reaped.
        unsafe { self.ring.submission().push(&e).is_ok() }
    }

    fn enter(&mut self, want: usize) -> Result<()> {
        loop {
            self.stats.enter_calls += 1;
            match self.ring.submit_and_wait(want) {
                Ok(_) => {
                    self.unsubmitted = false;
                    return Ok(());
                }
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => {
                    if want == 0 {
                        continue;
                    }
                    // Interrupted while waiting: the caller loops and waits again.
                    return Ok(());
                }
                Err(e)
                    if e.raw_os_error() == Some(libc::EBUSY)
                        || e.raw_os_error() == Some(libc::EAGAIN) =>
                {
                    // CQ backlog: the caller drains and retries.
                    return Ok(());
                }
                Err(e) => return Err(Error::io("io_uring_enter", e)),
            }
        }
    }

    /// Waits for `want` completions by spinning on the CQ ring (the SQ
    /// thread submits; no system call unless it sleeps), for at most
    /// [`SPIN_LIMIT`]; returns completions appended.
    fn spin(&mut self, want: usize, out: &mut Vec<Done>) -> Result<usize> {
        if self.unsubmitted {
            // Only a store to the SQ tail, plus a wake-up if the SQ thread sleeps.
            self.enter(0)?;
        }
        let t0 = std::time::Instant::now();
        let mut got = 0;
        let mut turns = 0u32;
        loop {
            got += self.drain(out);
            if got >= want {
                self.stats.spin_waits += 1;
                return Ok(got);
            }
            std::hint::spin_loop();
            turns = turns.wrapping_add(1);
            if turns.is_multiple_of(256) {
                let (asleep, waiting) = {
                    let sq = self.ring.submission();
                    (sq.need_wakeup(), !sq.is_empty())
                };
                if asleep {
                    // Idle longer than --sqpoll-idle: the SQ thread slept.
                    self.enter(0)?;
                } else if waiting && t0.elapsed() > SPIN_LIMIT {
                    // Awake, yet our SQEs sat unread for the whole limit:
                    // the SQ thread is not getting a CPU (a slow device
                    // alone does not count; the SQEs would be consumed).
                    self.spinner.starved();
                    self.stats.starved_spins += 1;
                    return Ok(got);
                }
            }
        }
    }

    /// Drains the CQ into `out`; returns completions appended.
    fn drain(&mut self, out: &mut Vec<Done>) -> usize {
        let mut got = 0;
        let mut cqes: [(u64, i32); 64] = [(0, 0); 64];
        loop {
            let mut n = 0;
            for c in self.ring.completion().take(64) {
                cqes[n] = (c.user_data(), c.result());
                n += 1;
            }
            if n == 0 {
                return got;
            }
            for &(ud, res) in &cqes[..n] {
                let idx = ud as u32;
                let mut s = self.slots[idx as usize].expect("completion for a live slot");
                if res == -libc::EAGAIN || res == -libc::EINTR {
                    self.requeue(idx);
                    continue;
                }
                if res > 0 && s.moved + (res as u32) < s.op.len {
                    s.moved += res as u32;
                    self.slots[idx as usize] = Some(s);
                    self.requeue(idx);
                    continue;
                }
                out.push(Done::of(s.op.tag, s.moved, i64::from(res)));
                self.slots[idx as usize] = None;
                self.free.push(idx);
                self.inflight -= 1;
                got += 1;
            }
        }
    }

    /// Pushes as many of `ops` as there are free slots; returns how many.
    fn push_ops(&mut self, ops: &[Op]) -> usize {
        let mut accepted = 0;
        for op in ops {
            let Some(idx) = self.free.pop() else { break };
            self.slots[idx as usize] = Some(Slot { op: *op, moved: 0 });
            if !self.push(idx) {
                self.slots[idx as usize] = None;
                self.free.push(idx);
                break;
            }
            self.inflight += 1;
            accepted += 1;
        }
        accepted
    }

    fn requeue(&mut self, idx: u32) {
        while !self.push(idx) {
            // SQ full: flush it to the kernel and try again.
            let _ = self.ring.submit();
        }
        self.unsubmitted = true;
    }
}

impl Engine for Uring {
    fn name(&self) -> &'static str {
        "uring"
    }

    fn caps(&self) -> Caps {
        Caps::ASYNC
    }

    fn submit(&mut self, ops: &[Op]) -> Result<usize> {
        super::check_batch(ops, self.files.len(), &self.pool)?;
        let accepted = self.push_ops(ops);
        if accepted > 0 || self.unsubmitted {
            self.enter(0)?;
        }
        Ok(accepted)
    }

    fn submit_and_reap(
        &mut self,
        ops: &[Op],
        min: usize,
        out: &mut Vec<Done>,
    ) -> Result<(usize, usize)> {
        super::check_batch(ops, self.files.len(), &self.pool)?;
        let accepted = self.push_ops(ops);
        self.unsubmitted |= accepted > 0;
        // reap's wait is an io_uring_enter that also submits what was
        // pushed: one system call for both.
        let got = self.reap(min, out)?;
        Ok((accepted, got))
    }

    fn reap(&mut self, min: usize, out: &mut Vec<Done>) -> Result<usize> {
        let min = min.min(self.inflight);
        let mut got = self.drain(out);
        if got < min && self.spinner.on() {
            got += self.spin(min - got, out)?;
        }
        while got < min {
            self.enter(min - got)?;
            got += self.drain(out);
        }
        if self.unsubmitted {
            self.enter(0)?;
        }
        Ok(got)
    }

    super::engine_accessors!(stats);
}

impl Drop for Uring {
    fn drop(&mut self) {
        // The kernel may still write into the pool: wait for every op in
        // flight before the buffers are freed.
        super::drain_in_flight(
            self,
            |e| e.inflight,
            |e, sink| {
                let ok = e.ring.submit_and_wait(1).is_ok();
                e.drain(sink);
                ok
            },
        );
    }
}
