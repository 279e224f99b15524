//! The binary half of the corpus of bad command lines: a sample (every
//! 12th, ≥ 50, and every line for the commands not checked in process) of
//! what `src/fuzz_tests.rs` checks in process, run through the real
//! `iolab` with `--json`: no panic (exit 101), exit 2,
//! exactly one line on stderr naming the flag, nothing on stdout, and
//! nothing in the scratch directory created or changed. The flag table
//! comes from the binary's own `--help`.

#[path = "../src/fuzz_corpus.rs"]
mod fuzz_corpus;

use fuzz_corpus::{corpus, listing, scratch};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn iolab() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_iolab"));
    c.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// `--long` flags that take a value, read from `iolab SUB --help`.
fn value_flags(sub: &str) -> Vec<String> {
    let out = iolab().args([sub, "--help"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let rest = l.strip_prefix("--")?;
            let (name, tail) = rest.split_once(' ')?;
            tail.starts_with('<').then(|| format!("--{name}"))
        })
        .collect()
}

/// Runs the binary with `args` in `dir`, killed after 30 s (noted in
/// `failures`, and None).
fn run_bounded(
    args: &[std::ffi::OsString],
    dir: &std::path::Path,
    failures: &mut Vec<String>,
) -> Option<std::process::Output> {
    let mut child = iolab().args(args).current_dir(dir).spawn().unwrap();
    let t = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            let _ = child.wait();
            failures.push(format!("{args:?}: still running after 30 s"));
            return None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Some(child.wait_with_output().unwrap())
}

#[test]
fn a_sample_of_the_corpus_is_refused_by_the_binary() {
    let tmp = tempfile::tempdir().unwrap();
    let paths = scratch(tmp.path());
    let cases = corpus(&paths, &value_flags);
    assert!(cases.len() >= 600, "corpus of {}", cases.len());
    let before = listing(tmp.path());
    let mut failures = Vec::new();
    let mut ran = 0;
    // Every 12th case, and every case of the commands only the binary
    // checks (in process they are skipped).
    let binary_only = ["replay", "fio", "record"];
    let sample = cases.iter().enumerate().filter(|(i, c)| {
        i % 12 == 0
            || c.args
                .first()
                .is_some_and(|a| binary_only.iter().any(|b| a == b))
    });
    for (_, c) in sample {
        // --json makes stdout's emptiness a check too (before the
        // subcommand's own arguments, it would be a stray word for xor).
        let mut args = c.args.clone();
        if args
            .first()
            .is_some_and(|a| a == "bench" || a == "sys" || a == "survey")
        {
            args.push("--json".into());
        }
        let Some(o) = run_bounded(&args, tmp.path(), &mut failures) else {
            continue;
        };
        ran += 1;
        let err = String::from_utf8_lossy(&o.stderr);
        let lines: Vec<&str> = err.lines().collect();
        // The line names the flag; for a command's input file, naming the
        // file (or the argument, or the bytes that are not UTF-8) will do.
        let path = c.args.last().map(|a| a.to_string_lossy().into_owned());
        let names = |l: &str| {
            l.contains(&c.names)
                || (c
                    .args
                    .first()
                    .is_some_and(|a| binary_only.iter().any(|b| a == b))
                    && (path.as_deref().is_some_and(|p| {
                        // A long path is quoted by its start only.
                        let start: String = p.chars().take(40).collect();
                        !p.is_empty() && (l.contains(p) || l.contains(&start))
                    }) || l.contains("UTF-8")
                        || l.contains("'<")))
        };
        let ok = o.status.code() == Some(2)
            && lines.len() == 1
            && names(lines[0])
            && o.stdout.is_empty();
        if !ok {
            failures.push(format!(
                "{:?}: exit {:?}, stdout {} bytes, stderr {:?}",
                args.iter()
                    .map(|a| a.to_string_lossy().chars().take(60).collect::<String>())
                    .collect::<Vec<_>>(),
                o.status.code(),
                o.stdout.len(),
                err.chars().take(300).collect::<String>()
            ));
        }
    }
    assert_eq!(listing(tmp.path()), before, "something on disk changed");
    assert!(ran >= 50, "only {ran} run");
    assert!(
        failures.is_empty(),
        "{} of {ran} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
