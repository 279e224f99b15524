//! What a trace is: its reads and mappings ([`Trace`], [`TraceRead`],
//! [`TraceMapping`]), the formats it comes in ([`TraceFormat`]), the
//! [`TraceBuilder`] every parser fills and the [`TraceError`] they return.
//! The parsers, placing, stats and replay all build on this file.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

/// The system call (or block action) a recorded read came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TraceOp {
    /// `read` at the file's current offset.
    Read,
    /// `pread64`.
    Pread,
    /// `readv` at the current offset.
    Readv,
    /// `preadv`.
    Preadv,
    /// `preadv2`.
    Preadv2,
    /// The source side of `copy_file_range`.
    CopyFileRange,
    /// The source side of `sendfile`.
    Sendfile,
    /// A completed block-device read (blkparse) or an iolog `read`.
    Block,
    /// A read of unknown origin (CSV without an `op` column).
    Unknown,
}

impl TraceOp {
    /// Every op, for parsing.
    pub const ALL: [TraceOp; 9] = [
        TraceOp::Read,
        TraceOp::Pread,
        TraceOp::Readv,
        TraceOp::Preadv,
        TraceOp::Preadv2,
        TraceOp::CopyFileRange,
        TraceOp::Sendfile,
        TraceOp::Block,
        TraceOp::Unknown,
    ];

    /// The name used in the CSV `op` column.
    pub fn name(self) -> &'static str {
        match self {
            TraceOp::Read => "read",
            TraceOp::Pread => "pread64",
            TraceOp::Readv => "readv",
            TraceOp::Preadv => "preadv",
            TraceOp::Preadv2 => "preadv2",
            TraceOp::CopyFileRange => "copy_file_range",
            TraceOp::Sendfile => "sendfile",
            TraceOp::Block => "block",
            TraceOp::Unknown => "",
        }
    }

    /// Parses a CSV `op` value (`pread` is accepted for `pread64`).
    pub fn from_name(s: &str) -> Option<TraceOp> {
        if s == "pread" {
            return Some(TraceOp::Pread);
        }
        TraceOp::ALL.into_iter().find(|o| o.name() == s)
    }
}

/// One read: `len` bytes at `offset` of file number `file`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceRead {
    /// Index into [`Trace::files`].
    pub file: u32,
    /// Byte offset in the file.
    pub offset: u64,
    /// Bytes read (what the call returned, not what it asked for).
    pub len: u64,
    /// Where it came from.
    pub op: TraceOp,
    /// Recorded thread (task id) that issued it; 0 when unknown.
    pub thread: u64,
    /// Time since the trace began, ns, when recorded.
    pub t_ns: Option<u64>,
}

/// A file mapped into memory (`mmap`): its page faults are invisible to
/// strace, so the bytes the program touched through it are unknown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceMapping {
    /// Index into [`Trace::files`].
    pub file: u32,
    /// Offset of the mapping in the file.
    pub offset: u64,
    /// Length mapped.
    pub len: u64,
    /// Thread that mapped it.
    pub thread: u64,
    /// Time since the trace began, ns.
    pub t_ns: Option<u64>,
}

/// Which text format a trace is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TraceFormat {
    /// iolab CSV: `file,offset,len[,op][,thread][,t_ns]` with a header.
    Csv,
    /// fio `read_iolog` version 2 or 3.
    Iolog,
    /// `blkparse` default text output.
    Blkparse,
    /// An `strace -f -tt -T -y` log.
    Strace,
}

impl TraceFormat {
    /// Name as `--format` takes it.
    pub fn name(self) -> &'static str {
        match self {
            TraceFormat::Csv => "csv",
            TraceFormat::Iolog => "iolog",
            TraceFormat::Blkparse => "blkparse",
            TraceFormat::Strace => "strace",
        }
    }
}

impl std::str::FromStr for TraceFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "csv" => TraceFormat::Csv,
            "iolog" | "fio" => TraceFormat::Iolog,
            "blkparse" | "blktrace" => TraceFormat::Blkparse,
            "strace" => TraceFormat::Strace,
            _ => {
                return Err(format!(
                    "unknown trace format '{s}'; choose csv, iolog, blkparse or strace"
                ))
            }
        })
    }
}

/// Why a trace could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The trace file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The trace.
        path: PathBuf,
        /// The failure.
        source: std::io::Error,
    },
    /// A line of the trace is malformed.
    #[error("{name}:{line}: {msg}")]
    Parse {
        /// The trace's name.
        name: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong and what was expected.
        msg: String,
    },
    /// The first line does not say which format this is.
    #[error("{name}: cannot tell the trace format from the first line; pass --format csv|iolog|blkparse|strace")]
    Unknown {
        /// The trace's name.
        name: String,
    },
    /// Replay or placement refused something (unsafe path, missing file, ...):
    /// the user must act.
    #[error("{0}")]
    Refused(String),
    /// A replay went wrong (short read, bytes not as the pattern says).
    #[error("{0}")]
    Failed(String),
}

impl TraceError {
    /// Whether the user must change the input (exit status 2) rather
    /// than the run having failed (exit status 1).
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            TraceError::Parse { .. } | TraceError::Unknown { .. } | TraceError::Refused(_)
        )
    }

    /// A parse error at `line` of `name`.
    pub fn at(name: &str, line: usize, msg: impl Into<String>) -> TraceError {
        TraceError::Parse {
            name: name.to_string(),
            line,
            msg: msg.into(),
        }
    }
}

/// A recorded trace: files, reads in recorded order, mappings, and what was
/// left out.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Trace {
    /// The format it was read from.
    pub format: TraceFormat,
    /// File paths as recorded (absolute or relative), indexed by
    /// [`TraceRead::file`].
    pub files: Vec<String>,
    /// Reads, in recorded order (per thread, the order the thread issued them).
    pub reads: Vec<TraceRead>,
    /// Files mapped with mmap.
    pub mappings: Vec<TraceMapping>,
    /// Reads left out, by kind (`pipe`, `socket`, `tty`, `proc`, ...).
    pub skipped: BTreeMap<String, u64>,
}

impl Trace {
    /// An empty trace of `format`.
    pub fn new(format: TraceFormat) -> Trace {
        Trace {
            format,
            files: Vec::new(),
            reads: Vec::new(),
            mappings: Vec::new(),
            skipped: BTreeMap::new(),
        }
    }

    /// The bytes all reads ask for.
    pub fn total_bytes(&self) -> u64 {
        self.reads.iter().map(|r| r.len).sum()
    }

    /// The size file `i` must have for every read and mapping of it: the
    /// largest end of any of them.
    pub fn file_size(&self, i: u32) -> u64 {
        self.file_sizes().get(i as usize).copied().unwrap_or(0)
    }

    /// Sizes of all files (see [`Trace::file_size`]), in one pass.
    pub fn file_sizes(&self) -> Vec<u64> {
        let mut s = vec![0u64; self.files.len()];
        for r in &self.reads {
            let e = &mut s[r.file as usize];
            *e = (*e).max(r.offset + r.len);
        }
        for m in &self.mappings {
            let e = &mut s[m.file as usize];
            *e = (*e).max(m.offset + m.len);
        }
        s
    }

    /// Thread ids in order of first appearance.
    pub fn threads(&self) -> Vec<u64> {
        let mut seen = Vec::new();
        let mut set = std::collections::HashSet::new();
        for r in &self.reads {
            if set.insert(r.thread) {
                seen.push(r.thread);
            }
        }
        seen
    }
}

/// Builds a [`Trace`], interning file names.
#[derive(Debug)]
pub struct TraceBuilder {
    trace: Trace,
    index: HashMap<String, u32>,
}

impl TraceBuilder {
    /// A builder for a trace of `format`.
    pub fn new(format: TraceFormat) -> Self {
        TraceBuilder {
            trace: Trace::new(format),
            index: HashMap::new(),
        }
    }

    /// The index of `path`, adding it when new.
    pub fn file(&mut self, path: &str) -> u32 {
        if let Some(&i) = self.index.get(path) {
            return i;
        }
        let i = self.trace.files.len() as u32;
        self.trace.files.push(path.to_string());
        self.index.insert(path.to_string(), i);
        i
    }

    /// Adds one read (reads of 0 bytes are dropped).
    pub fn read(
        &mut self,
        path: &str,
        offset: u64,
        len: u64,
        op: TraceOp,
        thread: u64,
        t_ns: Option<u64>,
    ) {
        if len == 0 {
            return;
        }
        let file = self.file(path);
        self.trace.reads.push(TraceRead {
            file,
            offset,
            len,
            op,
            thread,
            t_ns,
        });
    }

    /// Adds one mapping.
    pub fn map(&mut self, path: &str, offset: u64, len: u64, thread: u64, t_ns: Option<u64>) {
        let file = self.file(path);
        self.trace.mappings.push(TraceMapping {
            file,
            offset,
            len,
            thread,
            t_ns,
        });
    }

    /// Counts one read left out, by kind.
    pub fn skip(&mut self, kind: &str) {
        *self.trace.skipped.entry(kind.to_string()).or_default() += 1;
    }

    /// The finished trace.
    pub fn finish(self) -> Trace {
        self.trace
    }

    /// Orders reads (and mappings) by time, keeping each thread's order:
    /// a stable sort, done only when every entry has a time.
    pub fn sort_by_time(&mut self) {
        if self.trace.reads.iter().all(|r| r.t_ns.is_some()) {
            self.trace.reads.sort_by_key(|r| r.t_ns);
        }
        if self.trace.mappings.iter().all(|m| m.t_ns.is_some()) {
            self.trace.mappings.sort_by_key(|m| m.t_ns);
        }
    }
}

/// Parses an unsigned integer in decimal or `0x` hex.
pub(crate) fn num(s: &str) -> Option<u64> {
    let s = s.trim();
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else {
        s.parse().ok()
    }
}
