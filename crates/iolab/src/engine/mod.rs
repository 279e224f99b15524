//! The engine contract and the engines behind it.
//!
//! An engine moves bytes for one worker thread. The runner hands it batches of
//! [`Op`]s with [`Engine::submit`] and collects [`Done`]s with
//! [`Engine::reap`], in any order. Synchronous engines do the work inside
//! `submit` (one op in flight) and hand completions back from `reap`;
//! asynchronous engines keep up to the configured queue depth in flight. The
//! core (the runner), not the engines, owns batching and accounting.
//!
//! Engines own their buffers ([`BufPool`]), aligned for `O_DIRECT`, so that
//! io_uring can register them; the runner reaches a buffer through
//! [`Engine::buf`] to verify or fill it.

use crate::buf::{BufId, BufPool};
use crate::error::{Errno, Error, Result};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::fs::File;
use std::path::PathBuf;
use std::str::FromStr;

pub mod cq_wait;
pub mod libaio;
pub mod mmap;
pub mod null;
pub mod posixaio;
pub mod pread;
pub mod preadv2;
pub mod read;
mod ring_fd;
mod sqe;
pub mod stream;
mod sync;
mod table;
pub mod threadpool;
pub mod uring;

pub use cq_wait::SqpollWait;
pub use sync::{SyncEngine, SyncIo};
pub use table::{build, EngineDesc, EngineKind, Label, ENGINES};

/// Read or write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OpKind {
    /// Read `len` bytes at `offset` into the buffer.
    Read,
    /// Write `len` bytes of the buffer at `offset`.
    Write,
}

/// Index of a file in the engine's [`EngineConfig::files`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct FileId(pub u32);

/// One I/O request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Op {
    /// Caller's identifier, returned in the matching [`Done`].
    pub tag: u64,
    /// Read or write.
    pub kind: OpKind,
    /// Which file.
    pub file: FileId,
    /// Byte offset in the file.
    pub offset: u64,
    /// Bytes to move.
    pub len: u32,
    /// Buffer slot the bytes go to or come from.
    pub buf: BufId,
}

/// The completion of one [`Op`]: bytes moved, or the kernel's errno.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Done {
    /// The op's tag.
    pub tag: u64,
    /// Bytes moved (less than `len` only at end of file), or the error.
    pub res: std::result::Result<u32, Errno>,
}

impl Done {
    /// The completion of op `tag` from the kernel's result `res` (bytes,
    /// or a negative errno), after `moved` bytes of earlier short reads:
    /// the last step of each asynchronous engine.
    pub(crate) fn of(tag: u64, moved: u32, res: i64) -> Done {
        Done {
            tag,
            res: if res < 0 {
                Err(Errno((-res) as i32))
            } else {
                Ok(moved + res as u32)
            },
        }
    }
}

/// What an engine can do; the runner plans around it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Caps {
    /// At most one op in flight: the work happens inside `submit`.
    pub sync: bool,
    /// Can write (`OpKind::Write`).
    pub writes: bool,
    /// Fills the buffer with the bytes read, so they can be verified
    /// (false for `null` and for `mmap --mmap-touch`).
    pub fills_buffer: bool,
}

impl Caps {
    /// An asynchronous engine that reads into and writes from its buffers.
    pub const ASYNC: Caps = Caps {
        sync: false,
        writes: true,
        fills_buffer: true,
    };
}

impl EngineKind {
    /// The name the command line uses.
    pub fn name(self) -> &'static str {
        self.desc().name
    }

    /// True for engines with one op in flight (depth is threads' business).
    pub fn is_sync(self) -> bool {
        self.desc().sync
    }

    /// True for engines that can write.
    pub fn writes(self) -> bool {
        self.desc().writes
    }

    /// True for engines that can bypass the page cache.
    pub fn supports_direct(self) -> bool {
        self.desc().direct
    }
}

impl fmt::Display for EngineKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for EngineKind {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        ENGINES
            .iter()
            .find(|d| d.name == s)
            .map(|d| d.kind)
            .ok_or_else(|| {
                let names: Vec<_> = ENGINES.iter().map(|d| d.name).collect();
                format!("unknown engine '{s}' (one of {})", names.join(", "))
            })
    }
}

/// Expected access pattern, passed to the kernel as a hint where an engine
/// can (madvise for mmap, fadvise for buffered reads).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AccessHint {
    /// No hint.
    #[default]
    Normal,
    /// Sequential: read ahead aggressively.
    Sequential,
    /// Random: do not read ahead.
    Random,
}

/// io_uring setup options.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct UringOpts {
    /// Register the files (IORING_REGISTER_FILES) and use fixed-file ops.
    pub reg_files: bool,
    /// Register the buffers and use READ_FIXED / WRITE_FIXED.
    pub fixed_bufs: bool,
    /// Kernel submission-queue polling thread (IORING_SETUP_SQPOLL).
    pub sqpoll: bool,
    /// Idle time before the SQPOLL thread sleeps, ms.
    pub sqpoll_idle_ms: Option<u32>,
    /// CPU the SQPOLL thread is bound to.
    pub sqpoll_cpu: Option<u32>,
    /// Busy-poll completions (IORING_SETUP_IOPOLL; O_DIRECT only).
    pub iopoll: bool,
    /// With SQPOLL: spin on the CQ ring or sleep (`--sqpoll-wait`).
    #[serde(default, skip_serializing_if = "SqpollWait::is_auto")]
    pub sqpoll_wait: SqpollWait,
    /// Send NOPs instead of reads and writes (`--uring-nop`): each names
    /// the op's file and buffer (registered ones with `reg_files` and
    /// `fixed_bufs`) and completes with the op's length, as t/io_uring's
    /// `-N1` does, so the runner and the ring are measured without I/O.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub nop: bool,
}

/// Engine options beyond depth and buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct EngineOpts {
    /// Polled completion where the device has poll queues: RWF_HIPRI for
    /// preadv2, IORING_SETUP_IOPOLL for uring (fio's `hipri`).
    pub hipri: bool,
    /// mmap: only fault the pages in (touch one byte per page), copy nothing.
    pub mmap_touch: bool,
    /// Access hint for the kernel.
    pub access: AccessHint,
    /// io_uring options.
    pub uring: UringOpts,
    /// threadpool: helper threads (0: one per op in flight).
    pub pool_threads: u32,
    /// Memory the buffers live in (`--mem`).
    #[serde(default)]
    pub mem: crate::mem::MemKind,
    /// Bytes past the alignment where buffer slots start (`--buf-offset`);
    /// `None`: [`crate::buf::buffered_slot_offset`] (measured on this
    /// machine) for buffered I/O, 0
    /// for O_DIRECT.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buf_offset: Option<u32>,
}

/// One file an engine works on.
#[derive(Debug)]
pub struct EngineFile {
    /// Where it is (for messages).
    pub path: PathBuf,
    /// The open file, opened as the run needs (O_DIRECT, writable).
    pub file: File,
    /// Its length in bytes.
    pub len: u64,
}

/// Everything needed to build an engine for one worker thread.
#[derive(Debug)]
pub struct EngineConfig {
    /// The files; [`FileId`] indexes this.
    pub files: Vec<EngineFile>,
    /// Most ops in flight (1 for synchronous engines).
    pub qd: u32,
    /// Largest op length: the size of each buffer slot.
    pub max_len: usize,
    /// Buffer alignment (the O_DIRECT memory alignment, at least a page).
    pub mem_align: usize,
    /// Files are open with O_DIRECT.
    pub direct: bool,
    /// Options.
    pub opts: EngineOpts,
}

impl EngineConfig {
    /// The buffer pool this configuration calls for: one slot per op in flight.
    pub fn pool(&self) -> Result<BufPool> {
        self.pool_aligned(self.direct)
    }

    /// [`EngineConfig::pool`], with slots that start on their alignment
    /// unless `--buf-offset` says otherwise when `aligned` (an engine
    /// whose kernel copy goes page by page, as into registered buffers).
    pub fn pool_aligned(&self, aligned: bool) -> Result<BufPool> {
        let offset = match self.opts.buf_offset {
            Some(o) => o as usize,
            None if aligned => 0,
            None => crate::buf::buffered_slot_offset(),
        };
        BufPool::with_layout(
            self.qd.max(1) as usize,
            self.max_len,
            self.mem_align,
            self.opts.mem,
            offset,
        )
    }
}

/// Counters an engine keeps about how it talked to the kernel, so tests and
/// reports can see that an option really took effect.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EngineStats {
    /// Ops issued with a fixed-buffer opcode (READ_FIXED / WRITE_FIXED).
    pub fixed_buf_ops: u64,
    /// Ops issued against a registered file.
    pub fixed_file_ops: u64,
    /// System calls made to submit or wait (io_uring_enter, io_submit, ...).
    pub enter_calls: u64,
    /// Waits for completions met by spinning on the CQ ring (SQPOLL).
    #[serde(default)]
    pub spin_waits: u64,
    /// Spins given up because the SQ thread was getting no CPU (the wait
    /// went on sleeping).
    #[serde(default)]
    pub starved_spins: u64,
}

/// Checks a batch before any of it starts: every op names an existing file
/// and buffer slot and fits in its slot. Engines call this first in
/// `submit`, so a bad op is an error, never an overrun or a panic, and the
/// engine stays usable.
pub fn check_batch(ops: &[Op], files: usize, pool: &BufPool) -> Result<()> {
    for op in ops {
        if op.file.0 as usize >= files {
            return Err(Error::Invalid(format!(
                "op {}: no file {} (the engine has {files})",
                op.tag, op.file.0
            )));
        }
        if op.buf.0 as usize >= pool.count() {
            return Err(Error::Invalid(format!(
                "op {}: no buffer slot {} (the engine has {})",
                op.tag,
                op.buf.0,
                pool.count()
            )));
        }
        if op.len as usize > pool.slot_len() {
            return Err(Error::Invalid(format!(
                "op {}: {} bytes do not fit a {}-byte buffer slot",
                op.tag,
                op.len,
                pool.slot_len()
            )));
        }
    }
    Ok(())
}

/// The contract every engine keeps.
pub trait Engine: Send {
    /// The engine's command-line name.
    fn name(&self) -> &'static str;
    /// What it can do.
    fn caps(&self) -> Caps;
    /// Starts `ops`; returns how many were accepted (the rest must be
    /// offered again after a `reap`). Each op's `buf` must be a distinct
    /// slot not in flight.
    fn submit(&mut self, ops: &[Op]) -> Result<usize>;
    /// Appends completions to `out`, waiting until at least `min` are there
    /// (never more than are in flight); returns how many were appended.
    fn reap(&mut self, min: usize, out: &mut Vec<Done>) -> Result<usize>;
    /// `submit` then `reap(min)`, as one step where the engine can do both
    /// in one system call (io_uring). Returns (accepted, reaped).
    fn submit_and_reap(
        &mut self,
        ops: &[Op],
        min: usize,
        out: &mut Vec<Done>,
    ) -> Result<(usize, usize)> {
        let n = self.submit(ops)?;
        let m = self.reap(min, out)?;
        Ok((n, m))
    }
    /// The engine's buffer slots.
    fn pool(&self) -> &BufPool;
    /// The engine's buffer slots, mutably.
    fn pool_mut(&mut self) -> &mut BufPool;
    /// The bytes of a buffer slot (read results, or data to write).
    fn buf(&self, id: BufId) -> &[u8] {
        self.pool().slot(id)
    }
    /// A buffer slot, mutably (to fill data before a write).
    fn buf_mut(&mut self, id: BufId) -> &mut [u8] {
        self.pool_mut().slot_mut(id)
    }
    /// How the engine talked to the kernel so far.
    fn stats(&self) -> EngineStats {
        EngineStats::default()
    }
}

/// The accessors every engine writes the same way: its buffer slots are in
/// a `pool` field and (with `stats`) its counters in a `stats` field.
macro_rules! engine_accessors {
    () => {
        fn pool(&self) -> &$crate::buf::BufPool {
            &self.pool
        }

        fn pool_mut(&mut self) -> &mut $crate::buf::BufPool {
            &mut self.pool
        }
    };
    (stats) => {
        $crate::engine::engine_accessors!();

        fn stats(&self) -> $crate::engine::EngineStats {
            self.stats
        }
    };
}
pub(crate) use engine_accessors;

/// Reaps with `reap_one` until `in_flight` says nothing is left, giving up
/// after a million failed tries. The kernel may still write into the
/// buffer of an op in flight, so an asynchronous engine calls this in
/// `drop`, before its buffer pool is freed.
pub(crate) fn drain_in_flight<E>(
    eng: &mut E,
    in_flight: impl Fn(&E) -> usize,
    mut reap_one: impl FnMut(&mut E, &mut Vec<Done>) -> bool,
) {
    let mut sink = Vec::new();
    let mut failures = 0;
    while in_flight(eng) > 0 && failures < 1_000_000 {
        if !reap_one(eng, &mut sink) {
            failures += 1;
        }
        sink.clear();
    }
}
