//! The hostile corpus: command lines a stranger or an attacker types, run
//! through the real binary, each in a fresh scratch folder that holds one of
//! every kind of thing a user owns (a file, a link to it, a dangling link, a
//! folder, a FIFO, a socket, a device node) and under a time limit. Every
//! case must end (no hang), never panic, leave every file it did not create
//! as it was, and keep each stderr line under 1 KB; most also say exactly
//! what they must answer. Every command's output flag gets every kind of
//! path: a dangling link, a link to the user's file, the user's file, a
//! folder, a socket, a device, stdout as `-`, a pipe closed early, a full
//! device and a name too long.

mod common;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// What a case must answer, beyond the rules every case keeps.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Expect {
    /// Exit 2, one `error:` line naming what was wrong, nothing on stdout.
    Refused,
    /// Exit 0 (and the case's `says` on stderr).
    Ok,
    /// Exit 1 or 2 with one `error:` line (the run could not be done).
    Fails,
    /// Its reader went away: exit 0 or 141, nothing on stderr.
    Quiet,
}

/// Where the case's stdout goes.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Out {
    /// A pipe read to the end.
    Pipe,
    /// A pipe whose reader takes a few bytes and closes it.
    ClosedEarly,
    /// Appended to the scratch file `data`.
    AppendToData,
}

struct Case {
    args: Vec<OsString>,
    env: Vec<(&'static str, String)>,
    out: Out,
    /// Names the case may create in the scratch folder.
    creates: Vec<&'static str>,
    /// Scratch names it may write into (a FIFO's reader, a device).
    touches: Vec<&'static str>,
    expect: Expect,
    /// A word the error line must hold (for Refused and Fails).
    names: String,
    /// Files written into the scratch folder for this case only.
    files: Vec<(&'static str, Vec<u8>)>,
    /// Words an Ok case must print on stderr.
    says: &'static str,
}

fn case(line: &str, expect: Expect, names: &str) -> Case {
    Case {
        args: line.split_whitespace().map(OsString::from).collect(),
        env: Vec::new(),
        out: Out::Pipe,
        creates: Vec::new(),
        touches: Vec::new(),
        expect,
        names: names.to_string(),
        files: Vec::new(),
        says: "",
    }
}

impl Case {
    fn says(mut self, words: &'static str) -> Case {
        self.says = words;
        self
    }

    fn creates(mut self, names: &[&'static str]) -> Case {
        self.creates.extend(names);
        self
    }
    fn touches(mut self, names: &[&'static str]) -> Case {
        self.touches.extend(names);
        self
    }
    fn out(mut self, o: Out) -> Case {
        self.out = o;
        self
    }
    fn env(mut self, k: &'static str, v: &str) -> Case {
        self.env.push((k, v.to_string()));
        self
    }
    fn arg(mut self, a: impl Into<OsString>) -> Case {
        self.args.push(a.into());
        self
    }
    fn file(mut self, name: &'static str, bytes: Vec<u8>) -> Case {
        self.files.push((name, bytes));
        self
    }
}

/// A bench record, a strace log, a trace, a job file: made once.
struct Inputs {
    record: Vec<u8>,
}

fn inputs() -> Inputs {
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let o = common::iolab(
        &common::words("bench --engine null --size 64k --jsonl r.jsonl"),
        d.path(),
    );
    assert!(o.status.success(), "{}", common::stderr(&o));
    Inputs {
        record: std::fs::read(d.path().join("r.jsonl")).unwrap(),
    }
}

/// One of every kind of thing a user owns, and the inputs the commands read.
fn scratch(dir: &Path, inp: &Inputs) -> std::os::unix::net::UnixListener {
    let p = |n: &str| dir.join(n);
    std::fs::write(p("theirs.csv"), b"the user's,data\n").unwrap();
    std::fs::write(p("data"), vec![7u8; 64 << 10]).unwrap();
    std::os::unix::fs::symlink("theirs.csv", p("link.csv")).unwrap();
    std::os::unix::fs::symlink("nowhere", p("dangling")).unwrap();
    std::fs::create_dir(p("sub")).unwrap();
    let ok = Command::new("mkfifo").arg(p("fifo")).status().unwrap();
    assert!(ok.success());
    std::fs::write(p("rec.jsonl"), &inp.record).unwrap();
    std::fs::write(p("t.csv"), "file,offset,len,thread\n/a,0,4096,1\n").unwrap();
    std::fs::write(
        p("s.log"),
        "1 00:00:00.000001 read(3</etc/hostname>, \"x\", 1) = 1 <0.000001>\n",
    )
    .unwrap();
    std::fs::write(
        p("job.fio"),
        "[j]\nioengine=null\nsize=64k\nfilename=jobdata\n",
    )
    .unwrap();
    std::fs::write(p("inc.fio"), "include /dev/zero\n[j]\nsize=64k\n").unwrap();
    std::os::unix::net::UnixListener::bind(p("sock")).unwrap()
}

/// One entry as `lstat` sees it: kind, inode, size, mtime, link target.
type Listing = BTreeMap<String, (u32, u64, u64, i64, i64, Option<PathBuf>)>;

fn listing(dir: &Path) -> Listing {
    let mut m = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let md = std::fs::symlink_metadata(e.path()).unwrap();
        let link = std::fs::read_link(e.path()).ok();
        m.insert(
            e.file_name().to_string_lossy().into_owned(),
            (
                md.mode(),
                md.ino(),
                md.size(),
                md.mtime(),
                md.mtime_nsec(),
                link,
            ),
        );
    }
    m
}

/// What one case did wrong, by rule.
#[derive(Default)]
struct Outcome {
    panicked: bool,
    hung: bool,
    changed: Vec<String>,
    long_lines: usize,
    raw_escapes: bool,
    unmet: Option<String>,
}

/// Unblocks a thread waiting to open `fifo` for reading (a writer that
/// opens and closes), so no case can leave one waiting.
fn release_fifo_reader(fifo: &Path) {
    use std::os::unix::fs::OpenOptionsExt;
    let _ = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc_o_nonblock())
        .open(fifo);
}

/// O_NONBLOCK on Linux (the tests do not link libc).
fn libc_o_nonblock() -> i32 {
    0o4000
}

/// Starts the case's binary in `dir` with its stdout as the case says.
fn spawn(c: &Case, dir: &Path) -> std::process::Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_iolab"));
    cmd.args(&c.args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in &c.env {
        cmd.env(k, v);
    }
    match c.out {
        Out::Pipe | Out::ClosedEarly => cmd.stdout(Stdio::piped()),
        Out::AppendToData => cmd.stdout(
            std::fs::OpenOptions::new()
                .append(true)
                .open(dir.join("data"))
                .unwrap(),
        ),
    };
    cmd.spawn().unwrap()
}

/// Waits for `child` at most `limit`; kills it past that (None).
fn wait_bounded(child: &mut std::process::Child, limit: Duration) -> Option<i32> {
    let t = Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            use std::os::unix::process::ExitStatusExt;
            return Some(st.code().unwrap_or(128 + st.signal().unwrap_or(0)));
        }
        if t.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Runs one case in a fresh scratch folder and judges it.
fn run_case(c: &Case, inp: &Inputs) -> Outcome {
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let _sock = scratch(d.path(), inp);
    for (name, bytes) in &c.files {
        std::fs::write(d.path().join(name), bytes).unwrap();
    }
    let before = listing(d.path());
    let fifo = d.path().join("fifo");
    let reader = c.touches.contains(&"fifo").then(|| {
        let f = fifo.clone();
        std::thread::spawn(move || std::fs::read(f).map(|v| v.len()).unwrap_or(0))
    });
    let mut child = spawn(c, d.path());
    let mut err = child.stderr.take().unwrap();
    let errt = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let early = c.out == Out::ClosedEarly;
    let outt = child.stdout.take().map(|mut o| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            if early {
                let mut b = [0u8; 16];
                let _ = o.read(&mut b);
            } else {
                let _ = o.read_to_end(&mut v);
            }
            v
        })
    });
    let code = wait_bounded(&mut child, Duration::from_secs(20));
    release_fifo_reader(&fifo);
    if let Some(r) = reader {
        let _ = r.join();
    }
    let stderr = errt.join().unwrap();
    let stdout = outt.map(|t| t.join().unwrap()).unwrap_or_default();
    let mut o = judge(c, code, &stdout, &stderr);
    o.changed = changes(c, &before, &listing(d.path()));
    o
}

/// Names whose entry changed that the case may not change, and new names
/// it may not create.
fn changes(c: &Case, before: &Listing, after: &Listing) -> Vec<String> {
    let mut v = Vec::new();
    for (name, b) in before {
        match after.get(name) {
            None => v.push(format!("{name} removed")),
            Some(a) if c.touches.contains(&name.as_str()) => {
                if (a.0, a.1) != (b.0, b.1) {
                    v.push(format!("{name} replaced"));
                }
            }
            Some(a) if a != b => v.push(format!("{name} changed")),
            Some(_) => {}
        }
    }
    for name in after.keys() {
        if !before.contains_key(name) && !c.creates.contains(&name.as_str()) {
            v.push(format!("{name} created"));
        }
    }
    v
}

/// The rules every case keeps, then what this case must answer.
fn judge(c: &Case, code: Option<i32>, stdout: &[u8], stderr: &[u8]) -> Outcome {
    let text = String::from_utf8_lossy(stderr);
    let lines: Vec<&str> = text.lines().collect();
    let mut o = Outcome {
        hung: code.is_none(),
        panicked: code == Some(101) || text.contains("panicked"),
        long_lines: lines.iter().filter(|l| l.len() > 1024).count(),
        raw_escapes: stderr.contains(&0x1b),
        ..Outcome::default()
    };
    let Some(code) = code else { return o };
    let errors: Vec<&&str> = lines.iter().filter(|l| l.starts_with("error:")).collect();
    let one_error = |o: &mut Outcome| {
        if errors.len() != 1 || !errors[0].contains(&c.names) {
            o.unmet = Some(format!("wanted one error line naming {:?}", c.names));
        }
    };
    match c.expect {
        Expect::Refused => {
            one_error(&mut o);
            if code != 2 || lines.len() != 1 || !stdout.is_empty() {
                o.unmet = Some("wanted exit 2, one line, nothing on stdout".into());
            }
        }
        Expect::Fails => {
            one_error(&mut o);
            if code != 1 && code != 2 {
                o.unmet = Some("wanted exit 1 or 2".into());
            }
        }
        Expect::Ok if code != 0 => o.unmet = Some("wanted exit 0".into()),
        Expect::Ok if !text.contains(c.says) => {
            o.unmet = Some(format!("wanted {:?} on stderr", c.says))
        }
        Expect::Quiet if (code != 0 && code != 141) || !errors.is_empty() => {
            o.unmet = Some("wanted a quiet end (exit 0 or 141, no error)".into())
        }
        _ => {}
    }
    if o.unmet.is_some() {
        let shown: String = text.chars().take(400).collect();
        o.unmet = o.unmet.map(|u| format!("{u}; got exit {code}: {shown}"));
    }
    o
}

/// Every output flag of every command, with every kind of path.
fn output_cases() -> Vec<Case> {
    use Expect::*;
    let commands: &[(&str, &[&str], &[&'static str])] = &[
        ("bench --engine null --size 64k", &["--csv", "--jsonl"], &[]),
        ("sys getpid --quick --repeat 1", &["--csv", "--jsonl"], &[]),
        ("cat data", &["-o"], &[]),
        ("report rec.jsonl", &["-o"], &[]),
        ("record --from-strace s.log", &["-o"], &[]),
        (
            "replay t.csv --repeat 1 --reader pread --cache warm",
            &["--csv", "--jsonl"],
            &[],
        ),
        ("fio job.fio", &["--output"], &["jobdata"]),
    ];
    let long = "x".repeat(300);
    let huge = "y/".repeat(50_000);
    let mut v = Vec::new();
    for (line, flags, made) in commands {
        for flag in *flags {
            let with = |p: &str, e: Expect| case(&format!("{line} {flag} {p}"), e, flag);
            for p in ["dangling", "link.csv", "theirs.csv", "sub", "sock", &long] {
                v.push(with(p, Refused));
            }
            v.push(case(&format!("{line} {flag}"), Refused, flag).arg(&huge));
            v.push(with("/dev/null", Ok).creates(made));
            v.push(with("-", Ok).creates(made));
            v.push(
                with("/dev/stdout", Quiet)
                    .out(Out::ClosedEarly)
                    .creates(made),
            );
            v.push(with("/dev/full", Fails).creates(made));
            v.push(with("fifo", Ok).touches(&["fifo"]).creates(made));
            v.push(with("new.out", Ok).creates(&["new.out"]).creates(made));
        }
    }
    // The course's writer: its FILE is its output (regular files only).
    for p in [
        "dangling",
        "link.csv",
        "theirs.csv",
        "sub",
        "sock",
        "fifo",
        &long,
    ] {
        v.push(case(&format!("run {p} -w 4k 2"), Refused, "run -w"));
    }
    v.push(case("run new.out -w 4k 2", Ok, "").creates(&["new.out"]));
    // tune refuses before it measures (a run takes seconds).
    for p in ["dangling", "link.csv", "theirs.csv", "sub", "sock"] {
        v.push(case(&format!("tune --quick --out {p}"), Refused, "--out"));
    }
    v
}

/// The breaks a stranger and an attacker found, one case each.
// Long on purpose: a table of hostile command lines, family by family.
fn break_cases() -> Vec<Case> {
    use Expect::*;
    let mut v = Vec::new();
    // Every command that prints, its reader gone after a few bytes.
    for line in [
        "sys list",
        "lab list",
        "fio --list-options",
        "--help",
        "bench --engine null --size 64k",
        "bench --engine null --size 64k --bs 4k,8k --json",
        "sys getpid --quick --repeat 1",
        "sys getpid --quick --repeat 1 --json",
        "trace stats t.csv",
        "cat data",
        "xor data",
        "fast data",
        "run data -r 4k 2",
        "report rec.jsonl -o -",
    ] {
        v.push(case(line, Quiet, "").out(Out::ClosedEarly));
    }
    v.push(case("", Quiet, "").out(Out::ClosedEarly));
    // Small files that are not data, named by a stranger: a device, a
    // FIFO nobody writes, an include of a device.
    v.push(case("cat data -o /dev/null", Ok, "").env("IOLAB_PROFILE", "/dev/zero"));
    v.push(case("cat data -o /dev/null", Ok, "").env("IOLAB_PROFILE", "fifo"));
    v.push(case("report fifo", Refused, "fifo"));
    v.push(case("report sub", Refused, "record"));
    v.push(case("trace stats fifo", Refused, "fifo"));
    v.push(case("trace stats /dev/zero", Refused, "/dev/zero"));
    v.push(case("replay fifo", Refused, "fifo"));
    v.push(case("record --from-strace fifo", Refused, "fifo"));
    v.push(case("fio fifo", Refused, "fifo"));
    v.push(case("fio inc.fio", Refused, "/dev/zero"));
    v.push(case("report rec.jsonl -o /dev/stdout", Ok, ""));
    v.push(case(
        "bench --engine null --size 64k --csv /dev/stdout",
        Ok,
        "",
    ));
    v.push(case(
        "bench --engine null --size 64k --thinktime 1h --time 1s",
        Ok,
        "",
    ));
    // Input that is also the output.
    v.push(case("cat data", Refused, "input file is output file").out(Out::AppendToData));
    // Bad values: one consistent line each, nothing made.
    for (line, names) in [
        ("bench --engine null --size 64k --qd 0", "--qd 0"),
        ("bench --engine null --size 64k --time 0", "--time 0"),
        ("bench --engine null --size 64k --time -1s", "--time -1s"),
        ("bench --engine null --size 0", "--size 0"),
        ("bench --engine null --size -5m", "--size -5m"),
        ("bench --size 1m --threads 300", "--threads 300"),
        ("bench --engine null --files a: --size 64k", "--files a:"),
        (
            "bench --engine null --size 64k --pattern zipf:1e308",
            "zipf",
        ),
        ("sys tcp_rtt --connect 127.0.0.1:1", "--connect"),
        (
            "fio --name=j --size=64k --ioengine=null --iodepth=0",
            "iodepth=0",
        ),
        ("bench --engine null --size 64k --dir a/b", "--dir a/b"),
        ("sys getpid --quick --dir a/b", "--dir a/b"),
        ("survey --dir a/b", "--dir a/b"),
        ("tune --quick --dir a/b", "--dir a/b"),
        ("replay t.csv --dir a/b", "--dir a/b"),
        ("lab run syscalls --scale smoke --dir a/b", "--dir a/b"),
    ] {
        v.push(case(line, Refused, names));
    }
    // A missing --dir: made (only its last part), said with its device,
    // removed if it stayed empty (the scratch folder is checked for what
    // is left). `tune` is checked in tests/interrupts.rs.
    let said = "created newdir on ";
    for line in [
        "bench --engine null --size 64k --dir newdir",
        "sys getpid --quick --repeat 1 --dir newdir",
        "survey --size 16m --time 20ms --json --dir newdir",
    ] {
        v.push(case(line, Ok, "").says(said));
    }
    v.push(
        case(
            "replay t.csv --repeat 1 --reader pread --dir newdir",
            Ok,
            "",
        )
        .says(said)
        .creates(&["newdir"]),
    );
    v.push(
        case(
            "lab run syscalls --scale smoke --dir newdir --out lab",
            Ok,
            "",
        )
        .says(said)
        .creates(&["lab"]),
    );
    v.extend(message_cases());
    v
}

/// Input echoed in messages: binary bytes, escape sequences, 50 MB fields.
fn message_cases() -> Vec<Case> {
    use Expect::*;
    let mut esc = b"file,offset,len\n/a,0,4096\n/a,\x1b[31mred\x1b]0;owned\x07,7\n".to_vec();
    esc.extend_from_slice(b"/a,\xff\xfe,1\n");
    let mut big = b"file,offset,len\n/a,".to_vec();
    big.extend(std::iter::repeat_n(b'9', 50 << 20));
    big.extend_from_slice(b"x,1\n");
    let mut spaced = b"file,offset,len\n/a,1,".to_vec();
    spaced.extend(std::iter::repeat_n(b"ab ".as_slice(), 1 << 20).flatten());
    spaced.push(b'\n');
    let mut job = b"[j]\nrw=".to_vec();
    job.extend(std::iter::repeat_n(b'r', 1 << 19));
    job.extend_from_slice(b"\x1b[2J\n");
    vec![
        case("trace stats esc.csv", Refused, "esc.csv").file("esc.csv", esc.clone()),
        case("replay esc.csv", Refused, "esc.csv").file("esc.csv", esc),
        case("trace stats big.csv", Refused, "big.csv").file("big.csv", big),
        case("trace stats sp.csv", Refused, "sp.csv").file("sp.csv", spaced),
        case("fio j.fio", Refused, "j.fio").file("j.fio", job),
    ]
}

#[test]
fn the_hostile_corpus_never_panics_hangs_harms_or_floods() {
    let inp = inputs();
    let mut cases = output_cases();
    cases.extend(break_cases());
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(usize, Outcome)>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..3 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(c) = cases.get(i) else { break };
                let o = run_case(c, &inp);
                results.lock().unwrap().push((i, o));
            });
        }
    });
    let results = results.into_inner().unwrap();
    let count = |f: &dyn Fn(&Outcome) -> bool| results.iter().filter(|(_, o)| f(o)).count();
    let line = format!(
        "hostile corpus: {} cases; {} panics, {} hangs, {} with files changed that iolab did not create, {} stderr lines over 1 KB, {} with raw escape bytes on stderr, {} answers not as required",
        results.len(),
        count(&|o| o.panicked),
        count(&|o| o.hung),
        count(&|o| !o.changed.is_empty()),
        results.iter().map(|(_, o)| o.long_lines).sum::<usize>(),
        count(&|o| o.raw_escapes),
        count(&|o| o.unmet.is_some()),
    );
    // Past the test harness's capture: the count is part of every run's report.
    let _ = writeln!(std::io::stderr(), "{line}");
    let mut bad = Vec::new();
    for (i, o) in &results {
        let args: Vec<String> = cases[*i]
            .args
            .iter()
            .map(|a| a.to_string_lossy().chars().take(80).collect())
            .collect();
        if o.panicked || o.hung || !o.changed.is_empty() || o.long_lines > 0 || o.raw_escapes {
            bad.push(format!(
                "{args:?}: panic {} hang {} changed {:?} long lines {} escapes {}",
                o.panicked, o.hung, o.changed, o.long_lines, o.raw_escapes
            ));
        }
        if let Some(u) = &o.unmet {
            bad.push(format!("{args:?}: {u}"));
        }
    }
    assert!(cases.len() >= 150, "{line}");
    assert!(bad.is_empty(), "{line}\n{}", bad.join("\n"));
}
