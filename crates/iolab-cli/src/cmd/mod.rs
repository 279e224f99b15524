//! The subcommands, one file each.

pub mod bench;
pub mod bench_args;
pub mod cat;
pub mod fio;
pub mod lab;
pub mod lab_progress;
pub mod lab_ranks;
pub mod limits;
pub mod mixed;
pub mod ranks;
pub mod record;
pub mod replay;
pub mod report;
pub mod run;
pub mod session;
pub mod survey;
pub mod sys;
pub mod trace;
pub mod tune;
pub mod vs;
pub mod waker;
pub mod xor;

pub use crate::error::usage;
