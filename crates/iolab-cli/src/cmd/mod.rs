//! The subcommands, one file each.

pub mod bench;
pub mod lab;
pub mod report;
pub mod survey;
pub mod sys;
pub mod vs;
pub mod xor;

pub use crate::error::{usage, UsageError};
