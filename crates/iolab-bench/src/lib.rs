//! # iolab-bench: what to measure
//!
//! Workload specs, offset generators, the runner (threads × queue depth),
//! metrics (HdrHistogram latency, CPU, faults), result records and
//! environment capture. Everything here is safe code: the kernel is reached
//! only through the `iolab` crate.
#![forbid(unsafe_code)]

pub mod cpu;
pub mod devstat;
pub mod env;
pub mod error;
pub mod fio;
pub mod fiojob;
pub mod lab;
pub mod metrics;
pub mod mixed;
pub mod offsets;
pub mod pin;
pub mod placement;
pub mod prepare;
pub mod random;
pub mod ranks;
pub mod record;
pub mod residency;
pub mod runner;
pub mod skew;
pub mod spec;
pub mod stats;
pub mod system;
pub mod trace;
pub mod units;

pub use error::{BenchError, Result};
