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

const CHUNK: usize = 1 << 20;
const DEPTH: u32 = 8;

/// Reads all of `path`, calling `f(offset, bytes)` for each chunk (chunks
/// arrive in completion order, not file order).
pub fn read_whole(path: &Path, f: &mut dyn FnMut(u64, &[u8])) -> Result<WholeStats> {
    let len = file::length(path)?;
    let warm = cache::residency(path, len)
        .map(|r| r.fraction() >= 0.5)
        .unwrap_or(false);
    let align = file::dio_alignment(path).ok();
    let direct = !warm && align.is_some();
    let force_pread = std::env::var_os(FORCE_PREAD_ENV).is_some_and(|v| v != "0");
    if !force_pread {
        match read_with(path, len, EngineKind::Uring, DEPTH, direct, f) {
            Err(Error::Unsupported { .. }) => {}
            // O_DIRECT refused by the file system: read it buffered instead.
            Err(Error::Io { .. }) if direct => {
                return read_with(path, len, EngineKind::Uring, DEPTH, false, f);
            }
            r => return r,
        }
    }
    read_with(path, len, EngineKind::Pread, 1, false, f)
}

fn read_with(
    path: &Path,
    len: u64,
    kind: EngineKind,
    qd: u32,
    direct: bool,
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
        max_len: CHUNK,
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
                len: CHUNK as u32,
                buf: BufId(slot),
            });
            next += CHUNK as u64;
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
            f(off, &eng.buf(BufId(slot))[..n]);
            bytes += n as u64;
            free.push(slot);
        }
    }
    Ok(WholeStats {
        bytes,
        engine: kind,
        direct,
    })
}
