//! Files into GPU memory (and, through the same pipeline, into host
//! memory): file → staging buffers → destination, with the reading
//! technique the page cache calls for, chunk size, depth and threads from
//! the profile, and copies that overlap the reads.
//!
//! The destination is a [`Target`]: [`HostTarget`] (always built, so the
//! whole pipeline — order, buffer reuse, ranges, odd sizes, errors — is
//! tested on any machine) or, with the `cuda` feature, [`DeviceTarget`]
//! (CUDA device memory, the driver loaded at run time, so the feature
//! builds without CUDA). The techniques ([`GpuTechnique`]):
//!
//! - cold data: one io_uring per file, O_DIRECT into huge-page staging
//!   buffers page-locked for the GPU, each piece copied as it lands while
//!   the ring's other pieces are still being read ([`GpuTechnique::Ring`]);
//! - warm data: threads `pread` out of the page cache, each into its own
//!   staging buffers, each queueing copies on its own stream; a buffer is
//!   refilled only after an event says its copy ended
//!   ([`GpuTechnique::Threads`]);
//! - where `/proc/driver/nvidia-fs` exists: cuFile (GPUDirect Storage)
//!   straight into device memory ([`GpuTechnique::CuFile`]).
//!
//! ```
//! use iolab_reader::gpu::{transfer, GpuOptions, HostTarget, Range, Source};
//! # let dir = tempfile::tempdir().unwrap();
//! # let path = dir.path().join("data");
//! std::fs::write(&path, b"0123456789").unwrap();
//! // Bytes 2..5 and 7..10 of the file, packed side by side.
//! let src = Source {
//!     path,
//!     ranges: vec![
//!         Range { offset: 2, len: 3, at: 0 },
//!         Range { offset: 7, len: 3, at: 3 },
//!     ],
//! };
//! let mut out = [0u8; 6];
//! let st = transfer(&HostTarget::new(&mut out), &[src], &GpuOptions::default()).unwrap();
//! assert_eq!(&out, b"234789");
//! assert_eq!(st.bytes, 6);
//! ```

mod each_read;
mod error;
mod fill;
mod host;
mod options;
mod pipeline;
#[cfg(any(feature = "cuda", test))]
mod pool;
mod ranges;
mod ring;
mod stats;
mod target;
mod technique;
mod threads;
pub mod tune;
mod workers;

#[cfg(feature = "cuda")]
#[allow(unsafe_code)]
pub mod cuda;
#[cfg(feature = "cuda")]
mod load;

pub use each_read::{CopyEach, OpCopy};
pub use error::GpuError;
pub use fill::fill_host;
pub use host::{HostLane, HostQueue, HostTarget};
pub use options::{GpuOptions, MAX_THREADS, PIECE};
pub use pipeline::transfer;
pub use ranges::{Range, Source};
pub use stats::Stats;
pub use target::{CopyNow, Lane, Target};
pub use technique::{
    choose, nvidia_fs_loaded, Facts, GpuTechnique, ParseGpuTechniqueError, NVIDIA_FS,
};

#[cfg(feature = "cuda")]
pub use cuda::{
    copy_each_read, device_count, free_staging, staging_kept, Device, DeviceBuffer, DeviceCopy,
    DeviceTarget, PinnedBuf, STAGING_KEEP,
};
#[cfg(feature = "cuda")]
pub use load::{load_file, load_into, load_ranges, load_sources};
