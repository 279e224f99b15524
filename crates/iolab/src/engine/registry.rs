//! From an [`EngineKind`] to a running engine: the one place that knows
//! every engine (the contract in `mod.rs` knows none of them).

use super::sync::SyncEngine;
use super::{
    libaio, mmap, null, posixaio, pread, preadv2, read, stream, threadpool, uring, Engine,
    EngineConfig, EngineKind,
};
use crate::error::{Error, Result};

/// Builds engine `kind` for one worker.
pub fn build(kind: EngineKind, cfg: EngineConfig) -> Result<Box<dyn Engine>> {
    if kind.is_sync() && cfg.qd > 1 {
        return Err(Error::Invalid(format!(
            "--qd {}: engine {kind} is synchronous (one op in flight per thread); use --threads for parallelism, or --engine uring",
            cfg.qd
        )));
    }
    if cfg.direct && !kind.supports_direct() {
        return Err(Error::Invalid(format!(
            "--direct: engine {kind} reads through the page cache and cannot use O_DIRECT"
        )));
    }
    Ok(match kind {
        EngineKind::Read => Box::new(SyncEngine::new(read::ReadIo::new(&cfg), cfg)?),
        EngineKind::Pread => Box::new(SyncEngine::new(pread::PreadIo, cfg)?),
        EngineKind::Preadv2 => Box::new(SyncEngine::new(preadv2::Preadv2Io::new(&cfg), cfg)?),
        EngineKind::Stream => Box::new(SyncEngine::new(stream::StreamIo::new(&cfg)?, cfg)?),
        EngineKind::Mmap => Box::new(SyncEngine::new(mmap::MmapIo::new(&cfg)?, cfg)?),
        EngineKind::Uring => Box::new(uring::Uring::new(cfg)?),
        EngineKind::Libaio => Box::new(libaio::Libaio::new(cfg)?),
        EngineKind::Posixaio => Box::new(posixaio::PosixAio::new(cfg)?),
        EngineKind::Threadpool => Box::new(threadpool::ThreadPool::new(cfg)?),
        EngineKind::Null => Box::new(null::Null::new(cfg)?),
    })
}
