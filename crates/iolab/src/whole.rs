//! Reading a whole file as fast as the machine allows, handing each chunk to
//! a callback in whatever order the chunks complete.
//!
//! Cold files are read with `O_DIRECT` through io_uring (1 MiB chunks, 8 in
//! flight: enough to keep a fast SSD's queue busy without the page cache's
//! copy); files mostly in the page cache are read buffered through the same
//! ring. Where io_uring is unavailable, or `IOLAB_FORCE_PREAD=1` is set, it
//! falls back to `pread`.

use crate::buf::BufId;
use crate::cache;
use crate::engine::{self, EngineConfig, EngineFile, EngineKind, EngineOpts, FileId, Op, OpKind};
use crate::error::{Error, Result};
use crate::file::{self, OpenSpec};
use std::path::Path;

/// How [`read_whole`] read the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WholeStats {
    /// Bytes handed to the callback.
    pub bytes: u64,
    /// Engine used.
    pub engine: EngineKind,
    /// Whether O_DIRECT was used.
    pub direct: bool,
}

/// Environment variable that forces the `pread` fallback.
pub const FORCE_PREAD_ENV: &str = "IOLAB_FORCE_PREAD";

/// How to read a whole file: piece size, pieces in flight, page cache or
/// not, and whether chunks must reach the callback in file order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Piece size, bytes (a multiple of 4096).
    pub chunk: usize,
    /// Pieces in flight.
    pub depth: u32,
    /// `Some(true)`: O_DIRECT; `Some(false)`: page cache; `None`: O_DIRECT
    /// when less than half the file is cached.
    pub direct: Option<bool>,
    /// Hand chunks to the callback in file order (for `cat`); otherwise in
    /// completion order.
    pub ordered: bool,
}

impl Default for Plan {
    /// 1 MiB pieces, 8 in flight, O_DIRECT when cold, completion order.
    fn default() -> Self {
        Plan {
            chunk: 1 << 20,
            depth: 8,
            direct: None,
            ordered: false,
        }
    }
}

/// Reads all of `path`, calling `f(offset, bytes)` for each chunk (chunks
/// arrive in completion order, not file order).
pub fn read_whole(path: &Path, f: &mut dyn FnMut(u64, &[u8])) -> Result<WholeStats> {
    read_whole_plan(path, &Plan::default(), f)
}

/// Reads all of `path` as `plan` says, calling `f(offset, bytes)` per chunk.
pub fn read_whole_plan(
    path: &Path,
    plan: &Plan,
    f: &mut dyn FnMut(u64, &[u8]),
) -> Result<WholeStats> {
    let len = file::length(path)?;
    let direct = match plan.direct {
        Some(d) => d,
        None => {
            let warm = cache::residency(path, len)
                .map(|r| r.fraction() >= 0.5)
                .unwrap_or(false);
            !warm && file::dio_alignment(path).is_ok()
        }
    };
    let chunk = plan.chunk.max(4096).div_ceil(4096) * 4096;
    let depth = plan.depth.max(1);
    let force_pread = std::env::var_os(FORCE_PREAD_ENV).is_some_and(|v| v != "0");
    if !force_pread {
        match read_with(
            path,
            len,
            EngineKind::Uring,
            depth,
            chunk,
            direct,
            plan.ordered,
            f,
        ) {
            Err(Error::Unsupported { .. }) => {}
            // O_DIRECT refused by the file system: read it buffered instead.
            Err(Error::Io { .. }) if direct => {
                return read_with(
                    path,
                    len,
                    EngineKind::Uring,
                    depth,
                    chunk,
                    false,
                    plan.ordered,
                    f,
                );
            }
            r => return r,
        }
    }
    read_with(
        path,
        len,
        EngineKind::Pread,
        1,
        chunk,
        false,
        plan.ordered,
        f,
    )
}

#[allow(clippy::too_many_arguments)]
fn read_with(
    path: &Path,
    len: u64,
    kind: EngineKind,
    qd: u32,
    chunk: usize,
    direct: bool,
    ordered: bool,
    f: &mut dyn FnMut(u64, &[u8]),
) -> Result<WholeStats> {
    let fh = file::open(
        path,
        OpenSpec {
            direct,
            write: false,
        },
    )?;
    let mem_align = if direct {
        file::dio_alignment(path)?.mem
    } else {
        crate::os::page_size()
    };
    let cfg = EngineConfig {
        files: vec![EngineFile {
            path: path.to_path_buf(),
            file: fh,
            len,
        }],
        qd,
        max_len: chunk,
        mem_align,
        direct,
        opts: EngineOpts {
            access: engine::AccessHint::Sequential,
            ..Default::default()
        },
    };
    let mut eng = engine::build(kind, cfg)?;
    let mut next = 0u64;
    let mut free: Vec<u32> = (0..qd).collect();
    let mut offsets = vec![0u64; qd as usize];
    let mut done = Vec::with_capacity(qd as usize);
    let mut inflight = 0usize;
    let mut bytes = 0u64;
    let mut batch = Vec::with_capacity(qd as usize);
    // In file order: completed chunks wait here (offset -> slot, bytes).
    let mut held: std::collections::BTreeMap<u64, (u32, usize)> = Default::default();
    let mut delivered = 0u64;
    loop {
        batch.clear();
        while next < len {
            let Some(slot) = free.pop() else { break };
            offsets[slot as usize] = next;
            batch.push(Op {
                tag: slot as u64,
                kind: OpKind::Read,
                file: FileId(0),
                offset: next,
                len: chunk as u32,
                buf: BufId(slot),
            });
            next += chunk as u64;
        }
        if !batch.is_empty() {
            let n = eng.submit(&batch)?;
            inflight += n;
            for op in &batch[n..] {
                free.push(op.tag as u32);
                next = next.min(op.offset);
            }
        }
        if inflight == 0 {
            break;
        }
        done.clear();
        eng.reap(1, &mut done)?;
        for d in &done {
            inflight -= 1;
            let slot = d.tag as u32;
            let off = offsets[slot as usize];
            let n = d
                .res
                .map_err(|e| Error::io(format!("read {} at {off}", path.display()), e.into()))?
                as usize;
            let n = n.min((len - off) as usize);
            if !ordered {
                f(off, &eng.buf(BufId(slot))[..n]);
                bytes += n as u64;
                free.push(slot);
            } else {
                held.insert(off, (slot, n));
                // Deliver every chunk that is next in file order.
                while let Some((slot, n)) = held.remove(&delivered) {
                    f(delivered, &eng.buf(BufId(slot))[..n]);
                    bytes += n as u64;
                    free.push(slot);
                    delivered += chunk as u64;
                }
            }
        }
    }
    Ok(WholeStats {
        bytes,
        engine: kind,
        direct,
    })
}
