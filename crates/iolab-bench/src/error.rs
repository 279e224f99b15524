//! Errors of the measurement layer, sorted by who must act: the user (bad
//! input), the machine (an I/O failure), or nobody (cancelled).

use std::path::PathBuf;

/// Result with [`BenchError`].
pub type Result<T, E = BenchError> = std::result::Result<T, E>;

/// What stops a run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// Bad input: names the flag and what would be right.
    #[error("{0}")]
    Usage(String),
    /// From the I/O layer (including unsupported features and verify failures).
    #[error(transparent)]
    Io(#[from] iolab::Error),
    /// An op failed in the kernel.
    #[error("{kind} of {len} bytes at offset {offset} of {path} failed: {errno}")]
    OpFailed {
        /// read or write.
        kind: &'static str,
        /// File.
        path: PathBuf,
        /// Offset.
        offset: u64,
        /// Length asked for.
        len: u32,
        /// The kernel's answer.
        errno: iolab::Errno,
    },
    /// An op moved fewer bytes than asked (end of file).
    #[error("short {kind} at offset {offset} of {path}: {got} of {len} bytes (is the file shorter than --size?)")]
    Short {
        /// read or write.
        kind: &'static str,
        /// File.
        path: PathBuf,
        /// Offset.
        offset: u64,
        /// Asked.
        len: u32,
        /// Moved.
        got: u32,
    },
    /// An op was in flight longer than `--op-timeout`.
    #[error("{kind} of {len} bytes at offset {offset} of {path} did not complete within --op-timeout {limit_ms} ms (waited {waited_ms} ms)")]
    OpTimeout {
        /// read or write.
        kind: &'static str,
        /// File.
        path: PathBuf,
        /// Offset.
        offset: u64,
        /// Length asked for.
        len: u32,
        /// The limit, ms.
        limit_ms: u64,
        /// How long it had waited when noticed, ms.
        waited_ms: u64,
    },
    /// A run ended by `error`, with what it measured until then.
    #[error("{error}")]
    Partial {
        /// What was measured before the error.
        metrics: Box<crate::record::RunMetrics>,
        /// What ended the run.
        error: Box<BenchError>,
    },
}

impl BenchError {
    /// Exit status the command line should use: 2 for bad input and
    /// unsupported features, 130 for Ctrl-C, 1 for a failed run.
    pub fn exit_code(&self) -> i32 {
        match self {
            BenchError::Usage(_) => 2,
            BenchError::Io(e) => Self::exit_code_of(e),
            BenchError::Partial { error, .. } => error.exit_code(),
            _ => 1,
        }
    }

    /// Exit status for an I/O-layer error.
    pub fn exit_code_of(e: &iolab::Error) -> i32 {
        match e {
            iolab::Error::Invalid(_) | iolab::Error::Unsupported { .. } => 2,
            iolab::Error::Cancelled => 130,
            // A file the user may not read or write, or a read-only file
            // system, is bad input: name another file.
            iolab::Error::Io { source, .. }
                if matches!(
                    source.kind(),
                    std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem
                ) =>
            {
                2
            }
            _ => 1,
        }
    }
}
