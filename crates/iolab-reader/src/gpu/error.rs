//! Typed errors of the GPU path: each one a single line that names what was
//! wrong (the file, the offset, the GPU and its numbers) and, where there is
//! one, what would be right.

use std::path::PathBuf;

/// What can go wrong moving a file into a destination.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    /// The CUDA driver library could not be loaded.
    #[error("no NVIDIA driver: {why} (install the NVIDIA driver, or put libcuda.so.1 on LD_LIBRARY_PATH)")]
    NoDriver {
        /// What was looked for.
        why: String,
    },
    /// The driver loaded but sees no GPU.
    #[error("no NVIDIA GPU: the driver is installed but reports no device ({why})")]
    NoGpu {
        /// The driver's answer.
        why: String,
    },
    /// A GPU number beyond the machine's GPUs.
    #[error("GPU {asked} does not exist: this machine has {count} GPU{} (numbers 0..={})", if *.count == 1 { "" } else { "s" }, .count.saturating_sub(1))]
    NoSuchDevice {
        /// The number asked for.
        asked: usize,
        /// GPUs the driver sees.
        count: usize,
    },
    /// The device allocation did not fit.
    #[error("out of memory on GPU {device}: {wanted} bytes asked, {free} of {total} free")]
    OutOfMemory {
        /// The GPU.
        device: usize,
        /// Bytes asked for.
        wanted: u64,
        /// Bytes free on the device when it refused.
        free: u64,
        /// The device's memory.
        total: u64,
    },
    /// Any other CUDA driver call failed.
    #[error("CUDA {call} failed: {name} ({code})")]
    Driver {
        /// The driver function.
        call: &'static str,
        /// The driver's error name (`CUDA_ERROR_...`).
        name: String,
        /// Its number.
        code: u32,
    },
    /// cuFile (GPUDirect Storage) could not be used.
    #[error("cuFile {call} failed: {why}")]
    CuFile {
        /// The cuFile function.
        call: &'static str,
        /// Its answer.
        why: String,
    },
    /// The technique asked for cannot run here.
    #[error("{technique} is not available here: {why}")]
    Unavailable {
        /// The technique as the command line spells it.
        technique: &'static str,
        /// Why not.
        why: String,
    },
    /// A byte range that does not fit the file or the destination.
    #[error("{path}: {what}")]
    BadRange {
        /// The file.
        path: PathBuf,
        /// What does not fit, and where.
        what: String,
    },
    /// The file ended before a range did (it shrank while being read).
    #[error("{path}: the file ended at offset {at}, {missing} bytes short of its range (did it shrink while being read?)")]
    ShortFile {
        /// The file.
        path: PathBuf,
        /// Where it ended.
        at: u64,
        /// Bytes the range still wanted.
        missing: u64,
    },
    /// Opening or reading the file failed.
    #[error(transparent)]
    Read(#[from] crate::ReadError),
    /// A copy into host memory went outside it (a bug in the caller's
    /// ranges that the checks before reading should have caught).
    #[error("a copy of {len} bytes to offset {at} passes the end of the {cap}-byte destination")]
    OutOfBounds {
        /// Destination offset.
        at: u64,
        /// Bytes.
        len: u64,
        /// Destination size.
        cap: u64,
    },
}

impl GpuError {
    /// A read failure of `path` at `offset`.
    pub(crate) fn io(path: &std::path::Path, offset: u64, len: usize, e: std::io::Error) -> Self {
        GpuError::Read(crate::ReadError::io(path, offset, len, e))
    }

    /// An error of the I/O layer while working on `path`.
    pub(crate) fn layer(path: &std::path::Path, e: iolab::Error) -> Self {
        let source = match e {
            iolab::Error::Io { source, .. } => source,
            other => std::io::Error::other(other.to_string()),
        };
        GpuError::Read(crate::ReadError::Open {
            path: path.to_path_buf(),
            source,
        })
    }
}
