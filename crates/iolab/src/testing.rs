//! Helpers for tests that need a tool or a kernel feature this machine may
//! lack. Such a test must never pass without running its check: under CI
//! (`CI=true`, where fio, io_uring, O_DIRECT and SQPOLL are all present) a
//! missing requirement fails the test; elsewhere the test says
//! `SKIPPED: <test>: <reason>` on stderr and returns.
//!
//! ```
//! fn needs_fio() {
//!     let have_fio = true;
//!     iolab::require!(have_fio, "fio is not installed");
//!     // ... the check itself ...
//! }
//! needs_fio();
//! ```

use std::path::{Path, PathBuf};

/// `n` bytes, each a function of its offset and `seed`, so a test can
/// tell any misplaced or missing byte from the right one.
pub fn bytes(n: usize, seed: u64) -> Vec<u8> {
    (0..n as u64)
        .map(|i| ((i ^ seed).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 37) as u8)
        .collect()
}

/// A file `name` in `dir` holding [`bytes`]`(n, seed)`: its path and the
/// bytes, to compare with what a reader gives back.
pub fn file(dir: &Path, name: &str, n: usize, seed: u64) -> (PathBuf, Vec<u8>) {
    let p = dir.join(name);
    let v = bytes(n, seed);
    std::fs::write(&p, &v).unwrap();
    (p, v)
}

/// Whether the tests run under CI, where every requirement must be met.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// What [`require!`](crate::require) does when a requirement is not met:
/// panics under CI, else prints `SKIPPED: <test>: <reason>` to stderr.
pub fn unmet(reason: &str) {
    let test = std::thread::current()
        .name()
        .unwrap_or("unnamed test")
        .to_string();
    if in_ci() {
        panic!("{test}: required under CI=true: {reason}");
    }
    eprintln!("SKIPPED: {test}: {reason}");
}

/// `require!(condition, "reason {}", args)`: returns from the test (after
/// saying so, or failing under CI) when `condition` is false.
#[macro_export]
macro_rules! require {
    ($cond:expr, $($reason:tt)+) => {
        if !$cond {
            $crate::testing::unmet(&format!($($reason)+));
            return;
        }
    };
}

/// A Python that can run `import <imports>`: the project's test environment
/// (`$IOLAB_PY_VENV`, else `.venv-py` at the repository root, both made by
/// `scripts/setup.sh` with numpy and safetensors), else `python3` on the
/// PATH. `None` when neither can, so a test can [`require!`](crate::require) it.
pub fn python_with(imports: &str) -> Option<PathBuf> {
    let venv = std::env::var_os("IOLAB_PY_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv-py"));
    [venv.join("bin/python"), PathBuf::from("python3")]
        .into_iter()
        .find(|py| {
            std::process::Command::new(py)
                .args(["-c", &format!("import {imports}")])
                .output()
                .is_ok_and(|o| o.status.success())
        })
}
