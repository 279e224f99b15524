//! A corpus of bad command lines, generated from the flag
//! table (every flag that takes a value × zero, negative, huge, overflowing,
//! non-numeric, empty, wrong-unit values), conflicting combinations, and
//! every kind of wrong path. Each line is parsed and checked in process (the
//! argument parser, then the checks each command makes before it measures);
//! every one must be refused with exit status 2 and one line naming the
//! flag, without a panic and without anything on disk created or changed.
//! A sample is also run through the real binary (`tests/corpus.rs`, with
//! the same generator).

use crate::error::{exit_code, one_line};
use crate::fuzz_corpus::{corpus, listing, scratch, Case};
use crate::{argv, Cli, Cmd};
use std::ffi::OsString;

/// The value-taking flags of a subcommand, from clap's table.
fn value_flags(sub: &str) -> Vec<String> {
    use clap::CommandFactory;
    let cmd = Cli::command();
    let c = cmd.find_subcommand(sub).expect("subcommand").clone();
    c.get_arguments()
        .filter(|a| !a.is_positional() && a.get_action().takes_values())
        .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
        .collect()
}

/// The outcome of one case checked in process: (exit status, error line).
fn check_in_process(c: &Case) -> (i32, String) {
    let mut argv: Vec<OsString> = vec!["iolab".into()];
    argv.extend(c.args.iter().cloned());
    let cli: Cli = match argv::parse_from(&argv) {
        Ok(cli) => cli,
        Err(line) => return (2, line),
    };
    let res = match cli.cmd {
        Some(Cmd::Bench(a)) => crate::cmd::bench::plan(&a).map(|_| ()),
        Some(Cmd::Xor(a)) => crate::cmd::xor::check(&a),
        Some(Cmd::Run(a)) => crate::cmd::run::check(&a),
        Some(Cmd::Survey(a)) => crate::cmd::survey::check(&a),
        None => Ok(()),
        Some(Cmd::Sys(_)) => return (-1, "sys: checked by running the binary".into()),
        Some(Cmd::Fio(a)) => crate::cmd::fio::check(&a),
        // Commands whose own tests check their input (trace, replay, lab).
        Some(_) => return (-1, "checked by its own tests".into()),
    };
    match res {
        Ok(()) => (0, String::new()),
        Err(e) => (exit_code(&e), format!("error: {}", one_line(&e))),
    }
}

#[test]
fn the_corpus_of_bad_command_lines_is_refused_in_process() {
    let tmp = tempfile::tempdir().unwrap();
    let paths = scratch(tmp.path());
    let cases = corpus(&paths, &value_flags);
    let before = listing(tmp.path());
    let mut checked = 0;
    let mut failures = Vec::new();
    for c in &cases {
        let r = std::panic::catch_unwind(|| check_in_process(c));
        let (code, line) = match r {
            Ok(x) => x,
            Err(_) => {
                failures.push(format!("PANIC: {:?}", c.args));
                continue;
            }
        };
        if code == -1 {
            continue;
        }
        checked += 1;
        let one = !line.contains('\n') && line.starts_with("error: ");
        // A long value is quoted by its start only.
        let start: String = c.names.chars().take(40).collect();
        let names = line.contains(&c.names) || (c.names.len() > 80 && line.contains(&start));
        if code != 2 || !one || !names {
            let shown: Vec<String> = c
                .args
                .iter()
                .map(|a| {
                    let a = a.to_string_lossy();
                    if a.len() > 80 {
                        format!("{}...({} bytes)", &a[..40], a.len())
                    } else {
                        a.into_owned()
                    }
                })
                .collect();
            failures.push(format!(
                "{shown:?}: exit {code}, line {:?} (must name {})",
                line.chars().take(200).collect::<String>(),
                c.names
            ));
        }
    }
    assert_eq!(listing(tmp.path()), before, "something on disk changed");
    assert!(checked >= 500, "only {checked} cases checked in process");
    assert!(
        failures.is_empty(),
        "{} of {checked} bad command lines not refused properly:\n{}",
        failures.len(),
        failures.join("\n")
    );
    eprintln!(
        "corpus: {} cases, {checked} checked in process, 0 failures",
        cases.len()
    );
}
