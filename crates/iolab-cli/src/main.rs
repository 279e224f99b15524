//! `iolab`: find the fastest way to read and write files on this machine.
//!
//! With no arguments it prints a short usage and the first thing to try
//! (`iolab survey`); `iolab bench` runs one measurement or a sweep; `iolab
//! xor` reads a file as fast as the machine allows. Exit status: 0 ok, 1 a
//! run failed, 2 bad input (one line on stderr naming the flag), 130/143
//! stopped by SIGINT/SIGTERM.
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
mod work_dir;

use clap::{Parser, Subcommand};
use error::{exit_code, one_line};
use std::process::ExitCode;

/// Measure, compare and explain file I/O on this machine.
#[derive(Parser, Debug)]
#[command(name = "iolab", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    cmd: Option<Cmd>,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Survey the storage under a directory: the first thing to try.
    Survey(cmd::survey::SurveyArgs),
    /// Run one measurement, or a sweep over comma-separated values.
    Bench(Box<cmd::bench::BenchArgs>),
    /// Print the XOR of a file's 4-byte little-endian words as 0x and 8 hex
    /// digits (a final partial word zero-padded).
    Xor(cmd::xor::XorArgs),
    /// The cost of the operating system's basic operations (syscalls,
    /// context switches, memory, page faults, loopback network, file cache).
    Sys(cmd::sys::SysArgs),
    /// Read whole files as fast as this machine can (to stdout or -o OUT).
    Cat(cmd::cat::CatArgs),
    /// XOR of a whole file's 4-byte words (final partial word dropped), as 8
    /// bare hex digits (the course's format, unlike xor's 0x...).
    Fast(cmd::cat::FastArgs),
    /// The course's reader/writer: `run FILE -r|-w BLOCK_SIZE BLOCK_COUNT`
    /// (-r prints 8 bare hex digits, the course's format).
    Run(cmd::run::RunArgs),
    /// The course's block-count search: double until one read takes 5 s.
    Run2(cmd::run::Run2Args),
    /// Measure how this machine reads, and write the profile the adaptive
    /// reader (`Auto`, `iolab cat`) uses.
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
    let Some(command) = cli.cmd else {
        // A bare `iolab` measures nothing and makes nothing: it says what to try.
        return match export::stdout(&first_contact()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => ExitCode::from(exit_code(&e) as u8),
        };
    };
    quiet_on_closed_stderr();
    let stop = cleanup::install();
    cleanup::watchdog();
    let res = match command {
        Cmd::Survey(a) => cmd::survey::run(&a, stop),
        Cmd::Bench(a) => cmd::bench::run(&a, stop),
        Cmd::Xor(a) => cmd::xor::run(&a, stop),
        Cmd::Sys(a) => cmd::sys::run(&a, stop),
        Cmd::Cat(a) => cmd::cat::run(&a, stop),
        Cmd::Fast(a) => cmd::cat::run_fast(&a, stop),
        Cmd::Run(a) => cmd::run::run(&a, stop),
        Cmd::Run2(a) => cmd::run::run2(&a, stop),
        Cmd::Tune(a) => cmd::tune::run(&a, stop),
        Cmd::Mixed(a) => cmd::mixed::run(&a, stop),
        Cmd::Record(a) => cmd::record::run(&a, stop),
        Cmd::Trace(a) => cmd::trace::run(&a, stop),
        Cmd::Replay(a) => cmd::replay::run(&a, stop),
        Cmd::Lab(a) => cmd::lab::run(&a, stop),
        Cmd::Report(a) => cmd::report::run(&a),
        Cmd::Fio(a) => cmd::fio::run(&a, stop),
        Cmd::Waker(a) => waker::run(&a, stop),
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

/// What a bare `iolab` prints: what it is, the first thing to try and what
/// that costs, and where the rest is listed.
fn first_contact() -> String {
    let c = cmd::survey::cost();
    format!(
        "iolab: measure, compare and explain file I/O on this machine.\n\
         \n\
         Usage: iolab <COMMAND> [OPTIONS]\n\
         \n\
         First try:\n  \
         iolab survey    how the storage under this directory reads: {n} measurements,\n                  \
         at most {secs} s, with a temporary test file of {size} here (removed at the end;\n                  \
         --dir D measures elsewhere)\n\
         \n\
         Then: `iolab bench` (one measurement you choose), `iolab sys` (the operating\n\
         system's basic costs), `iolab cat` (read files as fast as this machine can).\n\
         `iolab --help` lists every command; `iolab COMMAND --help` explains one.\n",
        n = c.measurements,
        secs = c.max_secs,
        size = iolab_bench::prepare::human(c.file_bytes),
    )
}

/// A closed stderr (`iolab ... 2>&1 | head -1`) makes the next message on
/// it panic inside the standard library. That is the reader going away,
/// not a failure of iolab: end quietly, removing what this run made, with
/// the status a shell shows for a process a closed pipe ended (141).
fn quiet_on_closed_stderr() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let p = info.payload();
        let msg = p
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| p.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if msg.starts_with("failed printing to std") && msg.contains("Broken pipe") {
            cleanup::remove_all();
            std::process::exit(128 + 13);
        }
        default(info);
    }));
}
