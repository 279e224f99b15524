//! Subcommands.

pub mod sys;
