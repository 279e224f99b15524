//! `threadpool`: a synchronous primitive (pread / pwrite) served by N helper
//! threads through a queue — what many applications build by hand. The
//! runner's latency includes the hand-off both ways (queue, wake-up, reply),
//! which is exactly the cost this engine exists to show.

use super::{Caps, Done, Engine, EngineConfig, EngineStats, Op, OpKind};
use crate::buf::BufPool;
use crate::error::{Errno, Error, Result};
use crossbeam_channel::{unbounded, Receiver, Sender};
use std::os::fd::{AsRawFd, RawFd};
use std::thread::JoinHandle;

/// A request handed to a helper: where the bytes go, as raw parts.
struct Job {
    tag: u64,
    kind: OpKind,
    fd: RawFd,
    buf: *mut u8,
    len: usize,
    offset: u64,
}

// SAFETY: `buf` points into the engine's buffer pool, at a slot that no one
// else touches until the helper sends the job's completion back (the runner
// reads a slot only after its completion); the pool outlives the helpers
// (Drop joins them first).
unsafe impl Send for Job {}

/// The thread-pool engine.
pub struct ThreadPool {
    pool: BufPool,
    fds: Vec<RawFd>,
    // Keeps the descriptors open while helpers use them.
    _files: Vec<super::EngineFile>,
    tx: Option<Sender<Job>>,
    rx: Receiver<Done>,
    helpers: Vec<JoinHandle<()>>,
    inflight: usize,
    stats: EngineStats,
}

/// One positioned transfer, retried on short counts and EINTR.
fn transfer(j: &Job) -> std::result::Result<u32, Errno> {
    let mut moved = 0usize;
    while moved < j.len {
        // SAFETY: buf..buf+len is the job's slot (see `Job`); the fd is open
        // for the engine's lifetime.
        let r = unsafe {
            let p = j.buf.add(moved);
            let off = (j.offset + moved as u64) as libc::off_t;
            match j.kind {
                OpKind::Read => libc::pread(j.fd, p.cast(), j.len - moved, off),
                OpKind::Write => libc::pwrite(j.fd, p.cast(), j.len - moved, off),
            }
        };
        if r < 0 {
            let e = Errno::last();
            let stopping = crate::stop::stop_flag().load(std::sync::atomic::Ordering::Relaxed);
            if (e.0 == libc::EINTR && !stopping) || e.0 == libc::EAGAIN {
                continue;
            }
            return Err(e);
        }
        if r == 0 {
            break;
        }
        moved += r as usize;
    }
    Ok(moved as u32)
}

impl ThreadPool {
    /// Starts `opts.pool_threads` helpers (default: one per op in flight).
    pub fn new(cfg: EngineConfig) -> Result<Self> {
        let n = if cfg.opts.pool_threads == 0 {
            cfg.qd.max(1)
        } else {
            cfg.opts.pool_threads
        };
        let (tx, jobs) = unbounded::<Job>();
        let (done_tx, rx) = unbounded::<Done>();
        let mut helpers = Vec::new();
        for i in 0..n {
            let jobs = jobs.clone();
            let done_tx = done_tx.clone();
            let h = std::thread::Builder::new()
                .name(format!("iolab-pool-{i}"))
                .spawn(move || {
                    for j in jobs.iter() {
                        let res = transfer(&j);
                        if done_tx.send(Done { tag: j.tag, res }).is_err() {
                            break;
                        }
                    }
                })
                .map_err(|e| Error::io("spawn a thread-pool helper", e))?;
            helpers.push(h);
        }
        Ok(ThreadPool {
            pool: cfg.pool()?,
            fds: cfg.files.iter().map(|f| f.file.as_raw_fd()).collect(),
            _files: cfg.files,
            tx: Some(tx),
            rx,
            helpers,
            inflight: 0,
            stats: EngineStats::default(),
        })
    }
}

impl Engine for ThreadPool {
    fn name(&self) -> &'static str {
        "threadpool"
    }

    fn caps(&self) -> Caps {
        Caps::ASYNC
    }

    fn submit(&mut self, ops: &[Op]) -> Result<usize> {
        super::check_batch(ops, self.fds.len(), &self.pool)?;
        let tx = self.tx.as_ref().expect("helpers running");
        // At most one op per buffer slot in flight, like every engine.
        let room = self.pool.count().saturating_sub(self.inflight);
        let ops = &ops[..ops.len().min(room)];
        for op in ops {
            let buf = self.pool.slot_mut(op.buf).as_mut_ptr();
            let j = Job {
                tag: op.tag,
                kind: op.kind,
                fd: self.fds[op.file.0 as usize],
                buf,
                len: op.len as usize,
                offset: op.offset,
            };
            tx.send(j)
                .map_err(|_| Error::Invalid("thread-pool helpers are gone".into()))?;
            self.inflight += 1;
        }
        Ok(ops.len())
    }

    fn reap(&mut self, min: usize, out: &mut Vec<Done>) -> Result<usize> {
        let min = min.min(self.inflight);
        let mut got = 0;
        while got < min {
            let d = self
                .rx
                .recv()
                .map_err(|_| Error::Invalid("thread-pool helpers are gone".into()))?;
            out.push(d);
            got += 1;
        }
        while let Ok(d) = self.rx.try_recv() {
            out.push(d);
            got += 1;
        }
        self.inflight -= got;
        self.stats.enter_calls += got as u64;
        Ok(got)
    }

    super::engine_accessors!(stats);
}

impl Drop for ThreadPool {
    fn drop(&mut self) {
        // Let every job finish (helpers write into the pool), then stop them.
        let mut sink = Vec::new();
        let _ = self.reap(self.inflight, &mut sink);
        self.tx = None;
        for h in self.helpers.drain(..) {
            let _ = h.join();
        }
    }
}
