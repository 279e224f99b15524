//! What a new user meets first: a bare `iolab` explains itself and makes
//! nothing; the default `bench` gives a clean, true run (no warning on this
//! machine); messages speak in words, not the tables' labels.

mod common;

use common::{iolab, listing, stderr, stdout, words};

#[test]
fn a_bare_iolab_prints_usage_and_makes_nothing() {
    let d = tempfile::tempdir().unwrap();
    let o = iolab(&[], d.path());
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(out.contains("Usage: iolab <COMMAND>"), "{out}");
    // The first thing to try, and what it costs in time and space.
    assert!(out.contains("iolab survey"), "{out}");
    assert!(out.contains(" s,") && out.contains("1 GiB"), "{out}");
    assert!(out.lines().count() <= 16, "short: {out}");
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
    assert_eq!(listing(d.path()), Vec::<String>::new());
}

#[test]
fn the_default_bench_runs_clean_sequential_and_random() {
    // The default file (1 GiB), engine, block and cache; both patterns in
    // one sweep, as `iolab bench --pattern rand --time 2s` would run.
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let o = iolab(&words("bench --pattern seq,rand --time 2s"), d.path());
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{e}");
    assert!(!e.contains("warning"), "{e}");
    let out = stdout(&o);
    assert_eq!(
        out.lines().filter(|l| l.starts_with("P ")).count(),
        2,
        "{out}"
    );
    assert!(
        out.contains("label: the engine"),
        "a legend under the sweep: {out}"
    );
    assert_eq!(listing(d.path()), Vec::<String>::new());
}

#[test]
fn messages_name_the_configuration_in_words() {
    let d = tempfile::tempdir().unwrap();
    let o = iolab(&words("bench --engine null --size 64k"), d.path());
    let e = stderr(&o);
    assert!(o.status.success(), "{e}");
    assert!(
        e.contains("warning: null, sequential 4 KiB reads, depth 1, buffered: measured only"),
        "{e}"
    );
    assert!(!e.contains("N1B1"), "{e}");
}
