//! # iolab-bench: what to measure
//!
//! Workload specs, offset generators, the runner (threads × queue depth),
//! metrics (HdrHistogram latency, CPU, faults), result records and
//! environment capture: the core every measuring crate above it (fio, trace,
//! lab, sysbench, mpi) builds on. Everything here is safe code: the kernel is reached
//! only through the `iolab` crate.
#![forbid(unsafe_code)]

pub mod content;
pub mod cpu;
pub mod depths;
pub mod devstat;
pub mod env;
pub mod error;
pub mod lat_record;
pub mod measure;
pub mod metrics;
pub mod offsets;
pub mod oplog;
pub mod pacing;
pub mod pin;
pub mod placement;
pub mod prepare;
pub mod random;
pub mod rank_place;
pub mod record;
pub mod residency;
pub mod runner;
pub mod service;
pub mod sizes;
pub mod skew;
pub mod spec;
pub mod stats;
pub mod units;
pub mod zones;

pub use error::{BenchError, Result};
