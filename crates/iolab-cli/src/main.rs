//! The `iolab` command (minimal entry point on the `sys` branch; the real
//! main.rs with every command is merged in elsewhere).
#![forbid(unsafe_code)]

mod cmd;

use clap::{Parser, Subcommand};
use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

/// Measure, compare and explain file I/O on this machine.
#[derive(Parser, Debug)]
#[command(name = "iolab", version)]
struct Cli {
    #[command(subcommand)]
    cmd: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// The cost of the operating system's basic operations.
    Sys(cmd::sys::SysArgs),
}

fn main() {
    let cli = Cli::parse();
    let _ = ctrlc::set_handler(|| STOP.store(true, Ordering::SeqCst));
    let code = match &cli.cmd {
        Command::Sys(a) => match cmd::sys::run(a, &STOP) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("iolab: {e:#}");
                1
            }
        },
    };
    std::process::exit(code);
}
