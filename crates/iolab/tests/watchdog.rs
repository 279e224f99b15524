//! The watchdog without a thread: after the first SIGTERM, a process that
//! does not end by itself (here: it ignores the stop flag, as a thread
//! blocked in the kernel would) is ended by SIGALRM's handler after the
//! grace period, and the files it made are removed, but only while they are
//! still the files it made.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const CHILD: &str = "IOLAB_WATCHDOG_CHILD_DIR";

/// In the child: make files, remember them, then never look at the flag.
fn child(dir: &Path) -> ! {
    iolab::stop::install().unwrap();
    iolab::stop::arm_watchdog(1, "watchdog: gone\n").unwrap();
    let remember = |p: &Path| {
        let id = iolab::file::FileIdent::of_path(p).unwrap();
        iolab::stop::remove_at_forced_exit(p, id).unwrap()
    };
    // A tree, registered as iolab registers an output directory.
    let tree = dir.join("tree");
    std::fs::create_dir_all(tree.join("a/b")).unwrap();
    for f in ["x", "a/y", "a/b/z"] {
        std::fs::write(tree.join(f), b"made").unwrap();
    }
    remember(&tree);
    // A file that is replaced by another one under the same name.
    let swapped = dir.join("swapped");
    std::fs::write(&swapped, b"ours").unwrap();
    remember(&swapped);
    std::fs::write(dir.join("theirs"), b"theirs").unwrap();
    std::fs::rename(dir.join("theirs"), &swapped).unwrap();
    // A file that is forgotten (kept).
    let kept = dir.join("kept");
    std::fs::write(&kept, b"keep").unwrap();
    let slot = remember(&kept);
    iolab::stop::forget_at_forced_exit(slot);
    std::fs::write(dir.join("ready"), b"").unwrap();
    // std's sleep resumes after EINTR: the flag is never looked at.
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}

#[test]
fn sigalrm_ends_a_run_that_ignores_the_flag_and_removes_only_its_files() {
    if let Some(d) = std::env::var_os(CHILD) {
        child(Path::new(&d));
    }
    let d = tempfile::tempdir().unwrap();
    let mut c = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "sigalrm_ends_a_run_that_ignores_the_flag_and_removes_only_its_files",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(CHILD, d.path())
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while !d.path().join("ready").exists() {
        assert!(t.elapsed() < Duration::from_secs(30), "child never ready");
        std::thread::sleep(Duration::from_millis(10));
    }
    // SAFETY: kill has no memory-safety preconditions; the pid is our child.
    unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
    let t = Instant::now();
    let status = loop {
        if let Some(s) = c.try_wait().unwrap() {
            break s;
        }
        if t.elapsed() > Duration::from_secs(20) {
            let _ = c.kill();
            panic!("the watchdog did not end the child");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let waited = t.elapsed();
    let mut err = String::new();
    use std::io::Read;
    c.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert_eq!(status.code(), Some(143), "{err}");
    assert!(err.contains("watchdog: gone"), "{err}");
    // It waited for the grace second first.
    assert!(waited >= Duration::from_millis(900), "{waited:?}");
    assert!(
        !d.path().join("tree").exists(),
        "the tree it made is removed"
    );
    assert_eq!(std::fs::read(d.path().join("swapped")).unwrap(), b"theirs");
    assert_eq!(std::fs::read(d.path().join("kept")).unwrap(), b"keep");
}
