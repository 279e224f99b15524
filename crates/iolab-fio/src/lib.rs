//! Speaking fio: fio job files and fio's command-line form, mapped onto
//! iolab's workload spec (the reverse of [`crate::translate`], which maps a spec
//! onto fio options), and fio-shaped results (normal text, JSON, json+,
//! terse, bw/lat/iops logs).
//!
//! - [`parse`]: the job-file language into raw options with file:line;
//! - [`expr`]: arithmetic in values (fio's expressions and its `bc` path);
//! - [`value`]: fio's sizes, times and booleans;
//! - [`options`]: what iolab does with each option fio documents (runs it,
//!   notes it, refuses it, or names the engine it belongs to);
//! - [`map`]: raw options into [`map::FioJob`]s, one per clone of a job
//!   with `numjobs` (a [`iolab_bench::spec::WorkloadSpec`] each);
//! - [`group`]: which jobs run at the same time, and `group_reporting`;
//! - [`json`], [`text`], [`log`]: fio's output formats from iolab's runs.
#![forbid(unsafe_code)]

pub mod expr;
pub mod group;
pub mod json;
pub mod log;
pub mod map;
pub mod options;
pub mod parse;
pub mod text;
pub mod translate;
pub mod value;

use std::fmt;

/// Where something was written: a job file and line (or `<command line>`
/// and the argument's position).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Loc {
    /// File name as given (or `<command line>`).
    pub file: String,
    /// 1-based line (or argument) number; 0 when the whole file is meant.
    pub line: usize,
}

impl Loc {
    /// A location.
    pub fn new(file: String, line: usize) -> Self {
        Loc { file, line }
    }

    /// An error at this location.
    pub fn err(&self, msg: String) -> FioJobError {
        FioJobError {
            loc: self.clone(),
            msg,
        }
    }
}

impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.file)
        } else {
            write!(f, "{}:{}", self.file, self.line)
        }
    }
}

/// A job file (or command line) iolab will not run: where, and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{loc}: {msg}")]
pub struct FioJobError {
    /// Where.
    pub loc: Loc,
    /// What was wrong and what would be right.
    pub msg: String,
}
