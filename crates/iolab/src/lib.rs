//! # iolab: how bytes move
//!
//! The I/O layer of the iolab toolkit. It holds everything that touches the
//! kernel on the data path, so the layers above (`iolab-bench`, the `iolab`
//! binary, the reading library `iolab-reader`) stay free of `unsafe`:
//!
//! - [`engine`]: one [`engine::Engine`] contract (submit / reap, modelled on
//!   the queue-commit-getevents shape) and one file per engine: `read`,
//!   `pread`, `preadv2`, `stream`, `mmap`, `uring`, `libaio`, `posixaio`,
//!   `threadpool`, `null` ([`engine::EngineKind::ALL`]).
//! - [`buf`]: buffers aligned for `O_DIRECT` and registrable with io_uring.
//! - [`file`](mod@file): opening files (`O_DIRECT`), alignment rules, creating test
//!   files filled with the verifiable [`pattern`].
//! - [`cache`]: page-cache control: evict, warm, measure residency (mincore).
//! - [`os`]: process resource usage and other small kernel facts.
//! - [`sys`]: thin, safe wrappers over the kernel (io_uring reads into
//!   borrowed buffers, huge-page buffers, mappings, fadvise, CPU affinity),
//!   public so the reading library (`iolab-reader`) builds on them without
//!   `unsafe` of its own.
//!
//! ```
//! use iolab::pattern::Pattern;
//! let p = Pattern::new(7);
//! let mut a = vec![0u8; 4096];
//! p.fill(&mut a, 8192);
//! assert!(p.verify(&a, 8192).is_ok());
//! ```

pub mod buf;
pub mod cache;
pub mod engine;
pub mod error;
pub mod file;
pub mod kernel;
pub mod mem;
pub mod pattern;
pub mod primitives;
pub mod stop;
pub mod testing;
pub mod usage;

pub use error::{Errno, Error, Result};
