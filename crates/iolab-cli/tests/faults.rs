//! Faults injected for real, through the FUSE file system of
//! `iolab-faultfs`, and what `iolab bench` does about them: every failed op
//! named with its file and offset, short reads completed or reported and
//! never counted as full blocks, a shrunken file a clear error, `mmap` never
//! killed by SIGBUS, ENOSPC a clean error that leaves no partial file, and a
//! stalled read ended by SIGINT/SIGTERM. Each run is bounded: a hang fails.

mod common;

use common::argv;

use iolab_faultfs::{mount_or_skip, FaultFile, Faults, Mounted};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

const MIB: u64 = 1 << 20;
const EIO_AT: u64 = MIB;

fn iolab() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_iolab"));
    c.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// Waits for `child`, killing it (and failing the test) after `limit`.
fn wait_bounded(mut child: Child, limit: Duration, what: &str) -> Output {
    let t = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if t.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "{what}: still running after {limit:?} (hung); stderr: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn run(args: &[&str], what: &str) -> Output {
    let child = iolab().args(args).spawn().unwrap();
    wait_bounded(child, Duration::from_secs(60), what)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The stderr lines that are not warnings.
fn error_lines(o: &Output) -> Vec<String> {
    stderr(o)
        .lines()
        .filter(|l| !l.starts_with("warning:") && !l.starts_with("note:"))
        .map(str::to_owned)
        .collect()
}

fn eio(direct_io: bool) -> Faults {
    Faults {
        eio: Some(EIO_AT..EIO_AT + 4096),
        direct_io,
        ..Faults::default()
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn eio_is_reported_with_file_and_offset_by_every_engine() {
    let m = mount_or_skip!(
        "eio_is_reported_with_file_and_offset_by_every_engine",
        vec![
            FaultFile::new("eio", 4 * MIB, 1).with(eio(true)),
            FaultFile::new("eio-cached", 4 * MIB, 2).with(eio(false)),
        ]
    );
    let direct = m.path("eio");
    let cached = m.path("eio-cached");
    // (file, extra arguments). The mmap engine cannot map a FUSE file served
    // with direct I/O (the kernel refuses shared mappings of it), so it reads
    // the page-cached copy, where a failed page is a SIGBUS, not an errno.
    let cases: Vec<(&Path, Vec<&str>)> = vec![
        (&direct, vec!["--engine", "read"]),
        (&direct, vec!["--engine", "pread"]),
        (&direct, vec!["--engine", "preadv2"]),
        (&direct, vec!["--engine", "stream"]),
        (&direct, vec!["--engine", "uring", "--qd", "8"]),
        (&direct, vec!["--engine", "libaio", "--qd", "8"]),
        (&direct, vec!["--engine", "posixaio", "--qd", "8"]),
        (&direct, vec!["--engine", "threadpool", "--qd", "8"]),
        (&direct, vec!["--engine", "pread", "--threads", "2"]),
        (&cached, vec!["--engine", "pread"]),
        (&cached, vec!["--engine", "pread", "--direct"]),
        (&cached, vec!["--engine", "uring", "--direct", "--qd", "4"]),
        (&cached, vec!["--engine", "mmap"]),
        (&cached, vec!["--engine", "mmap", "--mmap-touch"]),
    ];
    for (file, extra) in cases {
        let mut args = vec!["bench", "--file", s(file), "--bs", "4k", "--cache", "as-is"];
        args.extend(extra.iter());
        let what = args.join(" ");
        let o = run(&args, &what);
        let err = error_lines(&o);
        assert_eq!(o.status.code(), Some(1), "{what}: {}", stderr(&o));
        assert_eq!(err.len(), 1, "{what}: one error line: {err:?}");
        let line = &err[0];
        assert!(
            line.contains(&format!("offset {EIO_AT} of {}", file.display()))
                && line.contains("Input/output error"),
            "{what}: names the file and the offset: {line}"
        );
        assert!(!stderr(&o).contains("panicked"), "{what}");
    }
    assert!(m.stats().eio.load(Ordering::Relaxed) >= 14);
}

#[test]
fn eio_continue_on_error_counts_and_without_it_partial_results_are_kept() {
    let m = mount_or_skip!(
        "eio_continue_on_error_counts_and_without_it_partial_results_are_kept",
        vec![FaultFile::new("eio", 4 * MIB, 1).with(eio(true))]
    );
    let f = m.path("eio");
    let d = tempfile::tempdir().unwrap();
    // --continue-on-error: every other op is measured, the failed one is
    // counted with its file and offset, and the run still fails (exit 1,
    // saying how many ops failed).
    for engine in ["pread", "uring"] {
        let o = run(
            &argv(
                "bench --file {} --engine {} --cache as-is --json --continue-on-error",
                &[s(&f), engine],
            ),
            "continue on error",
        );
        assert_eq!(o.status.code(), Some(1), "{engine}: {}", stderr(&o));
        assert!(stderr(&o).contains("error: 1 ops failed"), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let r = &v["records"][0]["runs"][0];
        assert_eq!(r["errors"], 1, "{engine}: {r}");
        assert_eq!(r["ops"], 4 * MIB / 4096 - 1, "{engine}");
        assert_eq!(r["bytes"], 4 * MIB - 4096, "{engine}");
        let first = r["first_errors"][0].as_str().unwrap_or_default();
        assert!(
            first.contains(&format!("offset {EIO_AT} of {}", f.display())),
            "{engine}: {first}"
        );
    }
    // Without it: the run stops at the error, exits 1, and what it measured
    // before (the first MiB) is still printed and written.
    let jsonl = d.path().join("runs.jsonl");
    let o = run(
        &argv(
            "bench --file {} --cache as-is --jsonl {}",
            &[s(&f), s(&jsonl)],
        ),
        "stop at the first error",
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("throughput"));
    let line = std::fs::read_to_string(&jsonl).unwrap();
    let v: serde_json::Value = serde_json::from_str(line.lines().next().unwrap()).unwrap();
    assert_eq!(v["runs"][0]["bytes"], EIO_AT, "{line}");
}

#[test]
fn a_stall_longer_than_op_timeout_names_the_op() {
    let m = mount_or_skip!(
        "a_stall_longer_than_op_timeout_names_the_op",
        vec![FaultFile::new("stall", MIB, 9).with(Faults {
            stall: Some((0..4096, Duration::from_secs(60))),
            direct_io: true,
            ..Faults::default()
        })]
    );
    let f = m.path("stall");
    let t = Instant::now();
    let o = run(
        &argv("bench --file {} --cache as-is --op-timeout 300ms", &[s(&f)]),
        "op timeout",
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = error_lines(&o);
    assert_eq!(err.len(), 1, "{err:?}");
    assert!(
        err[0].contains(&format!("offset 0 of {}", f.display())) && err[0].contains("--op-timeout"),
        "{err:?}"
    );
    // The stall lasts a minute: the run did not wait it out.
    assert!(
        t.elapsed() < Duration::from_secs(30),
        "took {:?}",
        t.elapsed()
    );
}

#[test]
fn short_reads_are_completed_never_counted_as_full_blocks() {
    let short = Faults {
        short_read: Some(1000),
        direct_io: true,
        ..Faults::default()
    };
    let m = mount_or_skip!(
        "short_reads_are_completed_never_counted_as_full_blocks",
        vec![FaultFile::new("short", MIB, 3).with(short)]
    );
    let f = m.path("short");
    for engine in [
        vec!["--engine", "pread"],
        vec!["--engine", "read"],
        vec!["--engine", "uring", "--qd", "4"],
        vec!["--engine", "threadpool", "--qd", "4"],
    ] {
        let before = m.stats().short.load(Ordering::Relaxed);
        let mut args = vec![
            "bench",
            "--file",
            s(&f),
            "--bs",
            "4k",
            "--verify",
            "--json",
            "--cache",
            "as-is",
        ];
        args.extend(engine.iter());
        let what = args.join(" ");
        let o = run(&args, &what);
        let after = m.stats().short.load(Ordering::Relaxed);
        assert!(after > before, "{what}: the file system answered short");
        match o.status.code() {
            // Completed: every op is one whole, verified block.
            Some(0) => {
                let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
                let r = &v["records"][0]["runs"][0];
                assert_eq!(r["bytes"], MIB, "{what}");
                assert_eq!(r["latency"]["count"], MIB / 4096, "{what}");
                assert_eq!(r["errors"], 0, "{what}");
            }
            // Or reported, naming where: as short, or (io_uring on this
            // kernel retries a FUSE short read itself, at the op's first
            // offset again, and completes it with the wrong bytes) as a
            // verify failure at the first byte after the short part.
            Some(1) => {
                let err = error_lines(&o);
                assert_eq!(err.len(), 1, "{what}: {err:?}");
                assert!(
                    err[0].contains("short read at offset")
                        || err[0].contains("verify failed") && err[0].contains("at offset 1000:"),
                    "{what}: {err:?}"
                );
            }
            c => panic!("{what}: exit {c:?}: {}", stderr(&o)),
        }
    }
}

#[test]
fn a_file_that_shrinks_mid_run_is_a_clear_error_and_mmap_never_sigbus() {
    let shrink = |direct_io| Faults {
        shrink_after: Some((256 << 10, 64 << 10)),
        direct_io,
        ..Faults::default()
    };
    let m = mount_or_skip!(
        "a_file_that_shrinks_mid_run_is_a_clear_error_and_mmap_never_sigbus",
        vec![
            FaultFile::new("shrink", 4 * MIB, 4).with(shrink(true)),
            FaultFile::new("shrink-cached", 4 * MIB, 5).with(shrink(false)),
        ]
    );
    let o = run(
        &["bench", "--file", s(&m.path("shrink")), "--cache", "as-is"],
        "pread on a shrinking file",
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = error_lines(&o);
    assert_eq!(err.len(), 1, "{err:?}");
    assert!(
        err[0].contains("short read at offset 262144") && err[0].contains("shrink"),
        "{err:?}"
    );
    // mmap: the pages past the new end cannot be supplied. Before, SIGBUS
    // (exit 135); now an error naming the offset, or (if the kernel still
    // had the pages) a clean run.
    let o = run(
        &[
            "bench",
            "--file",
            s(&m.path("shrink-cached")),
            "--engine",
            "mmap",
            "--cache",
            "as-is",
        ],
        "mmap on a shrinking file",
    );
    assert_ne!(o.status.code(), Some(135), "SIGBUS: {}", stderr(&o));
    assert!(
        o.status.code().is_some(),
        "killed by a signal: {:?}",
        o.status
    );
    if o.status.code() != Some(0) {
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        let err = error_lines(&o);
        assert_eq!(err.len(), 1, "{err:?}");
        assert!(err[0].contains("offset"), "{err:?}");
    }
}

#[test]
fn enospc_while_preparing_is_clean_and_leaves_no_partial_file() {
    let m = mount_or_skip!(
        "enospc_while_preparing_is_clean_and_leaves_no_partial_file",
        vec![FaultFile::new("theirs", 64 << 10, 6).with(Faults {
            enospc_after: Some(MIB),
            ..Faults::default()
        })]
    );
    let before = names(m.dir());
    // A named new file, and the temporary file of a run without --file.
    let new = m.path("new");
    for args in [
        vec!["bench", "--file", s(&new), "--size", "4m"],
        vec!["bench", "--dir", s(m.dir()), "--size", "4m"],
    ] {
        let what = args.join(" ");
        let o = run(&args, &what);
        assert_eq!(o.status.code(), Some(1), "{what}: {}", stderr(&o));
        let err = error_lines(&o);
        assert_eq!(err.len(), 1, "{what}: {err:?}");
        assert!(
            err[0].contains("No space left on device") && err[0].contains(s(m.dir())),
            "{what}: names the file system's place: {err:?}"
        );
        assert_eq!(names(m.dir()), before, "{what}: partial file left behind");
    }
    assert!(m.stats().enospc.load(Ordering::Relaxed) >= 2);
}

#[test]
fn enospc_while_writing_names_the_offset_and_keeps_the_users_file() {
    let m = mount_or_skip!(
        "enospc_while_writing_names_the_offset_and_keeps_the_users_file",
        vec![FaultFile::new("data", 4 * MIB, 7).with(Faults {
            enospc_after: Some(MIB),
            direct_io: true,
            ..Faults::default()
        })]
    );
    let f = m.path("data");
    let o = run(
        &argv("bench --file {} --op write --cache as-is", &[s(&f)]),
        "write until ENOSPC",
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = error_lines(&o);
    assert_eq!(err.len(), 1, "{err:?}");
    assert!(
        err[0].contains(&format!(
            "write of 4096 bytes at offset {MIB} of {}",
            f.display()
        )) && err[0].contains("No space left on device"),
        "{err:?}"
    );
    assert_eq!(std::fs::metadata(&f).unwrap().len(), 4 * MIB, "kept");
}

#[test]
fn a_file_without_permission_is_bad_input() {
    let m = mount_or_skip!(
        "a_file_without_permission_is_bad_input",
        vec![FaultFile::new("denied", MIB, 8).with(Faults {
            eacces: true,
            ..Faults::default()
        })]
    );
    let o = run(
        &["bench", "--file", s(&m.path("denied")), "--cache", "as-is"],
        "EACCES",
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = error_lines(&o);
    assert_eq!(err.len(), 1, "{err:?}");
    assert!(err[0].contains("Permission denied") && err[0].contains("denied"));
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Starts iolab reading a file whose first block stalls, waits until the
/// read is stalled in the file system, sends `sig`, and returns the output.
fn signal_a_stalled_run(m: &Mounted, name: &str, sig: i32, threads: &str) -> (Output, Duration) {
    let stalled = m.stats().stalled.load(Ordering::SeqCst);
    let child = iolab()
        .args([
            "bench",
            "--file",
            s(&m.path(name)),
            "--cache",
            "as-is",
            "--threads",
            threads,
        ])
        .spawn()
        .unwrap();
    let t = Instant::now();
    while m.stats().stalled.load(Ordering::SeqCst) == stalled {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "never reached the stall"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // SAFETY: kill has no memory-safety preconditions; the pid is our child.
    unsafe { libc::kill(child.id() as i32, sig) };
    let t = Instant::now();
    let o = wait_bounded(child, Duration::from_secs(20), "signalled stalled run");
    (o, t.elapsed())
}

#[test]
fn sigint_and_sigterm_end_a_run_stalled_in_the_file_system() {
    let stall = Faults {
        stall: Some((0..4096, Duration::from_secs(60))),
        direct_io: true,
        ..Faults::default()
    };
    let m = mount_or_skip!(
        "sigint_and_sigterm_end_a_run_stalled_in_the_file_system",
        vec![FaultFile::new("stall", MIB, 9).with(stall)]
    );
    // --threads 0: the main thread is the one stalled, and the file system
    // answers the signal (EINTR) as a kernel file system would. Otherwise a
    // worker is stalled, the main thread takes the signal, and the run ends
    // without the blocked worker.
    for (sig, code, threads) in [
        (libc::SIGTERM, 143, "0"),
        (libc::SIGINT, 130, "0"),
        (libc::SIGTERM, 143, "1"),
        (libc::SIGINT, 130, "2"),
    ] {
        let (o, took) = signal_a_stalled_run(&m, "stall", sig, threads);
        assert_eq!(o.status.code(), Some(code), "{}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"));
        // The stall lasts a minute; ending well before it shows the signal,
        // not the file system, ended the run.
        assert!(took < Duration::from_secs(20), "took {took:?}");
    }
    assert!(
        m.stats().interrupted.load(Ordering::SeqCst) >= 2,
        "the file system saw the signals"
    );
}

#[test]
fn sigterm_ends_a_run_blocked_opening_a_fifo_output() {
    let d = tempfile::tempdir().unwrap();
    let fifo = d.path().join("fifo");
    let c = std::ffi::CString::new(s(&fifo)).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let child = iolab()
        .args([
            "bench",
            "--dir",
            s(d.path()),
            "--size",
            "1m",
            "--jsonl",
            s(&fifo),
        ])
        .spawn()
        .unwrap();
    // Wait until the run is done measuring and blocked opening the FIFO
    // (no reader): its temporary file is gone or it is in open(2).
    let t = Instant::now();
    loop {
        let wchan =
            std::fs::read_to_string(format!("/proc/{}/wchan", child.id())).unwrap_or_default();
        if wchan.contains("fifo") || wchan.contains("pipe") || wchan.contains("partner") {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "never blocked: {wchan}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: kill has no memory-safety preconditions; the pid is our child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let o = wait_bounded(child, Duration::from_secs(10), "blocked on a FIFO");
    assert_eq!(o.status.code(), Some(143), "{}", stderr(&o));
    use std::os::unix::fs::FileTypeExt;
    assert!(
        std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo(),
        "the FIFO is still a FIFO"
    );
    // Nothing but the FIFO is left: the temporary test file was removed.
    assert_eq!(names(d.path()), vec!["fifo".to_string()]);
}
