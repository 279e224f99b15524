//! Typed errors of the [`Reader`](super::Reader): every one names the file,
//! and those that come from a read name the offset too.

use std::path::PathBuf;

/// Result with the reader's [`ReadError`].
pub type Result<T, E = ReadError> = std::result::Result<T, E>;

/// What can go wrong opening or reading a file through a [`Reader`](super::Reader).
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// Opening (or inspecting) the file failed.
    #[error("open {path}: {source}")]
    Open {
        /// The file.
        path: PathBuf,
        /// The kernel's answer.
        #[source]
        source: std::io::Error,
    },
    /// The path is not something a reader can read at offsets.
    #[error("{path}: {what}; a Reader reads regular files and block devices")]
    NotReadable {
        /// The file.
        path: PathBuf,
        /// What it is instead ("a directory", "a FIFO", ...).
        what: &'static str,
    },
    /// A read failed.
    #[error("read {path} at offset {offset} ({len} bytes): {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Offset of the failed read.
        offset: u64,
        /// Bytes asked for.
        len: usize,
        /// The kernel's answer.
        #[source]
        source: std::io::Error,
    },
    /// `read_exact_at` reached the end of the file first.
    #[error("read {path} at offset {offset}: wanted {wanted} bytes, the file ended after {got}")]
    UnexpectedEof {
        /// The file.
        path: PathBuf,
        /// Offset of the read.
        offset: u64,
        /// Bytes asked for.
        wanted: usize,
        /// Bytes there were.
        got: usize,
    },
    /// A size or offset does not fit this machine's address space or the
    /// kernel's limits.
    #[error("{path}: {what}")]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// What did not fit.
        what: String,
    },
    /// The technique cannot work here (e.g. O_DIRECT refused, io_uring off).
    #[error("{path}: {technique} is not available here: {why}")]
    Unsupported {
        /// The file.
        path: PathBuf,
        /// The technique, as [`Technique`](super::Technique) spells it.
        technique: String,
        /// Why.
        why: String,
    },
}

impl ReadError {
    pub(crate) fn io(path: &std::path::Path, offset: u64, len: usize, e: std::io::Error) -> Self {
        ReadError::Io {
            path: path.to_path_buf(),
            offset,
            len,
            source: e,
        }
    }
}

impl From<ReadError> for std::io::Error {
    fn from(e: ReadError) -> Self {
        let kind = match &e {
            ReadError::Open { source, .. } | ReadError::Io { source, .. } => source.kind(),
            ReadError::UnexpectedEof { .. } => std::io::ErrorKind::UnexpectedEof,
            ReadError::NotReadable { .. } | ReadError::TooLarge { .. } => {
                std::io::ErrorKind::InvalidInput
            }
            ReadError::Unsupported { .. } => std::io::ErrorKind::Unsupported,
        };
        std::io::Error::new(kind, e)
    }
}
