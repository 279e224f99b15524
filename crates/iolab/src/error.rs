//! Typed errors of the I/O layer.

use std::fmt;
use std::path::PathBuf;

/// Result with the I/O layer's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A raw errno value returned by the kernel for one operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Errno(pub i32);

impl Errno {
    /// The errno of the last failed libc call on this thread.
    pub fn last() -> Self {
        Errno(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", std::io::Error::from_raw_os_error(self.0))
    }
}

impl From<Errno> for std::io::Error {
    fn from(e: Errno) -> Self {
        std::io::Error::from_raw_os_error(e.0)
    }
}

/// Everything that can go wrong below the runner.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A system call failed; `what` says which step.
    #[error("{what}: {source}")]
    Io {
        /// The step that failed, e.g. "open /data/f".
        what: String,
        /// The kernel's answer.
        #[source]
        source: std::io::Error,
    },
    /// The kernel, file system or device lacks a feature the configuration needs.
    #[error("{feature} is not supported here: {why}")]
    Unsupported {
        /// The missing feature, named as the user spells it (e.g. "--iopoll").
        feature: String,
        /// Why, in a few words.
        why: String,
    },
    /// The configuration is inconsistent (caught before any I/O).
    #[error("{0}")]
    Invalid(String),
    /// The user asked to stop (Ctrl-C) before the work was done.
    #[error("cancelled")]
    Cancelled,
    /// A byte read did not equal the pattern.
    #[error(
        "verify failed: {path} at offset {offset}: expected byte {expected:#04x}, read {got:#04x}"
    )]
    Verify {
        /// File whose bytes were wrong.
        path: PathBuf,
        /// Absolute offset of the first wrong byte.
        offset: u64,
        /// What the pattern says.
        expected: u8,
        /// What was read.
        got: u8,
    },
}

impl Error {
    /// Wraps an `std::io::Error` with the step that failed.
    pub fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            what: what.into(),
            source,
        }
    }

    /// Wraps the current thread's errno with the step that failed.
    pub fn last_os(what: impl Into<String>) -> Self {
        Error::io(what, std::io::Error::last_os_error())
    }
}
