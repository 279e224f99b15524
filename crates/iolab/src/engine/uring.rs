//! `uring`: io_uring with up to `qd` ops in flight. Each `submit` pushes one
//! batch of SQEs and makes one `io_uring_enter`; `reap` drains the CQ and
//! waits in the kernel only for what the runner needs. Short transfers and
//! EAGAIN are resubmitted for the remainder. Options: registered files,
//! fixed (registered) buffers, SQPOLL, IOPOLL.
//!
//! The ring is set up as t/io_uring sets up its own: single-issuer with
//! deferred and cooperative task work where the kernel has them (6.1+),
//! each worker owning its ring, so completions run in the worker's own
//! context at reap time instead of interrupting it.
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
use super::ring_fd::EnterFd;
use super::sqe::Shape;
use super::{Caps, Done, Engine, EngineConfig, EngineFile, EngineStats, Op, OpKind};
use crate::buf::BufPool;
use crate::error::{Error, Result};
use io_uring::{opcode, squeue, EnterFlags, IoUring, Probe};
use std::os::fd::AsRawFd;

/// An op in flight, kept in the slot of its buffer: ops in flight have
/// distinct buffers, so the buffer's index is the op's key (and its SQE's
/// user_data), and no free list is needed.
#[derive(Clone, Copy)]
struct Live {
    op: Op,
    /// The slot's address, as the SQEs point at it.
    addr: u64,
    /// Bytes already moved (for short-transfer resubmission).
    moved: u32,
    /// An op is in flight in this slot.
    busy: bool,
}

/// The io_uring engine.
pub struct Uring {
    // Field order matters for Drop: the ring's registration goes first, the
    // ring before the buffers.
    enter_fd: EnterFd,
    ring: IoUring,
    /// The files, open for as long as the SQEs name their descriptors.
    files: Vec<EngineFile>,
    /// Each file as its SQEs name it: its index among the registered files,
    /// or its descriptor.
    fds: Vec<i32>,
    pool: BufPool,
    /// Per buffer slot: its address and the op in flight there.
    live: Vec<Live>,
    inflight: usize,
    /// What every SQE shares.
    shape: Shape,
    /// SQEs pushed and not yet handed to the kernel.
    queued: u32,
    /// Slots whose op goes again (EAGAIN, a short transfer), pushed once
    /// the CQ is drained.
    again: Vec<u32>,
    /// Fixed buffers, registered files (for the counters).
    fixed: [bool; 2],
    sqpoll: bool,
    iopoll: bool,
    /// With SQPOLL: whether waits spin on the CQ ring (see `cq_wait`).
    spinner: Spinner,
    stats: EngineStats,
}

/// The SQE for what is left of `l`'s op, on file `fd` (as the SQE names
/// it); its key is its buffer slot.
#[inline]
fn sqe(shape: &Shape, fd: i32, l: &Live) -> squeue::Entry {
    let op = &l.op;
    shape.sqe(
        op.kind == OpKind::Write,
        fd,
        op.offset + l.moved as u64,
        l.addr + l.moved as u64,
        op.len - l.moved,
        op.buf.0 as u16,
        op.buf.0 as u64,
    )
}

/// Whether a completion ends its op: done, failed, or at end of file;
/// otherwise (EAGAIN, EINTR, a short transfer) the rest goes again.
#[inline]
fn finished(l: &Live, res: i32) -> bool {
    if res > 0 {
        l.moved + res as u32 >= l.op.len
    } else {
        res != -libc::EAGAIN && res != -libc::EINTR
    }
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
            // No interrupting task work (COOP_TASKRUN), as fio sets it for
            // every ring; with DEFER_TASKRUN it only matters for the task
            // work the kernel does not defer.
            b.setup_no_sqarray().setup_coop_taskrun();
            if !u.sqpoll {
                // DEFER_TASKRUN is refused with SQPOLL.
                b.setup_single_issuer().setup_defer_taskrun();
            }
        }
        // As many CQEs as SQEs, as t/io_uring sizes it: never more than
        // `qd` ops are in flight, so the CQ cannot overflow, and a ring half
        // the kernel's default size keeps the rest of the loop in cache.
        b.setup_cqsize(entries).build(entries)
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

/// One idle [`Live`] per buffer slot of `pool`, with the slot's address.
fn idle_slots(pool: &mut BufPool) -> Vec<Live> {
    (0..pool.count())
        .map(|i| Live {
            op: Op {
                tag: 0,
                kind: OpKind::Read,
                file: super::FileId(0),
                offset: 0,
                len: 0,
                buf: crate::buf::BufId(i as u32),
            },
            addr: pool.slot_ptr(i) as u64,
            moved: 0,
            busy: false,
        })
        .collect()
}

impl Uring {
    /// Sets up the ring, registers what the options ask (and the ring's
    /// own descriptor), and probes that the opcodes exist.
    pub fn new(cfg: EngineConfig) -> Result<Self> {
        let mut u = cfg.opts.uring;
        // As fio does: the SQ thread should not take a file reference per SQE.
        u.reg_files |= u.sqpoll;
        // fio's io_uring `hipri` is IOPOLL; iolab's --hipri means the same here.
        u.iopoll |= cfg.opts.hipri;
        if u.nop && u.iopoll {
            return Err(Error::Invalid(
                "--uring-nop: no-ops reach no device, so there is nothing to poll (drop --iopoll/--hipri)".into(),
            ));
        }
        if u.iopoll {
            check_iopoll(&cfg)?;
        }
        let qd = cfg.qd.max(1);
        let ring = setup_ring(&u, qd)?;
        probe_read_write(&ring)?;
        // The kernel copies into registered buffers page by page (one
        // bio_vec each): a slot that starts past its page makes every op
        // copy into two. Page-aligned, as t/io_uring's (measured here: 4 KiB
        // cached reads cost 15-20 % more CPU per op at +16 B).
        let mut pool = cfg.pool_aligned(cfg.direct || u.fixed_bufs)?;
        register(&ring, &u, &cfg.files, &mut pool)?;
        let fds = (cfg.files.iter().enumerate())
            .map(|(i, f)| {
                if u.reg_files {
                    i as i32
                } else {
                    f.file.as_raw_fd()
                }
            })
            .collect();
        let live = idle_slots(&mut pool);
        let shape = Shape::new(u.reg_files, u.fixed_bufs, u.nop);
        let mut eng = Uring {
            enter_fd: EnterFd::new(&ring),
            ring,
            files: cfg.files,
            fds,
            live,
            pool,
            inflight: 0,
            shape,
            queued: 0,
            again: Vec::new(),
            fixed: [u.fixed_bufs, u.reg_files],
            sqpoll: u.sqpoll,
            iopoll: u.iopoll,
            spinner: Spinner::new(u.sqpoll_wait, u.sqpoll),
            stats: EngineStats::default(),
        };
        if u.nop {
            eng.probe_nop()?;
        }
        Ok(eng)
    }

    /// Whether `io_uring_enter` goes through the registered ring descriptor
    /// (from this thread).
    pub fn ring_registered(&self) -> bool {
        self.enter_fd.is_registered()
    }

    /// Checks that this kernel's NOP takes the flags `--uring-nop` sends
    /// (an older one completes it with 0, or refuses the flags).
    fn probe_nop(&mut self) -> Result<()> {
        let Some(&fd) = self.fds.first() else {
            return Err(Error::Invalid("--uring-nop: no file to name".into()));
        };
        let len = self.pool.slot_len().min(4096) as u32;
        let e = self
            .shape
            .sqe(false, fd, 0, self.live[0].addr, len, 0, u64::MAX);
        // SAFETY: a NOP moves no bytes; its buffer index names slot 0 of the
        // pool, which outlives the ring.
        if unsafe { self.ring.submission().push(&e) }.is_err() {
            return Err(Error::Invalid("--uring-nop: the ring is full".into()));
        }
        self.queued += 1;
        let res = loop {
            self.enter(1)?;
            if let Some(c) = self.ring.completion().next() {
                break c.result();
            }
        };
        if res != len as i32 {
            return Err(Error::Unsupported {
                feature: "--uring-nop".into(),
                why: format!("this kernel's io_uring NOP does not name a file and buffer and return a chosen result (Linux 6.13+); a test NOP returned {res}"),
            });
        }
        Ok(())
    }

    /// Pushes `ops` while the SQ has room and their buffer slots are free;
    /// returns how many. A bad op (no such file or slot, too long) pushes
    /// nothing of the batch and is an error.
    fn push_ops(&mut self, ops: &[Op]) -> Result<usize> {
        let room = {
            let sq = self.ring.submission();
            sq.capacity() - sq.len()
        };
        let ops = self.claim(&ops[..ops.len().min(room)])?;
        let shape = self.shape;
        let mut sq = self.ring.submission();
        for op in ops {
            let fd = self.fds[op.file.0 as usize];
            let addr = self.live[op.buf.0 as usize].addr;
            let (key, write) = (op.buf.0, op.kind == OpKind::Write);
            let e = shape.sqe(write, fd, op.offset, addr, op.len, key as u16, key as u64);
            // SAFETY: the entry points into slot memory owned by self.pool,
            // which outlives the op (Drop drains all ops before the pool is
            // freed), and the slot is not reused until its completion is
            // reaped (`busy`). There is room: checked above.
            let _ = unsafe { sq.push(&e) };
        }
        drop(sq);
        let n = ops.len();
        self.queued += n as u32;
        self.inflight += n;
        self.stats.fixed_buf_ops += n as u64 * u64::from(self.fixed[0]);
        self.stats.fixed_file_ops += n as u64 * u64::from(self.fixed[1]);
        Ok(n)
    }

    /// Takes the slots of `ops` up to the first whose slot is busy and
    /// returns those ops; a bad op takes none and is an error.
    #[inline]
    fn claim<'o>(&mut self, ops: &'o [Op]) -> Result<&'o [Op]> {
        let slot_len = self.pool.slot_len().min(u32::MAX as usize) as u32;
        let files = self.fds.len();
        for (n, op) in ops.iter().enumerate() {
            let ok = (op.file.0 as usize) < files && op.len <= slot_len;
            let Some(l) = self.live.get_mut(op.buf.0 as usize).filter(|_| ok) else {
                return Err(self.refuse(ops, n));
            };
            if l.busy {
                return Ok(&ops[..n]);
            }
            (l.op, l.moved, l.busy) = (*op, 0, true);
        }
        Ok(ops)
    }

    /// A batch with a bad op: frees the slots of the first `n` ops (never
    /// handed over) and says what was wrong.
    #[cold]
    fn refuse(&mut self, ops: &[Op], n: usize) -> Error {
        for op in &ops[..n] {
            self.live[op.buf.0 as usize].busy = false;
        }
        super::check_batch(ops, self.files.len(), &self.pool)
            .err()
            .unwrap_or_else(|| Error::Invalid("a bad op in the batch".into()))
    }

    /// One `io_uring_enter` that hands over the queued SQEs and, with
    /// `want` > 0, waits for that many completions.
    fn enter_once(&mut self, want: usize) -> std::io::Result<()> {
        if self.sqpoll {
            // The crate's logic: a system call only to wake the SQ thread.
            self.ring.submit_and_wait(want)?;
            self.queued = 0;
            return Ok(());
        }
        let overflow = self.ring.submission().cq_overflow();
        // Deferred task work runs, and an overflowed CQ is flushed, only
        // on an enter that asks for events.
        let flags = if want > 0 || self.iopoll || overflow {
            EnterFlags::GETEVENTS.bits()
        } else {
            0
        };
        let n = self.enter_fd.enter(self.queued, want as u32, flags)?;
        self.queued -= n.min(self.queued);
        Ok(())
    }

    fn enter(&mut self, want: usize) -> Result<()> {
        loop {
            self.stats.enter_calls += 1;
            match self.enter_once(want) {
                Ok(()) => return Ok(()),
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
        if self.queued > 0 {
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

    /// Drains the CQ into `out`; returns completions appended. Ops that go
    /// again are pushed (not submitted) after the CQ is released.
    fn drain(&mut self, out: &mut Vec<Done>) -> usize {
        let before = out.len();
        for c in self.ring.completion() {
            let res = c.result();
            // Not an op's: the NOP probe's.
            let Some(l) = self.live.get_mut(c.user_data() as usize) else {
                continue;
            };
            if finished(l, res) {
                out.push(Done::of(l.op.tag, l.moved, i64::from(res)));
                l.busy = false;
            } else {
                l.moved += res.max(0) as u32;
                self.again.push(l.op.buf.0);
            }
        }
        let got = out.len() - before;
        self.inflight -= got;
        if !self.again.is_empty() {
            self.requeue();
        }
        got
    }

    /// Pushes the rest of each op in `again`, flushing the SQ to the kernel
    /// when it is full.
    fn requeue(&mut self) {
        let again = std::mem::take(&mut self.again);
        for &idx in &again {
            let l = self.live[idx as usize];
            let fd = self.fds[l.op.file.0 as usize];
            let e = sqe(&self.shape, fd, &l);
            // SAFETY: as in `push_ops`: the slot stays busy until reaped.
            while unsafe { self.ring.submission().push(&e) }.is_err() {
                let _ = self.enter(0);
            }
            self.queued += 1;
        }
        self.again = again;
        self.again.clear();
    }
}

impl Engine for Uring {
    fn name(&self) -> &'static str {
        "uring"
    }

    fn caps(&self) -> Caps {
        Caps {
            // A NOP moves no bytes.
            fills_buffer: !self.shape.nop,
            ..Caps::ASYNC
        }
    }

    fn submit(&mut self, ops: &[Op]) -> Result<usize> {
        let accepted = self.push_ops(ops)?;
        if self.queued > 0 {
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
        let accepted = self.push_ops(ops)?;
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
        if self.queued > 0 {
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
                let ok = e.enter(1).is_ok();
                e.drain(sink);
                ok
            },
        );
    }
}
