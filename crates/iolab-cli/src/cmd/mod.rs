//! The subcommands, one file each.

pub mod bench;
pub mod cat;
pub mod mixed;
pub mod survey;
pub mod sys;
pub mod tune;
pub mod vs;
pub mod xor;

pub use crate::error::{usage, UsageError};
