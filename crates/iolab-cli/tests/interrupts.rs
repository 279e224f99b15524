//! Signals as people and tools send them: `timeout -s INT` signals the
//! process and then its group, a double Ctrl-C sends two. The second signal
//! 50 ms after the first must not lose what was measured or leave the
//! temporary files behind; a run stopped while it holds an output device
//! open must not have read it without bound.

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn spawn(args: &[&str], dir: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn signal(pid: u32, sig: &str) {
    let ok = Command::new("kill")
        .args([&format!("-{sig}"), &pid.to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
}

/// Waits (at most 20 s) until `ready` says the run is under way.
fn wait_until(what: &str, mut ready: impl FnMut() -> bool) {
    let t = Instant::now();
    while !ready() {
        assert!(t.elapsed() < Duration::from_secs(20), "never saw {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Names in `d` that start with `prefix`.
fn named(d: &Path, prefix: &str) -> Vec<String> {
    std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(prefix))
        .collect()
}

/// Runs `args` in `dir` with stdout a pipe that is already full, sends
/// `sig` twice 50 ms apart once `ready` says the run is under way, then
/// reads stdout: the second signal comes while the first is still being
/// handled (the results are being written). Returns the exit status,
/// stdout and stderr.
fn signal_twice_while_writing(
    args: &str,
    dir: &Path,
    sig: &str,
    ready: &dyn Fn(u32) -> bool,
) -> (Option<i32>, String, String) {
    let (mut reader, mut writer) = std::io::pipe().unwrap();
    std::io::Write::write_all(&mut writer, &[b' '; 64 << 10]).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(common::words(args))
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    wait_until("the run under way", || ready(pid));
    std::thread::sleep(Duration::from_millis(300));
    signal(pid, sig);
    std::thread::sleep(Duration::from_millis(50));
    signal(pid, sig);
    std::thread::sleep(Duration::from_millis(200));
    let mut out = String::new();
    std::io::Read::read_to_string(&mut reader, &mut out).unwrap();
    let o = child.wait_with_output().unwrap();
    (
        o.status.code(),
        out.trim_start().to_string(),
        common::stderr(&o),
    )
}

#[test]
fn two_signals_50_ms_apart_keep_the_results_and_remove_the_temporary_file() {
    for (sig, status) in [("INT", 130), ("TERM", 143)] {
        let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let tmp = |pid: u32| d.path().join(format!(".iolab-{pid}.tmp"));
        let (code, out, err) = signal_twice_while_writing(
            "bench --size 64m --time 30s --cache warm --json",
            d.path(),
            sig,
            &|pid| std::fs::metadata(tmp(pid)).is_ok_and(|m| m.len() == 64 << 20),
        );
        assert_eq!(code, Some(status), "{sig}: {err}");
        let v: serde_json::Value = serde_json::from_str(&out).expect("the whole JSON document");
        assert_eq!(v["records"][0]["runs"][0]["interrupted"], true, "{sig}");
        assert_eq!(common::listing(d.path()), Vec::<String>::new(), "{sig}");
    }
}

#[test]
fn two_signals_50_ms_apart_during_a_replay_leave_no_temporary_folder() {
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let mut trace = String::from("file,offset,len,thread\n");
    for i in 0..8192u64 {
        trace.push_str(&format!("/f,{},4096,1\n", (i * 7919 % 8192) * 4096));
    }
    std::fs::write(d.path().join("t.csv"), trace).unwrap();
    let (code, _, err) = signal_twice_while_writing(
        "replay t.csv --repeat 1000 --reader pread --cache cold",
        d.path(),
        "INT",
        &|_| !named(d.path(), ".iolab-replay-").is_empty(),
    );
    assert_eq!(code, Some(130), "{err}");
    assert_eq!(named(d.path(), ".iolab-"), Vec::<String>::new());
}

#[test]
fn two_signals_50_ms_apart_leave_no_temporary_folder_of_sys() {
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let child = spawn(&common::words("sys file_cache --quick"), d.path());
    wait_until("the temporary folder", || {
        !named(d.path(), ".iolab-sys-").is_empty()
    });
    std::thread::sleep(Duration::from_millis(500));
    signal(child.id(), "INT");
    std::thread::sleep(Duration::from_millis(50));
    signal(child.id(), "INT");
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", common::stderr(&o));
    assert_eq!(common::listing(d.path()), Vec::<String>::new());
}

/// The resident memory of process `pid` at its peak, bytes.
fn peak_rss(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb << 10)
}

#[test]
fn tune_never_reads_its_output_device_and_a_dir_it_made_goes() {
    // `--out /dev/full`: a device that reads as endless zeros. tune looks
    // at an existing output to see whether it wrote it; that look is
    // bounded to a small regular file. Its missing --dir is made and, once
    // the run is stopped, removed again.
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let child = spawn(
        &common::words("tune --quick --out /dev/full --dir new"),
        d.path(),
    );
    let new = d.path().join("new");
    wait_until("tune's folder", || new.is_dir());
    std::thread::sleep(Duration::from_millis(1500));
    let rss = peak_rss(child.id());
    signal(child.id(), "INT");
    let o = child.wait_with_output().unwrap();
    assert!(rss < 512 << 20, "tune grew to {} MiB", rss >> 20);
    assert_eq!(o.status.code(), Some(130), "{}", common::stderr(&o));
    let e = common::stderr(&o);
    assert!(e.contains("created new on"), "{e}");
    assert!(
        !new.exists(),
        "the folder tune made is left: {:?}",
        common::listing(d.path())
    );
}
