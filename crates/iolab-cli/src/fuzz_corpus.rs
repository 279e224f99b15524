//! The corpus of bad command lines, generated from the flag
//! table: every flag that takes a value × zero (where zero is wrong),
//! negative, huge, overflowing, non-numeric, empty and wrong-unit values;
//! every kind of wrong path for every path flag; conflicting combinations.
//! Shared by the in-process test (`fuzz_tests`) and the binary sample
//! (`tests/corpus.rs`, which includes this file by path).
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// One bad command line and the text its error line must contain.
#[derive(Clone, Debug)]
pub struct Case {
    /// Arguments after the program name.
    pub args: Vec<OsString>,
    /// A word the one error line must contain (the flag, or the path).
    pub names: String,
}

fn case(args: &[&str], names: &str) -> Case {
    Case {
        args: args.iter().map(OsString::from).collect(),
        names: names.into(),
    }
}

/// Values no flag that takes a number, size, duration, count or name
/// accepts.
const BAD_VALUES: &[&str] = &[
    "-1",
    "-4k",
    "-0.5",
    "abc",
    "",
    " ",
    "99999999999999999999999999999",
    "18446744073709551616",
    "1e400",
    "1e30",
    "NaN",
    "inf",
    "4 parsecs",
    "10kg",
    "0x",
    "1..2",
    ",",
    "4k,abc",
    "\u{2212}1",
    "\u{0661}\u{0662}",
    "4k4k",
    "1/2",
    "++1",
];

/// Flags for which zero is wrong (a zero that means something, such as
/// `--threads 0` = the main thread, is not listed).
const ZERO_IS_BAD: &[&str] = &[
    "--bs",
    "--qd",
    "--batch",
    "--batch-complete",
    "--size",
    "--time",
    "--ops",
    "--io-size",
    "--interval",
    "--repeat",
    "--pool-threads",
    "--pairs",
];

/// Flags that take a path (they get wrong paths, not wrong numbers).
pub const PATH_FLAGS: &[&str] = &["--file", "--files", "--dir", "--csv", "--jsonl"];

/// The scratch directory's wrong paths: (description, path).
pub struct Paths {
    /// Scratch directory (holds everything below).
    pub dir: PathBuf,
    /// (what it is, path).
    pub bad: Vec<(&'static str, OsString)>,
    /// An existing regular file not made by iolab.
    pub theirs: PathBuf,
}

/// Builds the scratch directory with one of every kind of wrong path.
pub fn scratch(dir: &Path) -> Paths {
    use std::os::unix::net::UnixListener;
    let p = |n: &str| dir.join(n);
    std::fs::create_dir_all(p("subdir")).unwrap();
    std::fs::write(p("theirs.txt"), b"the user's data\n").unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(p("fifo"))
        .status()
        .unwrap();
    assert!(made.success(), "mkfifo");
    // The listener is leaked: the socket file stays a socket.
    std::mem::forget(UnixListener::bind(p("sock")).unwrap());
    std::os::unix::fs::symlink("/etc/hostname", p("link-out")).unwrap();
    std::os::unix::fs::symlink(p("nowhere"), p("dangling")).unwrap();
    let long = dir.join("x".repeat(300));
    let deep = dir.join(format!("{}/f", "d/".repeat(2100)));
    let mut bad: Vec<(&'static str, OsString)> = vec![
        ("missing", p("missing/x").into()),
        ("directory", p("subdir").into()),
        ("FIFO", p("fifo").into()),
        ("socket", p("sock").into()),
        ("char device", "/dev/null".into()),
        ("proc file", "/proc/self/status".into()),
        ("name too long", long.into()),
        ("path too long", deep.into()),
        ("empty", "".into()),
        ("dangling link", p("dangling").into()),
    ];
    let mut nonutf8 = p("").into_os_string().into_vec();
    nonutf8.extend_from_slice(b"bad\xff\xfename/x");
    bad.push(("non-UTF-8", OsString::from_vec(nonutf8)));
    Paths {
        dir: dir.to_path_buf(),
        bad,
        theirs: p("theirs.txt"),
    }
}

/// The whole corpus, for a scratch directory made by [`scratch`].
/// `value_flags(sub)` lists the subcommand's value-taking flags (the flag
/// table: clap's own in process, `--help` for the binary).
// Long on purpose: the corpus is a table of bad inputs, family after
// family; split, the families would only move apart.
pub fn corpus(paths: &Paths, value_flags: &dyn Fn(&str) -> Vec<String>) -> Vec<Case> {
    let d = paths.dir.to_str().unwrap().to_string();
    let mut v = Vec::new();
    // Every value flag × every bad value, on every subcommand.
    for sub in ["bench", "survey", "sys"] {
        let flags = value_flags(sub);
        assert!(flags.len() >= 3, "{sub}: flag table has {flags:?}");
        for flag in flags
            .into_iter()
            .filter(|f| !PATH_FLAGS.contains(&f.as_str()))
        {
            let mut values: Vec<&str> = BAD_VALUES.to_vec();
            if ZERO_IS_BAD.contains(&flag.as_str()) && !(sub == "sys" && flag == "--size") {
                values.push("0");
                values.push("0k");
                values.push("0s");
            }
            for val in values {
                let mut a = vec![sub, flag.as_str(), val];
                if sub != "sys" {
                    a.extend(["--dir", &d]);
                }
                if sub == "bench" && flag != "--size" {
                    a.extend(["--size", "1m"]);
                }
                if sub == "sys" {
                    a.insert(1, "getpid");
                }
                v.push(case(&a, &flag));
            }
        }
    }
    // Every kind of wrong path, for every path flag.
    for (what, p) in &paths.bad {
        let mk = |pre: &[&str], flag: &str, post: &[&str]| {
            let mut args: Vec<OsString> = pre.iter().map(OsString::from).collect();
            args.push(flag.into());
            args.push(p.clone());
            args.extend(post.iter().map(OsString::from));
            Case {
                args,
                names: flag.into(),
            }
        };
        let _ = what;
        let dir_flag_ok = *what != "directory";
        v.push(mk(&["bench"], "--file", &[]));
        v.push(mk(&["bench", "--size", "1m"], "--file", &[]));
        v.push(mk(&["bench", "--size", "1m"], "--files", &[]));
        v.push(mk(
            &["bench", "--op", "write", "--size", "1m"],
            "--file",
            &[],
        ));
        if dir_flag_ok {
            v.push(mk(&["bench", "--size", "1m"], "--dir", &[]));
            v.push(mk(&["survey"], "--dir", &[]));
            v.push(mk(&["sys", "getpid"], "--dir", &[]));
        }
        if *what != "FIFO" && *what != "char device" && *what != "dangling link" {
            for flag in ["--csv", "--jsonl"] {
                v.push(mk(&["bench", "--size", "1m", "--dir", &d], flag, &[]));
                v.push(mk(&["sys", "getpid"], flag, &[]));
            }
        }
        // Commands that read an input file whole (binary sample only).
        for (pre, names) in [
            (&["replay"][..], "replay"),
            (&["fio"][..], "job file"),
            (&["record", "--from-strace"][..], "--from-strace"),
        ] {
            let mut args: Vec<OsString> = pre.iter().map(OsString::from).collect();
            args.push(p.clone());
            // An empty name: clap names the missing argument (<TRACE>). A
            // job file's errors name it by its path ("x.fio:3: ...", "job
            // file x.fio: no such file").
            let lossy = p.to_string_lossy().into_owned();
            let names = match (names, p.is_empty()) {
                ("replay", true) => "TRACE".to_string(),
                ("job file", false) => lossy,
                (n, _) => n.to_string(),
            };
            v.push(Case { args, names });
        }
        v.push(Case {
            args: vec!["xor".into(), p.clone()],
            names: if p.is_empty() { "FILE" } else { "xor" }.into(),
        });
        // The course's program: read or write a wrong path.
        for mode in ["-r", "-w"] {
            v.push(Case {
                args: vec![
                    "run".into(),
                    p.clone(),
                    mode.into(),
                    "4096".into(),
                    "2".into(),
                ],
                names: if p.is_empty() {
                    "FILE".into()
                } else {
                    format!("run {mode}")
                },
            });
        }
    }
    // An existing file of the user's, as an output without --overwrite or
    // as a --jsonl that holds no iolab records; a block device written.
    let theirs = paths.theirs.to_str().unwrap();
    for flag in ["--csv", "--jsonl"] {
        v.push(case(
            &["bench", "--size", "1m", "--dir", &d, flag, theirs],
            flag,
        ));
        v.push(case(&["sys", "getpid", flag, theirs], flag));
    }
    v.push(case(
        &["bench", "--file", theirs, "--op", "write"],
        "--file",
    ));
    let list = format!("{d}/new:{theirs}");
    v.push(case(
        &["bench", "--files", &list, "--op", "write"],
        "--files",
    ));
    if let Some(b) = block_device() {
        let b = b.to_str().unwrap().to_string();
        v.push(case(&["bench", "--file", &b, "--op", "write"], "--file"));
        v.push(case(&["bench", "--file", &b, "--op", "rw"], "--file"));
        v.push(case(
            &["bench", "--size", "1m", "--dir", &d, "--csv", &b],
            "--csv",
        ));
    }
    // The course's program: bad block sizes and counts, no mode, both modes.
    let theirs_s = paths.theirs.to_str().unwrap().to_string();
    for mode in ["-r", "-w"] {
        let out = format!("{d}/run-out");
        let file = if mode == "-r" { &theirs_s } else { &out };
        // "-4k" is no number: clap takes it for flags and names the first (-4).
        let named = |val: &str, arg: &str| {
            if val == "-4k" {
                "-4".to_string()
            } else {
                arg.to_string()
            }
        };
        for val in BAD_VALUES.iter().chain(&["0", "2g"]) {
            v.push(case(
                &["run", file, mode, val, "2"],
                &named(val, "BLOCK_SIZE"),
            ));
        }
        for val in BAD_VALUES.iter().chain(&["0"]) {
            v.push(case(
                &["run", file, mode, "4096", val],
                &named(val, "BLOCK_COUNT"),
            ));
        }
    }
    v.push(case(
        &["run", &format!("{d}/run-out"), "-w", "1g", "10m"],
        "run -w",
    ));
    v.push(case(&["run", &theirs_s, "4096", "2"], "-r"));
    v.push(case(&["run", &theirs_s, "-r", "-w", "4096", "2"], "-w"));
    v.push(case(&["run2", &theirs_s, "0"], "BLOCK_SIZE"));
    // Conflicting combinations.
    let c = |a: &[&str], n: &str| {
        let mut a: Vec<&str> = a.to_vec();
        a.extend(["--size", "1m", "--dir", &d]);
        case(&a, n)
    };
    for (a, n) in [
        (&["bench", "--sqpoll"][..], "--sqpoll"),
        (&["bench", "--reg-files"], "--reg-files"),
        (
            &["bench", "--fixed-bufs", "--engine", "pread,uring"],
            "--fixed-bufs",
        ),
        (&["bench", "--iopoll", "--engine", "uring"], "--iopoll"),
        (
            &["bench", "--sqpoll-idle", "10", "--engine", "uring"],
            "--sqpoll",
        ),
        (
            &["bench", "--sqpoll-cpu", "0", "--engine", "uring"],
            "--sqpoll",
        ),
        (
            &[
                "bench",
                "--sqpoll",
                "--sqpoll-cpu",
                "4096",
                "--engine",
                "uring",
            ],
            "--sqpoll-cpu",
        ),
        (&["bench", "--pool-threads", "4"], "--pool-threads"),
        (&["bench", "--read-pct", "50"], "--read-pct"),
        (&["bench", "--read-pct", "101", "--op", "rw"], "--read-pct"),
        (
            &["bench", "--drop-caches", "--cache", "warm"],
            "--drop-caches",
        ),
        (&["bench", "--verify", "--engine", "null"], "--verify"),
        (
            &["bench", "--verify", "--engine", "mmap", "--mmap-touch"],
            "--verify",
        ),
        (&["bench", "--qd", "4"], "--qd"),
        (
            &[
                "bench",
                "--qd",
                "4",
                "--batch-complete",
                "8",
                "--engine",
                "uring",
            ],
            "--batch-complete",
        ),
        (&["bench", "--qd", "100000", "--engine", "uring"], "--qd"),
        (&["bench", "--bs", "2m"], "--bs"),
        (&["bench", "--interval", "1ms"], "--interval"),
        (&["bench", "--engine", "bogus"], "--engine"),
        (&["bench", "--engine", "pread,bogus"], "--engine"),
        (&["bench", "--engine", ""], "--engine"),
        (&["bench", "--pattern", "zigzag"], "--pattern"),
        (&["bench", "--op", "readwrite"], "--op"),
        (&["bench", "--cache", "lukewarm"], "--cache"),
        (&["bench", "--vs", "dd"], "--vs"),
        (&["bench", "--repeat", "1001"], "--repeat"),
        (&["bench", "--pairs", "101"], "--pairs"),
        (
            &["bench", "--pool-threads", "5000", "--engine", "threadpool"],
            "--pool-threads",
        ),
    ] {
        v.push(c(a, n));
    }
    let theirs_copy = paths.dir.join("theirs.txt");
    let t = theirs_copy.to_str().unwrap();
    v.push(case(
        &["bench", "--file", t, "--csv", t, "--overwrite"],
        "--csv",
    ));
    v.push(case(
        &[
            "bench",
            "--size",
            "1m",
            "--dir",
            &d,
            "--csv",
            &format!("{d}/o"),
            "--jsonl",
            &format!("{d}/o"),
        ],
        "--csv",
    ));
    v.push(case(&["sys", "nosuchthing"], "nosuchthing"));
    v.push(case(&["sys", "getpid", "--serve", "7777"], "--serve"));
    v.push(case(
        &["sys", "net", "--serve", "1", "--connect", "a:1"],
        "--serve",
    ));
    v.push(case(&["sys", "net", "--serve", "70000"], "--serve"));
    v.push(case(
        &["sys", "net", "--connect", "nohostport"],
        "--connect",
    ));
    v.push(case(&["bench", "--no-such-flag"], "--no-such-flag"));
    v.push(case(&["nosuchcommand"], "nosuchcommand"));
    v
}

/// A block device on this machine, if any (refused as an output or for
/// writing; never opened for writing by the test).
pub fn block_device() -> Option<PathBuf> {
    use std::os::unix::fs::FileTypeExt;
    std::fs::read_dir("/dev")
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| {
            std::fs::metadata(p)
                .map(|m| m.file_type().is_block_device())
                .unwrap_or(false)
        })
}

/// Names, kinds, inodes, sizes and mtimes of everything under `dir`.
pub fn listing(dir: &Path) -> BTreeMap<PathBuf, (u32, u64, u64, i64, i64)> {
    let mut m = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let md = std::fs::symlink_metadata(e.path()).unwrap();
            if md.is_dir() {
                stack.push(e.path());
            }
            m.insert(
                e.path(),
                (md.mode(), md.ino(), md.size(), md.mtime(), md.mtime_nsec()),
            );
        }
    }
    m
}
