//! The Python package's tests, run by pytest from `cargo test`.
//!
//! Builds `iolab` in the dev profile into the virtual environment
//! `scripts/setup.sh` makes (`.venv-py` at the repository root, or
//! `$IOLAB_PY_VENV`), mounts a fault-injecting file system whose files fail
//! the way disks do (EIO, EACCES, short reads) and hands its path to the
//! tests, then runs pytest. Fails on any failed test, when no test ran,
//! and under `CI=true` when a test was skipped.
//!
//! The extension is built by cargo with every workspace target selected,
//! as `cargo test --workspace` selects them, so its dependencies (the
//! reader, serde, libc, ...) get the same features and are the artifacts
//! the rest of the suite built: only PyO3 and the extension itself are
//! compiled here. (maturin builds the one crate alone, with its own feature
//! set, and would compile the reader and its dependencies again.) The
//! module is then installed as `maturin develop` installs a mixed project:
//! the library beside `python/iolab/__init__.py`, and a `.pth` file that
//! puts `python/` on the environment's path. Run alone (`cargo test -p
//! iolab-py-tests`) on a fresh tree, the build compiles the workspace's
//! test targets first, as the whole suite would.

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

/// Builds the extension (dev profile) and installs it into the
/// environment, so the tests import what this tree holds.
fn build(venv: &Path) {
    let root = repo_root();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "build",
            "--workspace",
            "--lib",
            "--bins",
            "--tests",
            "--examples",
        ])
        .args(["--message-format=json-render-diagnostics", "--quiet"])
        .current_dir(&root)
        .output()
        .expect("run cargo build");
    assert!(
        out.status.success(),
        "cargo build failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let so = extension_path(&String::from_utf8_lossy(&out.stdout))
        .expect("cargo built no iolab._native library");
    let pkg = root.join("python/iolab");
    // A new file renamed over the old one: a Python still running the old
    // module keeps its mapping intact.
    let tmp = pkg.join(format!("._native.{}.tmp", std::process::id()));
    std::fs::copy(&so, &tmp).expect("copy the extension");
    std::fs::rename(&tmp, pkg.join("_native.abi3.so")).expect("install the extension");
    let site = Command::new(venv.join("bin/python"))
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        ])
        .output()
        .expect("ask the environment for its site-packages");
    let site = PathBuf::from(String::from_utf8_lossy(&site.stdout).trim());
    let python_dir = root.join("python").canonicalize().expect("python/");
    std::fs::write(
        site.join("iolab_dev.pth"),
        format!("{}\n", python_dir.display()),
    )
    .expect("write the .pth file");
}

/// The cdylib of `iolab-py` in cargo's JSON messages.
fn extension_path(messages: &str) -> Option<PathBuf> {
    messages
        .lines()
        .filter(|l| l.contains("\"compiler-artifact\"") && l.contains("\"cdylib\""))
        .filter(|l| l.contains("iolab-py#") || l.contains("iolab-py "))
        .find_map(|l| {
            let at = l.find("\"filenames\":[\"")? + "\"filenames\":[\"".len();
            let end = l[at..].find('"')?;
            Some(PathBuf::from(&l[at..at + end]))
        })
}

/// Tests skipped for what iolab never installs (their reason starts with
/// "optional: ", as python/tests/conftest.py's `OPTIONAL`), from the
/// lines of pytest's `-rs` summary ("SKIPPED [3] tests/x.py:12: optional: ...").
fn optional_skips(report: &str) -> u32 {
    report
        .lines()
        .filter_map(|l| l.strip_prefix("SKIPPED ["))
        .filter(|rest| rest.contains(": optional: "))
        .filter_map(|rest| rest.split(']').next()?.parse::<u32>().ok())
        .sum()
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
    let have = Command::new(venv.join("bin/python"))
        .args(["-c", "import pytest, numpy"])
        .output()
        .is_ok_and(|o| o.status.success());
    iolab::require!(
        have,
        "no Python environment with pytest and NumPy at {} (scripts/setup.sh makes it)",
        venv.display()
    );
    build(&venv);
    let whence = Command::new(venv.join("bin/python"))
        .args(["-c", "import iolab._native as n; print(n.__file__)"])
        .current_dir("/")
        .output()
        .expect("import iolab");
    let whence = String::from_utf8_lossy(&whence.stdout);
    assert!(
        whence.trim().starts_with(&*repo_root().join("python").canonicalize().unwrap().to_string_lossy()),
        "the environment imports iolab from {whence:?}, not from this tree's python/ (uninstall that copy)"
    );
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
    let required = skipped.saturating_sub(optional_skips(&text));
    assert!(
        required == 0 || !iolab::testing::in_ci(),
        "{required} Python test(s) skipped under CI=true:\n{text}"
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

#[test]
fn only_skips_for_what_iolab_never_installs_are_optional() {
    let report = "SKIPPED [3] tests/test_dlpack.py:234: optional: PyTorch is not installed\n\
                  SKIPPED [1] tests/test_errors.py:9: no fault file system mounted\n\
                  SKIPPED [2] tests/test_dlpack.py:240: optional: no CUDA GPU\n\
                  4 passed, 6 skipped in 1.00s\n";
    assert_eq!(optional_skips(report), 5);
    assert_eq!(counts(report).2 - optional_skips(report), 1);
}
