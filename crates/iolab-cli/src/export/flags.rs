//! The output flags every measuring command shares: `--json`, one
//! `--FLAG FILE` per file format of [`FILE_FORMATS`] (the list a new
//! format registers in), and `--overwrite`, defined once (from that list)
//! and checked once.

use super::format::FileFormat;
use super::target::OutputTarget;
use super::{csv, jsonl};
use clap::{Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches};
use std::path::PathBuf;

/// Every file format, one line each: a new format is its file and a line
/// here.
pub const FILE_FORMATS: &[FileFormat] = &[csv::FORMAT, jsonl::FORMAT];

/// Output flags, flattened into each command's arguments.
#[derive(Debug, Clone, Default)]
pub struct OutputArgs {
    /// `--json`: one JSON document on stdout instead of the table.
    pub json: bool,
    /// The file of each file format named (its flag, e.g. `--csv`), in
    /// [`FILE_FORMATS`]' order.
    pub files: Vec<(&'static str, PathBuf)>,
    /// `--overwrite`: an existing output file may be replaced.
    pub overwrite: bool,
}

impl OutputArgs {
    /// The file given for the format whose flag is `flag` (`"--csv"`).
    pub fn file(&self, flag: &str) -> Option<&PathBuf> {
        self.files.iter().find(|(f, _)| *f == flag).map(|(_, p)| p)
    }
}

impl Args for OutputArgs {
    fn augment_args(cmd: Command) -> Command {
        let mut cmd = cmd.arg(
            Arg::new("json")
                .long("json")
                .action(ArgAction::SetTrue)
                .help("Print one JSON document on stdout (instead of the table)"),
        );
        for f in FILE_FORMATS {
            cmd = cmd.arg(
                Arg::new(f.id())
                    .long(f.id())
                    .value_name("FILE")
                    .value_parser(clap::value_parser!(PathBuf))
                    .help(f.help),
            );
        }
        cmd.arg(
            Arg::new("overwrite")
                .long("overwrite")
                .action(ArgAction::SetTrue)
                .help("Allow replacing an existing output file (and, for bench, writing into a --file iolab did not create)"),
        )
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

impl FromArgMatches for OutputArgs {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let files = FILE_FORMATS
            .iter()
            .filter_map(|f| m.get_one::<PathBuf>(f.id()).map(|p| (f.flag, p.clone())))
            .collect();
        Ok(OutputArgs {
            json: m.get_flag("json"),
            files,
            overwrite: m.get_flag("overwrite"),
        })
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

/// The checked output files of one invocation.
#[derive(Debug, Default)]
pub struct Targets {
    /// Each file format named, with its checked file.
    pub files: Vec<(&'static FileFormat, OutputTarget)>,
}

impl OutputArgs {
    /// Checks every output destination before anything is measured;
    /// `measured` are the files the run will read or write.
    pub fn check(&self, measured: &[PathBuf]) -> anyhow::Result<Targets> {
        let mut files = Vec::new();
        for (i, (flag, path)) in self.files.iter().enumerate() {
            if let Some((other, _)) = self.files[..i].iter().find(|(_, p)| p == path) {
                return Err(crate::error::usage(format!(
                    "{other} and {flag} both name {}; give each its own file",
                    path.display()
                )));
            }
            let f = FILE_FORMATS
                .iter()
                .find(|f| f.flag == *flag)
                .expect("a flag of FILE_FORMATS");
            let t = OutputTarget::check(f.flag, path, self.overwrite, f.mode, measured)?;
            files.push((f, t));
        }
        Ok(Targets { files })
    }
}
