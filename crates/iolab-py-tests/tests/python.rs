//! The Python package's tests, run by pytest from `cargo test`.
//!
//! Builds `iolab` in the dev profile with maturin into the virtual
//! environment `scripts/setup.sh` makes (`.venv-py` at the repository root,
//! or `$IOLAB_PY_VENV`), mounts a fault-injecting file system whose files
//! fail the way disks do (EIO, EACCES, short reads) and hands its path to
//! the tests, then runs pytest. Fails on any failed test, when no test ran,
//! and under `CI=true` when a test was skipped.

use iolab_faultfs::{FaultFile, Faults, Mounted};
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn venv() -> PathBuf {
    std::env::var_os("IOLAB_PY_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join(".venv-py"))
}

/// The faulty files the tests read, if this machine can mount them.
fn fault_files() -> Result<Mounted, String> {
    iolab_faultfs::available()?;
    let direct = |f: Faults| Faults {
        direct_io: true,
        ..f
    };
    Mounted::mount(vec![
        FaultFile::new("eio", 1 << 20, 1).with(direct(Faults {
            eio: Some(256 << 10..260 << 10),
            ..Faults::default()
        })),
        FaultFile::new("denied", 4096, 2).with(Faults {
            eacces: true,
            ..Faults::default()
        }),
        FaultFile::new("short", (3 << 20) + 5, 3).with(direct(Faults {
            short_read: Some(1000),
            ..Faults::default()
        })),
    ])
    .map_err(|e| format!("mount the fault file system: {e}"))
}

/// Builds the package into the environment (dev profile, as the rest of
/// the suite), so the tests import what this tree holds.
fn build(venv: &Path) {
    let out = Command::new(venv.join("bin/maturin"))
        .args(["develop", "--quiet"])
        .current_dir(repo_root().join("python"))
        .env("VIRTUAL_ENV", venv)
        .env_remove("CONDA_PREFIX")
        .output()
        .expect("run maturin");
    assert!(
        out.status.success(),
        "maturin develop failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `(passed, failed, skipped)` from pytest's last summary line
/// ("2 failed, 10 passed, 1 skipped in 3.21s").
fn counts(summary: &str) -> (u32, u32, u32) {
    let line = summary
        .lines()
        .rev()
        .find(|l| l.contains(" in "))
        .unwrap_or("");
    let line = line.trim_matches(|c: char| c == '=' || c.is_whitespace());
    let line = line.rsplit_once(" in ").map_or(line, |(head, _)| head);
    let n = |word: &str| {
        line.split(',')
            .map(str::trim)
            .find_map(|part| {
                let (num, w) = part.split_once(' ')?;
                (w == word).then(|| num.parse::<u32>().ok()).flatten()
            })
            .unwrap_or(0)
    };
    (
        n("passed"),
        n("failed") + n("error") + n("errors"),
        n("skipped"),
    )
}

#[test]
fn python_package_tests_pass() {
    let venv = venv();
    let have = venv.join("bin/python").exists() && venv.join("bin/maturin").exists();
    iolab::require!(
        have,
        "no Python environment with maturin at {} (scripts/setup.sh makes it)",
        venv.display()
    );
    build(&venv);
    let faults = fault_files();
    let mut cmd = Command::new(venv.join("bin/python"));
    cmd.args(["-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider"])
        .current_dir(repo_root().join("python"))
        .env("VIRTUAL_ENV", &venv);
    match &faults {
        Ok(m) => cmd.env("IOLAB_TEST_FAULT_DIR", m.dir()),
        Err(why) => cmd.env("IOLAB_TEST_NO_FAULT_DIR", why),
    };
    let out = cmd.output().expect("run pytest");
    drop(faults);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{text}");
    let (passed, failed, skipped) = counts(&text);
    assert!(
        out.status.success() && failed == 0,
        "pytest failed:\n{text}"
    );
    assert!(passed > 0, "pytest ran no test:\n{text}");
    assert!(
        skipped == 0 || !iolab::testing::in_ci(),
        "{skipped} Python test(s) skipped under CI=true:\n{text}"
    );
}

#[test]
fn pytest_summaries_are_counted() {
    assert_eq!(counts("....\n12 passed, 1 skipped in 3.21s\n"), (12, 0, 1));
    assert_eq!(
        counts("===== 2 failed, 10 passed, 1 error in 1.00s =====\n"),
        (10, 3, 0)
    );
    assert_eq!(counts("no tests ran in 0.01s\n"), (0, 0, 0));
}
