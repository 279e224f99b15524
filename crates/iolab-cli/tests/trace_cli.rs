//! Runs the real `iolab record`, `iolab trace stats` and `iolab replay`:
//! conversions, bad input (one line, exit 2, nothing made), replay reading
//! exactly the traced bytes, and traces that name paths outside `--dir`.

mod common;

use common::{iolab, listing, stderr as err, words};
use std::path::Path;
use std::process::Command;

/// Exit 2, one line on stderr containing `needle`, and `dir` unchanged.
fn assert_refused(args: &[&str], dir: &Path, needle: &str) {
    let before = listing(dir);
    let o = iolab(args, dir);
    let e = err(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
    assert_eq!(e.trim_end().lines().count(), 1, "{args:?}: {e}");
    assert!(e.contains(needle), "{args:?}: '{e}' lacks '{needle}'");
    assert!(!e.contains("panicked"), "{e}");
    assert_eq!(listing(dir), before, "{args:?} changed the directory");
}

const LOG: &str = r#"10 12:00:00.000001 openat(AT_FDCWD</w>, "/data/x", O_RDONLY) = 3</data/x> <0.000010>
10 12:00:00.000002 read(3</data/x>, ""..., 4096) = 4096 <0.000010>
10 12:00:00.000003 lseek(3</data/x>, 65536, SEEK_SET) = 65536 <0.000010>
10 12:00:00.000004 read(3</data/x>, ""..., 4096) = 4096 <0.000010>
10 12:00:00.000005 read(0</dev/pts/1>, ""..., 10) = 3 <0.000010>
"#;

#[test]
fn from_strace_writes_the_csv_and_refuses_to_overwrite() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("s.log"), LOG).unwrap();
    let o = iolab(
        &["record", "--from-strace", "s.log", "-o", "t.csv"],
        d.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let csv = std::fs::read_to_string(d.path().join("t.csv")).unwrap();
    assert_eq!(
        csv,
        "file,offset,len,op,thread,t_ns\n/data/x,0,4096,read,10,1000\n/data/x,65536,4096,read,10,3000\n"
    );
    assert!(err(&o).contains("tty 1"), "{}", err(&o));
    assert_refused(
        &["record", "--from-strace", "s.log", "-o", "t.csv"],
        d.path(),
        "--overwrite",
    );
    let o = iolab(
        &words("record --from-strace s.log -o t.csv --overwrite"),
        d.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert_refused(&["record", "-o", "u.csv"], d.path(), "program");
}

#[test]
fn bad_traces_are_refused_before_anything_is_made() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir(d.path().join("r")).unwrap();
    std::fs::write(
        d.path().join("bad.csv"),
        "file,offset,len\n/a,0,10\n/a,zero,10\n",
    )
    .unwrap();
    assert_refused(&["replay", "bad.csv", "--dir", "r"], d.path(), "bad.csv:3:");
    std::fs::write(
        d.path().join("bad.iolog"),
        "fio version 2 iolog\n/a add\n/a open\n/a read 0\n",
    )
    .unwrap();
    assert_refused(
        &["replay", "bad.iolog", "--dir", "r"],
        d.path(),
        "bad.iolog:4:",
    );
    std::fs::write(d.path().join("what.txt"), "hello world\n").unwrap();
    assert_refused(&["trace", "stats", "what.txt"], d.path(), "--format");
    std::fs::write(d.path().join("ok.csv"), "file,offset,len\n/a,0,10\n").unwrap();
    assert_refused(
        &["replay", "ok.csv", "--dir", "r", "--reader", "bogus"],
        d.path(),
        "--reader bogus",
    );
    assert_refused(
        &["replay", "ok.csv", "--dir", "r", "--threads", "0"],
        d.path(),
        "--threads",
    );
    assert_refused(
        &["replay", "ok.csv", "--dir", "nope/deeper"],
        d.path(),
        "--dir",
    );
}

// Long on purpose: one hostile trace replayed end to end, then what was
// read and what is on disk checked against it.
#[test]
fn replay_reads_exactly_the_traced_bytes_and_stays_in_dir() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir(d.path().join("r")).unwrap();
    // Hostile names: an absolute system path, an escape upwards, a device.
    std::fs::write(
        d.path().join("t.csv"),
        "file,offset,len,thread\n/etc/shadow,0,8192,1\n../../up,100,1000,1\n/dev/sda,4096,4096,2\n/etc/shadow,8192,4096,1\n",
    )
    .unwrap();
    let shadow_before = std::fs::metadata("/etc/shadow")
        .ok()
        .map(|m| m.modified().unwrap());
    let o = iolab(
        &[
            "replay", "t.csv", "--dir", "r", "--repeat", "2", "--verify", "--json", "--cache",
            "warm",
        ],
        d.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["bytes"], 8192 + 1000 + 4096 + 4096);
    let results = v["results"].as_array().unwrap();
    assert!(!results.is_empty());
    for r in results {
        assert_eq!(r["bytes"], v["bytes"], "{r}");
        assert_eq!(r["runs"].as_array().unwrap().len(), 2);
    }
    assert_eq!(results.iter().filter(|r| r["winner"] == true).count(), 1);
    // Everything made is inside r/, as regular files of the traced sizes.
    let made = listing(&d.path().join("r"));
    assert_eq!(
        made,
        vec![
            "__",
            "__/__",
            "__/__/up",
            "dev",
            "dev/sda",
            "etc",
            "etc/shadow"
        ]
    );
    assert_eq!(
        std::fs::metadata(d.path().join("r/etc/shadow"))
            .unwrap()
            .len(),
        12288
    );
    assert!(std::fs::metadata(d.path().join("r/dev/sda"))
        .unwrap()
        .is_file());
    assert_eq!(listing(d.path()).len(), 9, "{:?}", listing(d.path()));
    assert_eq!(
        shadow_before,
        std::fs::metadata("/etc/shadow")
            .ok()
            .map(|m| m.modified().unwrap())
    );
    // A second replay reuses the files.
    let o = iolab(
        &words("replay t.csv --dir r --repeat 1 --coalesce --csv out.csv"),
        d.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(std::fs::read_to_string(d.path().join("out.csv"))
        .unwrap()
        .starts_with("reader,median_ns"));
    // A link inside --dir leading out is refused.
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), d.path().join("r/etc2")).unwrap();
    std::fs::write(d.path().join("l.csv"), "file,offset,len\n/etc2/x,0,10\n").unwrap();
    assert_refused(
        &["replay", "l.csv", "--dir", "r"],
        d.path(),
        "symbolic link",
    );
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
}

#[test]
fn a_rerun_replay_starts_with_what_the_trace_read_cached_and_not_the_rest() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir(d.path().join("r")).unwrap();
    // Two pages of an 8 MiB file (the replay makes it that long).
    std::fs::write(
        d.path().join("t.csv"),
        "file,offset,len\n/db,0,4096\n/db,8384512,4096\n/db,24,16\n",
    )
    .unwrap();
    let o = iolab(
        &words("replay t.csv --dir r --reader pread,auto --repeat 2 --cache rerun --json"),
        d.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["cache"], "rerun", "{v}");
    for r in v["results"].as_array().unwrap() {
        for run in r["runs"].as_array().unwrap() {
            let f = run["resident_before"].as_f64().unwrap();
            // The read pages (and what the kernel read around them), not
            // the whole file.
            assert!(f > 0.0 && f < 0.5, "{run}");
        }
    }
    assert_refused(
        &["replay", "t.csv", "--dir", "r", "--cache", "lukewarm"],
        d.path(),
        "rerun",
    );
}

#[test]
fn in_place_reads_the_original_files_read_only() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("data"), vec![1u8; 20000]).unwrap();
    let m0 = std::fs::metadata(d.path().join("data"))
        .unwrap()
        .modified()
        .unwrap();
    std::fs::write(
        d.path().join("t.csv"),
        "file,offset,len\ndata,0,10000\ndata,10000,10000\n",
    )
    .unwrap();
    let o = iolab(
        &["replay", "t.csv", "--in-place", "--repeat", "1", "--json"],
        d.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["bytes"], 20000);
    assert_eq!(
        std::fs::metadata(d.path().join("data"))
            .unwrap()
            .modified()
            .unwrap(),
        m0
    );
    assert_eq!(listing(d.path()), vec!["data", "t.csv"]);
    // --verify needs iolab's pattern; this file has none.
    assert_refused(
        &["replay", "t.csv", "--in-place", "--verify"],
        d.path(),
        "--verify",
    );
    std::fs::write(d.path().join("long.csv"), "file,offset,len\ndata,0,30000\n").unwrap();
    assert_refused(&["replay", "long.csv", "--in-place"], d.path(), "30000");
}

#[test]
fn stats_describe_the_trace() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("t.iolog"),
        "fio version 3 iolog\n0 /f add\n1 /f open\n2 /f read 0 4096\n3 /f read 4096 4096\n4 /f read 0 4096\n5 /f close\n",
    )
    .unwrap();
    let o = iolab(&["trace", "stats", "t.iolog", "--json"], d.path());
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["format"], "iolog");
    assert_eq!(v["reads"], 3);
    assert_eq!(v["working_set"], 8192);
    let f = &v["per_file"][0];
    assert_eq!(f["path"], "/f");
    assert!((f["reread_fraction"].as_f64().unwrap() - 1.0 / 3.0).abs() < 1e-9);
    // What the thesis's rules and Auto would choose, each with a reason.
    let policies: Vec<&str> = f["advice"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            assert!(!a["reason"].as_str().unwrap().is_empty(), "{a}");
            a["policy"].as_str().unwrap()
        })
        .collect();
    assert_eq!(policies, vec!["thesis", "auto"]);
    let o = iolab(&["trace", "stats", "t.iolog"], d.path());
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(s.contains("3 reads") && s.contains("re-read 33 %"), "{s}");
}

#[test]
fn records_a_real_program() {
    iolab::require!(
        Command::new("strace").arg("-V").output().is_ok(),
        "strace is not installed (scripts/setup.sh installs it)"
    );
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("in.txt"), vec![b'x'; 300_000]).unwrap();
    let o = iolab(&["record", "-o", "t.csv", "--", "cat", "in.txt"], d.path());
    let e = err(&o);
    iolab::require!(
        o.status.code() == Some(0) || !e.contains("strace wrote nothing"),
        "strace cannot trace here: {e}"
    );
    assert_eq!(o.status.code(), Some(0), "{e}");
    assert_eq!(
        o.stdout.len(),
        300_000,
        "the program's output passes through"
    );
    let csv = std::fs::read_to_string(d.path().join("t.csv")).unwrap();
    let total: u64 = csv
        .lines()
        .filter(|l| l.contains("/in.txt,"))
        .map(|l| l.split(',').nth(2).unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(total, 300_000, "{csv}");
    // The files it read (and mapped: mmap lengths are whole pages, past
    // the end of a shared library) replay in place as recorded.
    let o = iolab(
        &words("replay t.csv --in-place --repeat 1 --reader pread --cache warm"),
        d.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
}
