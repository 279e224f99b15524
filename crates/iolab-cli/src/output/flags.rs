//! The output flags every measuring command shares (`--json`, `--jsonl`,
//! `--csv`, `--overwrite`), defined once and checked once.

use super::target::{Mode, OutputTarget};
use std::path::PathBuf;

/// Output flags, flattened into each command's arguments.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct OutputArgs {
    /// Print one JSON document on stdout (instead of the table).
    #[arg(long)]
    pub json: bool,
    /// Append one JSON record per configuration/measurement to FILE (an
    /// empty file or one written by iolab).
    #[arg(long, value_name = "FILE")]
    pub jsonl: Option<PathBuf>,
    /// Write results as CSV to FILE (rewritten as results come in).
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Allow replacing an existing output file (and, for bench, writing
    /// into a --file iolab did not create).
    #[arg(long)]
    pub overwrite: bool,
}

/// The checked output files of one invocation.
#[derive(Debug, Default)]
pub struct Targets {
    /// `--csv`, checked for replacing.
    pub csv: Option<OutputTarget>,
    /// `--jsonl`, checked for appending.
    pub jsonl: Option<OutputTarget>,
}

impl OutputArgs {
    /// Checks every output destination before anything is measured;
    /// `measured` are the files the run will read or write.
    pub fn check(&self, measured: &[PathBuf]) -> anyhow::Result<Targets> {
        let csv = match &self.csv {
            Some(p) => Some(OutputTarget::check(
                "--csv",
                p,
                self.overwrite,
                Mode::Replace,
                measured,
            )?),
            None => None,
        };
        let jsonl = match &self.jsonl {
            Some(p) => Some(OutputTarget::check(
                "--jsonl",
                p,
                self.overwrite,
                Mode::Append,
                measured,
            )?),
            None => None,
        };
        if let (Some(c), Some(j)) = (&self.csv, &self.jsonl) {
            if c == j {
                return Err(crate::error::usage(format!(
                    "--csv and --jsonl both name {}; give each its own file",
                    c.display()
                )));
            }
        }
        Ok(Targets { csv, jsonl })
    }
}
