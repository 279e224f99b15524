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
