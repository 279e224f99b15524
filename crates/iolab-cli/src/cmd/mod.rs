//! The subcommands, one file each. A command imports no other command:
//! what two share lives beside this folder (`crate::sweep`,
//! `crate::session`, `crate::vs`, ...).

pub mod bench;
pub mod cat;
pub mod fio;
pub mod lab;
pub mod mixed;
pub mod record;
pub mod replay;
pub mod report;
pub mod run;
pub mod survey;
pub mod sys;
pub mod trace;
pub mod tune;
pub mod xor;

pub use crate::error::usage;
