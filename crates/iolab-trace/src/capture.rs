//! `iolab record`: runs a program under strace and converts the log.
//!
//! strace follows child processes and threads (`-f`), stamps each call
//! with the wall time (`-tt`) and its duration (`-T`), names each file
//! descriptor's file (`-y`), prints no string contents (`-s 0`) and no
//! attach/exit chatter (`-qq`), and traces only the calls in
//! [`super::strace::TRACED`].

use super::{strace, Trace, TraceError};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

/// How to install strace, for the message when it is missing.
pub const INSTALL_HINT: &str =
    "install it (Debian/Ubuntu: sudo apt-get install strace; Fedora: sudo dnf install strace)";

/// The strace executable on `PATH`, if any.
pub fn find_strace() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("strace"))
        .find(|p| p.is_file())
}

/// The strace arguments that record `program` into `log`.
pub fn strace_args(log: &Path, program: &[OsString]) -> Vec<OsString> {
    let mut a: Vec<OsString> = ["-f", "-tt", "-T", "-y", "-qq", "-s", "0", "-e"]
        .iter()
        .map(OsString::from)
        .collect();
    a.push(format!("trace={}", strace::TRACED).into());
    a.push("-o".into());
    a.push(log.as_os_str().to_owned());
    a.push("--".into());
    a.extend(program.iter().cloned());
    a
}

/// What a recording produced.
#[derive(Debug)]
pub struct Recorded {
    /// The reads.
    pub trace: Trace,
    /// The program's exit status (strace passes it on); None if killed.
    pub status: Option<i32>,
}

/// Runs `program` under strace, writing the raw log to `log`, and converts
/// it. The program keeps this process's stdin, stdout and stderr.
pub fn record(program: &[OsString], log: &Path) -> Result<Recorded, TraceError> {
    if program.is_empty() {
        return Err(TraceError::Refused(
            "record: name the program to run after --, e.g. iolab record -o t.csv -- grep -r x src"
                .into(),
        ));
    }
    let strace = find_strace().ok_or_else(|| {
        TraceError::Refused(format!(
            "record: strace is not installed (not on PATH); {INSTALL_HINT}"
        ))
    })?;
    let status = Command::new(&strace)
        .args(strace_args(log, program))
        .status()
        .map_err(|source| TraceError::Io {
            path: strace.clone(),
            source,
        })?;
    let text = std::fs::read(log).map_err(|source| TraceError::Io {
        path: log.to_path_buf(),
        source,
    })?;
    if text.is_empty() {
        return Err(TraceError::Refused(format!(
            "record: strace wrote nothing (exit status {}); it may not be allowed to trace here (ptrace) or the program could not start: see its message above",
            status.code().map(|c| c.to_string()).unwrap_or_else(|| "none".into())
        )));
    }
    let trace = strace::parse(&String::from_utf8_lossy(&text), &log.display().to_string())?;
    Ok(Recorded {
        trace,
        status: status.code(),
    })
}
