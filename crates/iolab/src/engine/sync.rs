//! The shared shell of every synchronous engine: it owns the buffers and the
//! completion list, loops over short transfers, EINTR and EAGAIN, and leaves
//! each engine file only the one system call that makes it different.

use super::{Caps, Done, Engine, EngineConfig, EngineFile, Op, OpKind};
use crate::buf::BufPool;
use crate::error::{Errno, Result};
use std::sync::atomic::Ordering;

/// One synchronous transfer primitive (pread, read, a mapping copy, ...).
pub trait SyncIo: Send {
    /// Engine name.
    const NAME: &'static str;
    /// Whether reads fill the buffer with the file's bytes.
    fn fills_buffer(&self) -> bool {
        true
    }
    /// Whether this engine can write.
    fn writes(&self) -> bool;
    /// Reads up to `buf.len()` bytes at `off` of file `fi`; 0 means end of file.
    fn read(&mut self, fi: usize, f: &EngineFile, buf: &mut [u8], off: u64)
        -> Result<usize, Errno>;
    /// Writes `buf` at `off`; returns bytes written.
    fn write(&mut self, fi: usize, f: &EngineFile, buf: &[u8], off: u64) -> Result<usize, Errno>;
}

/// A synchronous engine built from a [`SyncIo`].
pub struct SyncEngine<T: SyncIo> {
    io: T,
    files: Vec<EngineFile>,
    pool: BufPool,
    done: Vec<Done>,
}

impl<T: SyncIo> SyncEngine<T> {
    /// Wraps `io` with buffers for `cfg`.
    pub fn new(io: T, cfg: EngineConfig) -> Result<Self> {
        let pool = cfg.pool()?;
        Ok(SyncEngine {
            io,
            files: cfg.files,
            pool,
            done: Vec::with_capacity(cfg.qd.max(1) as usize),
        })
    }

    #[inline]
    fn run(&mut self, op: &Op) -> Result<u32, Errno> {
        let fi = op.file.0 as usize;
        let f = &self.files[fi];
        let buf = self.pool.slot_mut(op.buf);
        let len = op.len as usize;
        let mut moved = 0usize;
        while moved < len {
            let off = op.offset + moved as u64;
            let r = match op.kind {
                OpKind::Read => self.io.read(fi, f, &mut buf[moved..len], off),
                OpKind::Write => self.io.write(fi, f, &buf[moved..len], off),
            };
            match r {
                Ok(0) => break, // end of file
                Ok(n) => moved += n,
                // A signal asked the run to stop: a call that would block
                // again (a stalled file system) must not be retried.
                Err(Errno(libc::EINTR)) if crate::stop::stop_flag().load(Ordering::Relaxed) => {
                    return Err(Errno(libc::EINTR))
                }
                Err(Errno(libc::EINTR)) | Err(Errno(libc::EAGAIN)) => continue,
                Err(e) => return Err(e),
            }
        }
        Ok(moved as u32)
    }
}

impl<T: SyncIo> Engine for SyncEngine<T> {
    fn name(&self) -> &'static str {
        T::NAME
    }

    fn caps(&self) -> Caps {
        Caps {
            sync: true,
            writes: self.io.writes(),
            fills_buffer: self.io.fills_buffer(),
        }
    }

    fn submit(&mut self, ops: &[Op]) -> Result<usize> {
        super::check_batch(ops, self.files.len(), &self.pool)?;
        for op in ops {
            let res = self.run(op);
            self.done.push(Done { tag: op.tag, res });
        }
        Ok(ops.len())
    }

    fn reap(&mut self, _min: usize, out: &mut Vec<Done>) -> Result<usize> {
        let n = self.done.len();
        out.append(&mut self.done);
        Ok(n)
    }

    super::engine_accessors!();
}
