//! `iolab`: find the fastest way to read and write files on this machine.
//!
//! With no arguments it surveys the storage under the current directory;
//! `iolab bench` runs one measurement or a sweep; `iolab xor` reads a file
//! as fast as the machine allows. Exit status: 0 ok, 1 a run failed, 2 bad
//! input (one line on stderr naming the flag), 130 interrupted.
#![forbid(unsafe_code)]

mod cleanup;
mod cmd;
mod error;
mod output;
mod parse;
mod progress;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Measure, compare and explain file I/O on this machine.
#[derive(Parser, Debug)]
#[command(name = "iolab", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    cmd: Option<Cmd>,
    #[command(flatten)]
    survey: cmd::survey::SurveyArgs,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Survey the storage under a directory (the default command).
    Survey(cmd::survey::SurveyArgs),
    /// Run one measurement, or a sweep over comma-separated values.
    Bench(Box<cmd::bench::BenchArgs>),
    /// Print the XOR of a file's 4-byte little-endian words.
    Xor(cmd::xor::XorArgs),
    /// The cost of the operating system's basic operations (syscalls,
    /// context switches, memory, page faults, loopback network, file cache).
    Sys(cmd::sys::SysArgs),
    /// Named experiments that reproduce the studies: `lab list`, `lab run NAME...`.
    Lab(cmd::lab::LabArgs),
    /// One self-contained HTML page from record files or folders.
    Report(cmd::report::ReportArgs),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind::*;
            if matches!(
                e.kind(),
                DisplayHelp | DisplayVersion | DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                e.exit();
            }
            // One line: clap's first line names the flag and the problem.
            let text = e.render().to_string();
            let line = text.lines().next().unwrap_or("error: bad arguments");
            eprintln!("{line}");
            return ExitCode::from(2);
        }
    };
    let stop = cleanup::install();
    let res = match cli.cmd {
        None => cmd::survey::run(&cli.survey, stop),
        Some(Cmd::Survey(a)) => cmd::survey::run(&a, stop),
        Some(Cmd::Bench(a)) => cmd::bench::run(&a, stop),
        Some(Cmd::Xor(a)) => cmd::xor::run(&a, stop),
        Some(Cmd::Sys(a)) => cmd::sys::run(&a, stop),
        Some(Cmd::Lab(a)) => cmd::lab::run(&a, stop),
        Some(Cmd::Report(a)) => cmd::report::run(&a),
    };
    cleanup::remove_all();
    let _ = stop;
    let code = match res {
        Ok(code) => code,
        Err(e) => {
            let code = exit_code(&e);
            // After Ctrl-C an interrupted call's error is expected, not news.
            if code != 130 && cleanup::signal_status().is_none() {
                eprintln!("error: {}", one_line(&e));
            }
            code
        }
    };
    // Stopped by a signal: 130 for SIGINT, 143 for SIGTERM.
    if let Some(sig) = cleanup::signal_status() {
        return ExitCode::from(sig as u8);
    }
    ExitCode::from(code as u8)
}

/// The error and its causes on one line.
fn one_line(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for c in e.chain() {
        let s = c.to_string();
        if !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
    }
    parts.join(": ").replace('\n', " ")
}

/// Maps an error to the exit status.
fn exit_code(e: &anyhow::Error) -> i32 {
    for c in e.chain() {
        if let Some(b) = c.downcast_ref::<iolab_bench::BenchError>() {
            return b.exit_code();
        }
        if let Some(u) = c.downcast_ref::<cmd::UsageError>() {
            let _ = u;
            return 2;
        }
        if let Some(i) = c.downcast_ref::<iolab::Error>() {
            return iolab_bench::BenchError::exit_code_of(i);
        }
        if let Some(io) = c.downcast_ref::<std::io::Error>() {
            if io.kind() == std::io::ErrorKind::BrokenPipe {
                return 0;
            }
        }
    }
    1
}
