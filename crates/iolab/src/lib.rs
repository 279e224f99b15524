//! # iolab: how bytes move
//!
//! The I/O layer of the iolab toolkit. It holds everything that touches the
//! kernel on the data path, so the layers above (`iolab-bench`, the `iolab`
//! binary, later the application `Reader`) stay free of `unsafe`:
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
//! - [`xor`]: the XOR of a file's 4-byte words, read as fast as the machine allows.
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
pub mod mem;
pub mod os;
pub mod pattern;
pub mod prim;
pub mod reader;
pub mod signal;
mod sys;
pub mod testing;
pub mod whole;
mod whole_parallel;
pub mod xor;

pub use error::{Errno, Error, Result};
