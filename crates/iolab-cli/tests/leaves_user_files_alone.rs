//! iolab never harms what is not its own. Every invocation runs
//! in a scratch directory that is listed (names, file types, inodes, sizes,
//! mtimes, link targets) before and after; the listing must not change
//! except where the test says exactly what was meant to be written.

mod common;

use common::words;

use std::collections::BTreeMap;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// One directory entry as `lstat` sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    kind: &'static str,
    ino: u64,
    size: u64,
    mtime_ns: i128,
    link: Option<PathBuf>,
}

type Listing = BTreeMap<String, Entry>;

fn kind(t: std::fs::FileType) -> &'static str {
    if t.is_symlink() {
        "link"
    } else if t.is_dir() {
        "dir"
    } else if t.is_fifo() {
        "fifo"
    } else if t.is_socket() {
        "socket"
    } else if t.is_char_device() {
        "char"
    } else if t.is_block_device() {
        "block"
    } else {
        "file"
    }
}

fn list(dir: &Path) -> Listing {
    let mut m = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let md = std::fs::symlink_metadata(e.path()).unwrap();
        let link = md
            .file_type()
            .is_symlink()
            .then(|| std::fs::read_link(e.path()).unwrap());
        m.insert(
            e.file_name().to_string_lossy().into_owned(),
            Entry {
                kind: kind(md.file_type()),
                ino: md.ino(),
                size: md.size(),
                mtime_ns: md.mtime() as i128 * 1_000_000_000 + md.mtime_nsec() as i128,
                link,
            },
        );
    }
    m
}

fn iolab(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("run iolab")
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A scratch directory holding one of each kind of thing a user may own.
struct Scratch {
    dir: tempfile::TempDir,
    _sock: std::os::unix::net::UnixListener,
}

impl Scratch {
    fn new() -> Scratch {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        std::fs::write(p.join("precious.csv"), b"my,data\n1,2\n").unwrap();
        std::fs::write(p.join("notes.jsonl"), b"{\"mine\":true}\n").unwrap();
        std::fs::write(p.join("data"), vec![7u8; 1 << 20]).unwrap();
        std::fs::create_dir(p.join("sub")).unwrap();
        std::os::unix::fs::symlink("nowhere", p.join("dangling")).unwrap();
        std::os::unix::fs::symlink("precious.csv", p.join("link.csv")).unwrap();
        mknod_null(&p.join("null"));
        assert!(Command::new("mkfifo")
            .arg(p.join("fifo"))
            .status()
            .unwrap()
            .success());
        let sock = std::os::unix::net::UnixListener::bind(p.join("sock")).unwrap();
        Scratch { dir, _sock: sock }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Runs a bad invocation: exit 2, one line naming `flag`, and nothing
    /// in the directory changed.
    fn refused(&self, args: &[&str], flag: &str) {
        let before = list(self.path());
        let o = iolab(args, self.path());
        let e = err(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        assert_eq!(e.trim_end().lines().count(), 1, "{args:?}: {e}");
        assert!(e.contains(flag), "{args:?}: '{e}' does not name {flag}");
        assert!(o.stdout.is_empty(), "{args:?}: measured before refusing");
        assert_eq!(list(self.path()), before, "{args:?} changed the directory");
    }
}

/// A copy of /dev/null made by mknod (char 1:3).
fn mknod_null(p: &Path) {
    let ok = Command::new("mknod")
        .arg(p)
        .args(["c", "1", "3"])
        .status()
        .unwrap()
        .success();
    assert!(ok, "mknod needs root; these tests run as root");
    Command::new("chmod").arg("666").arg(p).status().unwrap();
}

const RUN: &[&str] = &["bench", "--engine", "null", "--size", "64k"];

fn with(extra: &[&'static str]) -> Vec<&'static str> {
    RUN.iter().chain(extra).copied().collect()
}

#[test]
fn char_device_output_is_written_in_place_not_replaced() {
    let s = Scratch::new();
    let before = list(s.path());
    for flag in ["--csv", "--jsonl"] {
        let o = iolab(&with(&[flag, "null", "--overwrite"]), s.path());
        assert_eq!(o.status.code(), Some(0), "{flag}: {}", err(&o));
    }
    let after = list(s.path());
    assert_eq!(after["null"].kind, "char");
    assert_eq!(after["null"].ino, before["null"].ino);
    let mut a = after.clone();
    let mut b = before.clone();
    a.remove("null");
    b.remove("null");
    assert_eq!(a, b, "nothing but the device was touched");
}

#[test]
fn fifo_output_is_written_in_place() {
    let s = Scratch::new();
    let before = list(s.path());
    let fifo = s.path().join("fifo");
    let reader = std::thread::spawn(move || std::fs::read(fifo).unwrap());
    let o = iolab(&with(&["--csv", "fifo", "--overwrite"]), s.path());
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let got = String::from_utf8(reader.join().unwrap()).unwrap();
    assert!(got.starts_with("label,engine,"), "{got}");
    assert_eq!(
        got.lines().count(),
        2,
        "header and one row, each once: {got}"
    );
    // Writing into a FIFO updates its mtime; everything else stays.
    let mut after = list(s.path());
    assert_eq!(after["fifo"].kind, "fifo");
    assert_eq!(after["fifo"].ino, before["fifo"].ino);
    after.get_mut("fifo").unwrap().mtime_ns = before["fifo"].mtime_ns;
    assert_eq!(after, before);
}

#[test]
fn symlink_output_is_followed_never_replaced() {
    let s = Scratch::new();
    let before = list(s.path());
    s.refused(&with(&["--csv", "link.csv"]), "--overwrite");
    let o = iolab(&with(&["--csv", "link.csv", "--overwrite"]), s.path());
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let after = list(s.path());
    assert_eq!(after["link.csv"], before["link.csv"], "the link itself");
    let csv = std::fs::read_to_string(s.path().join("precious.csv")).unwrap();
    assert!(csv.starts_with("label,engine"), "target written: {csv}");
    assert_eq!(after.len(), before.len(), "no temporary file left");
}

#[test]
fn sockets_directories_and_missing_dirs_are_refused_up_front() {
    let s = Scratch::new();
    s.refused(&with(&["--csv", "sock", "--overwrite"]), "--csv sock");
    s.refused(&with(&["--jsonl", "sock"]), "--jsonl sock");
    s.refused(&with(&["--csv", "sub", "--overwrite"]), "--csv sub");
    s.refused(&with(&["--jsonl", "sub"]), "--jsonl sub");
    s.refused(&with(&["--csv", "nodir/x.csv"]), "--csv nodir/x.csv");
    s.refused(&with(&["--jsonl", "/missing/dir/x.jsonl"]), "--jsonl");
}

#[test]
fn existing_files_are_kept_without_overwrite() {
    let s = Scratch::new();
    s.refused(&with(&["--csv", "precious.csv"]), "--overwrite");
    s.refused(&with(&["--jsonl", "notes.jsonl"]), "--jsonl notes.jsonl");
    s.refused(
        &with(&["--jsonl", "precious.csv", "--overwrite"]),
        "not an iolab record",
    );
    // sys goes through the same writer.
    s.refused(
        &["sys", "getpid", "--quick", "--csv", "precious.csv"],
        "--overwrite",
    );
    s.refused(
        &["sys", "getpid", "--quick", "--jsonl", "notes.jsonl"],
        "--jsonl",
    );
}

#[test]
fn sys_replaces_only_with_overwrite_and_appends_jsonl() {
    let s = Scratch::new();
    let o = iolab(
        &[
            "sys", "getpid", "--quick", "--repeat", "1", "--jsonl", "s.jsonl",
        ],
        s.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let o = iolab(
        &[
            "sys", "getpid", "--quick", "--repeat", "1", "--jsonl", "s.jsonl",
        ],
        s.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let jl = std::fs::read_to_string(s.path().join("s.jsonl")).unwrap();
    assert_eq!(jl.lines().count(), 2, "appended, not rewritten: {jl}");
}

#[test]
fn the_measured_file_is_never_an_output() {
    let s = Scratch::new();
    s.refused(
        &words("bench --engine null --file data --csv data --overwrite"),
        "being measured",
    );
    s.refused(
        &[
            "bench", "--engine", "null", "--file", "data", "--jsonl", "data",
        ],
        "being measured",
    );
    // A file still to be created, named twice.
    s.refused(
        &[
            "bench", "--engine", "null", "--file", "new", "--size", "64k", "--jsonl", "./new",
        ],
        "being measured",
    );
}

#[test]
fn dangling_symlink_file_is_refused_and_kept() {
    let s = Scratch::new();
    s.refused(
        &[
            "bench", "--engine", "null", "--file", "dangling", "--size", "64k",
        ],
        "--file dangling",
    );
    s.refused(
        &["bench", "--engine", "null", "--file", "dangling"],
        "--file dangling",
    );
}

#[test]
fn non_regular_files_are_refused_with_one_line() {
    let s = Scratch::new();
    for f in [
        "fifo",
        "null",
        "sock",
        "sub",
        "/dev/zero",
        "/proc/self/status",
    ] {
        s.refused(
            &["bench", "--engine", "null", "--file", f, "--size", "4k"],
            "not a regular file",
        );
        s.refused(&["xor", f], "not a regular file");
    }
}

#[test]
fn two_runs_on_one_new_file_never_delete_each_other() {
    let s = Scratch::new();
    // Both start at once on the same new file; whichever creates it keeps
    // it, the other uses or refuses it, and neither removes it.
    let spawn = || {
        Command::new(env!("CARGO_BIN_EXE_iolab"))
            .args([
                "bench", "--engine", "null", "--file", "shared", "--size", "32m",
            ])
            .current_dir(s.path())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    for _ in 0..3 {
        let _ = std::fs::remove_file(s.path().join("shared"));
        let a = spawn();
        let b = spawn();
        let oa = a.wait_with_output().unwrap();
        let ob = b.wait_with_output().unwrap();
        let codes = (oa.status.code(), ob.status.code());
        assert!(
            codes.0 == Some(0) || codes.1 == Some(0),
            "one run succeeds: {codes:?} {} {}",
            err(&oa),
            err(&ob)
        );
        let md = std::fs::metadata(s.path().join("shared"))
            .expect("the file one of them made is still there");
        assert_eq!(md.len(), 32 << 20);
    }
}

#[test]
fn ctrl_c_leaves_no_temporary_file_and_keeps_user_files() {
    // Interrupt a run that writes CSV through a FIFO with no reader (the
    // writer is blocked in open): the run stops, the FIFO is still a FIFO.
    let s = Scratch::new();
    let before = list(s.path());
    let child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(with(&["--csv", "fifo"]))
        .current_dir(s.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(700));
    let t = std::time::Instant::now();
    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(
        t.elapsed() < std::time::Duration::from_secs(1),
        "{:?}",
        t.elapsed()
    );
    assert_eq!(o.status.code(), Some(130), "{}", err(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("throughput"), "partial results printed: {out}");
    assert_eq!(list(s.path()), before);
}
