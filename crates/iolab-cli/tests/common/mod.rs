//! What the binary's test files share: running `iolab` in a folder,
//! reading its output, finding a tool on PATH, listing a folder. Each test
//! binary uses only some of it.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs the `iolab` binary with `args` in `dir` and waits for it.
pub fn iolab(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run iolab")
}

/// What it printed on stderr.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// What it printed on stdout.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Whether `tool` is on PATH.
pub fn has(tool: &str) -> bool {
    Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {tool}"))
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Every path under `d`, relative to it, sorted (symlinked folders are
/// not entered).
pub fn listing(d: &Path) -> Vec<String> {
    let mut v = Vec::new();
    fn walk(d: &Path, base: &Path, v: &mut Vec<String>) {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            v.push(p.strip_prefix(base).unwrap().display().to_string());
            if p.is_dir() && !p.is_symlink() {
                walk(&p, base, v);
            }
        }
    }
    walk(d, d, &mut v);
    v.sort();
    v
}

/// Arguments written as one line: `line` split at white space, each `{}`
/// replaced by the next of `vars` as one argument (a path may hold spaces).
/// Keeps a test's command readable as the command a person would type.
pub fn argv<'a>(line: &'a str, vars: &[&'a str]) -> Vec<&'a str> {
    let mut v = vars.iter();
    let out: Vec<&str> = line
        .split_whitespace()
        .map(|t| {
            if t == "{}" {
                *v.next().expect("a value for each {}")
            } else {
                t
            }
        })
        .collect();
    assert!(v.next().is_none(), "more values than {{}} in {line:?}");
    out
}

/// Arguments written as one line, split at white space (no `{}` values).
pub fn words(line: &str) -> Vec<&str> {
    argv(line, &[])
}

/// Runs the `iolab` binary with `args` (stdout discarded) and calls `look`
/// with its pid every 5 ms until it exits (at most 60 s); asserts that it
/// succeeded. For sampling /proc while a run is under way.
pub fn watch_run(args: &[&str], mut look: impl FnMut(u32)) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    loop {
        look(child.id());
        if child.try_wait().unwrap().is_some() {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "{args:?} never ended"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
}

/// The `__waker` children of process `pid`: (pid, CPUs they may run on).
fn wakers_of(pid: u32) -> Vec<(u32, String)> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(child) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let status = std::fs::read_to_string(format!("/proc/{child}/status")).unwrap_or_default();
        let cmdline = std::fs::read(format!("/proc/{child}/cmdline")).unwrap_or_default();
        let field = |k: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(k))
                .map(|v| v.trim().to_string())
                .unwrap_or_default()
        };
        if field("PPid:") == pid.to_string()
            && String::from_utf8_lossy(&cmdline).contains("__waker")
        {
            found.push((child, field("Cpus_allowed_list:")));
        }
    }
    found.sort();
    found
}

/// The CPUs this process may run on, as /proc writes them (`0-1`).
pub fn own_cpu_list() -> String {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim()
        .to_string()
}

/// Runs `iolab args` in `dir` and asserts that while it ran it had one
/// `__waker` child for each of `lists` (the CPUs each may run on, as
/// /proc's `Cpus_allowed_list` writes them; none if empty), and that all
/// were gone (killed and reaped) when it ended; returns its output, after
/// asserting it succeeded.
pub fn assert_wakers_during_run(args: &[&str], dir: &Path, lists: &[String]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Until all are up and have pinned themselves (a waker pins itself
    // after it starts: a busy machine may show it first on every CPU), or
    // the run has ended without that; with none expected, all through the
    // run (any waker seen is kept and fails).
    let mut expect = lists.to_vec();
    expect.sort();
    let cpus_of = |w: &[(u32, String)]| -> Vec<String> {
        let mut v: Vec<String> = w.iter().map(|(_, c)| c.clone()).collect();
        v.sort();
        v
    };
    let mut seen = Vec::new();
    while matches!(child.try_wait(), Ok(None)) {
        let now = wakers_of(child.id());
        if now.len() >= seen.len() {
            seen = now;
        }
        if !expect.is_empty() && cpus_of(&seen) == expect {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(cpus_of(&seen), expect, "wakers {seen:?}");
    for (p, _) in &seen {
        assert!(
            !Path::new(&format!("/proc/{p}")).exists(),
            "waker {p} outlived the run"
        );
    }
    o
}
