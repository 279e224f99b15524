//! `null`: completes every op at once without touching the kernel, so a run
//! measures iolab's own per-op cost (fio's engines/null.c plays this role).
//! It behaves as an asynchronous engine: any depth, completions on reap.

use super::{Caps, Done, Engine, EngineConfig, Op};
use crate::buf::BufPool;
use crate::error::Result;

/// The no-I/O engine.
pub struct Null {
    pool: BufPool,
    done: Vec<Done>,
}

impl Null {
    /// One small buffer slot per op in flight (ops never touch them).
    pub fn new(cfg: EngineConfig) -> Result<Self> {
        Ok(Null {
            pool: cfg.pool()?,
            done: Vec::with_capacity(cfg.qd.max(1) as usize),
        })
    }
}

impl Engine for Null {
    fn name(&self) -> &'static str {
        "null"
    }
    fn caps(&self) -> Caps {
        Caps {
            sync: false,
            writes: true,
            fills_buffer: false,
        }
    }
    #[inline]
    fn submit(&mut self, ops: &[Op]) -> Result<usize> {
        self.done.extend(ops.iter().map(|o| Done {
            tag: o.tag,
            res: Ok(o.len),
        }));
        Ok(ops.len())
    }
    #[inline]
    fn reap(&mut self, _min: usize, out: &mut Vec<Done>) -> Result<usize> {
        let n = self.done.len();
        out.append(&mut self.done);
        Ok(n)
    }
    super::engine_accessors!();
}
