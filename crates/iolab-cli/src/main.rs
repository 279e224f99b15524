//! `iolab`: find the fastest way to read and write files on this machine.
//!
//! With no arguments it surveys the storage under the current directory;
//! `iolab bench` runs one measurement or a sweep; `iolab xor` reads a file
//! as fast as the machine allows. Exit status: 0 ok, 1 a run failed, 2 bad
//! input (one line on stderr naming the flag), 130 interrupted.
#![forbid(unsafe_code)]

mod argv;
mod bench_args;
mod cleanup;
mod cmd;
mod error;
mod export;
#[cfg(test)]
mod fuzz_corpus;
#[cfg(test)]
mod fuzz_tests;
mod gpu_bench;
mod lab_files;
mod lab_progress;
mod lab_ranks;
mod limits;
mod mem_arg;
mod parse;
mod progress;
#[cfg(test)]
mod prop_tests;
mod ranks;
mod session;
mod sweep;
mod to_gpu;
mod trace_io;
mod tune_gpu;
mod vs;
mod waker;

use clap::{Parser, Subcommand};
use error::{exit_code, one_line};
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
    /// Read whole files as fast as this machine can (to stdout or -o OUT).
    Cat(cmd::cat::CatArgs),
    /// XOR of a whole file's 4-byte words (final partial word dropped), as 8 hex digits.
    Fast(cmd::cat::FastArgs),
    /// The course's reader/writer: `run FILE -r|-w BLOCK_SIZE BLOCK_COUNT`.
    Run(cmd::run::RunArgs),
    /// The course's block-count search: double until one read takes 5 s.
    Run2(cmd::run::Run2Args),
    /// Measure how this machine reads and write the profile `Auto` uses.
    Tune(cmd::tune::TuneArgs),
    /// One pass of the mixed workload (adaptive against fixed techniques).
    Mixed(cmd::mixed::MixedArgs),
    /// Record what a program reads (under strace) as an iolab CSV trace.
    Record(cmd::record::RecordArgs),
    /// Inspect a trace (`iolab trace stats FILE`).
    Trace(cmd::trace::TraceArgs),
    /// Replay a trace against every reading technique and compare them.
    Replay(Box<cmd::replay::ReplayArgs>),
    /// Named experiments that reproduce the studies: `lab list`, `lab run NAME...`.
    Lab(cmd::lab::LabArgs),
    /// One self-contained HTML page from record files or folders.
    Report(cmd::report::ReportArgs),
    /// Run fio job files or a fio command line with iolab's engines.
    Fio(cmd::fio::FioArgs),
    /// One waker process of `--waker` (started by iolab itself).
    #[command(name = "__waker", hide = true)]
    Waker(waker::WakerArgs),
}

fn main() -> ExitCode {
    let cli: Cli = match argv::parse_from(std::env::args_os()) {
        Ok(c) => c,
        Err(line) => {
            // Help and version go to stdout with exit 0, as clap does.
            if let Err(e) = Cli::try_parse() {
                if argv::is_display(&e) {
                    e.exit();
                }
            }
            // Under mpirun every rank finds the same bad input: rank 0 says it.
            if iolab_mpi::launched_rank().unwrap_or(0) == 0 {
                eprintln!("{line}");
            }
            return ExitCode::from(2);
        }
    };
    let stop = cleanup::install();
    cleanup::watchdog();
    let res = match cli.cmd {
        None => cmd::survey::run(&cli.survey, stop),
        Some(Cmd::Survey(a)) => cmd::survey::run(&a, stop),
        Some(Cmd::Bench(a)) => cmd::bench::run(&a, stop),
        Some(Cmd::Xor(a)) => cmd::xor::run(&a, stop),
        Some(Cmd::Sys(a)) => cmd::sys::run(&a, stop),
        Some(Cmd::Cat(a)) => cmd::cat::run(&a, stop),
        Some(Cmd::Fast(a)) => cmd::cat::run_fast(&a, stop),
        Some(Cmd::Run(a)) => cmd::run::run(&a, stop),
        Some(Cmd::Run2(a)) => cmd::run::run2(&a, stop),
        Some(Cmd::Tune(a)) => cmd::tune::run(&a, stop),
        Some(Cmd::Mixed(a)) => cmd::mixed::run(&a, stop),
        Some(Cmd::Record(a)) => cmd::record::run(&a, stop),
        Some(Cmd::Trace(a)) => cmd::trace::run(&a, stop),
        Some(Cmd::Replay(a)) => cmd::replay::run(&a, stop),
        Some(Cmd::Lab(a)) => cmd::lab::run(&a, stop),
        Some(Cmd::Report(a)) => cmd::report::run(&a),
        Some(Cmd::Fio(a)) => cmd::fio::run(&a, stop),
        Some(Cmd::Waker(a)) => waker::run(&a, stop),
    };
    cleanup::remove_all();
    let _ = stop;
    let code = match res {
        Ok(code) => code,
        Err(e) => {
            let code = exit_code(&e);
            // After Ctrl-C an interrupted call's error is expected, not news.
            // A closed stdout (`| head`) is not an error either.
            if code != 130 && code != 0 && cleanup::signal_status().is_none() {
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
