//! `scripts/whole-file-bet.py`, the study of reading a file whole ahead
//! at each point of a recorded program's reads: on a small corpus made
//! here, every point is replayed and reported, each trace's best point is
//! marked, and bad input is one line with exit status 2 (a report path
//! that holds a file of the user's included: it is not replaced).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/whole-file-bet.py")
}

/// A corpus of one trace, `walk` (test half): 300 random 4 KiB reads of a
/// 2 MiB file, made under `work/files/walk` as a replay makes it; and a
/// profile with a cold sequential speed.
fn corpus(work: &Path) {
    std::fs::create_dir_all(work.join("corpus")).unwrap();
    std::fs::write(
        work.join("corpus/MANIFEST.tsv"),
        "name\thalf\tshape\tmaps\twhat\nwalk\ttest\tkey-value\tno\tlook-ups\n",
    )
    .unwrap();
    let mut csv = String::from("file,offset,len,op,thread,t_ns\n");
    csv += "/data/lib.so,0,4096,mmap,1,0\n";
    let mut x: u64 = 12345;
    for i in 0..300 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let page = (x >> 33) % 512;
        csv += &format!("/data/store.dat,{},4096,read,1,{}\n", page * 4096, i * 1000);
    }
    std::fs::write(work.join("corpus/walk.csv"), csv).unwrap();
    let dir = work.join("files/walk/data");
    std::fs::create_dir_all(&dir).unwrap();
    let mut f = std::fs::File::create(dir.join("store.dat")).unwrap();
    f.write_all(&vec![7u8; 2 << 20]).unwrap();
    f.sync_all().unwrap();
    let profile = serde_json::json!({"measurements": [
        {"pattern": "seq", "cache": "cold", "technique": "whole:buffered", "mib_s": 1000.0},
        {"pattern": "seq", "cache": "cold", "technique": "whole:direct", "mib_s": 9000.0},
    ]});
    std::fs::write(work.join("profile.json"), profile.to_string()).unwrap();
}

fn run(work: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new("python3");
    c.arg(script()).arg(work).args(args).env("REPORT", "-");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

#[test]
fn every_point_of_asking_is_replayed_and_each_traces_best_is_marked() {
    let d = tempfile::tempdir().unwrap();
    corpus(d.path());
    let out = run(d.path(), &["1"], &[("MIN_MIB", "1")]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The speed is the buffered one (O_DIRECT does not fill the cache).
    assert!(text.contains("cold sequential): 1000 MiB/s"), "{text}");
    // The trace's row: its large file's 300 reads (the mapping left out),
    // `never` in ms, then one ratio per point with its interval.
    let row = text
        .lines()
        .find(|l| l.starts_with("| walk |"))
        .unwrap_or_else(|| panic!("no row: {text}"));
    let cells: Vec<&str> = row.split('|').map(str::trim).collect();
    assert_eq!(&cells[1..5], ["walk", "test", "300", "2"], "{row}");
    assert!(cells[5].trim_matches('*').ends_with(" ms"), "{row}");
    let ratios = &cells[6..cells.len() - 1];
    assert_eq!(ratios.len(), 7, "{row}");
    // Exactly one cell is the best: bold.
    assert_eq!(
        cells.iter().filter(|c| c.starts_with("**")).count(),
        1,
        "{row}"
    );
    for r in ratios {
        let v: f64 = r
            .trim_matches('*')
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(v > 0.0 && v.is_finite(), "{row}");
    }
    // The summary: each of the eight points as one rule, over one trace;
    // the trace's best point is within 1.05 of itself.
    let summary: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("| point |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .collect();
    assert_eq!(summary.len(), 8, "{text}");
    assert!(summary.iter().all(|l| l.ends_with("of 1 |")), "{text}");
    assert!(
        summary
            .iter()
            .any(|l| l.contains("| 1.00 | 1.00 (walk) | 1 of 1 |")),
        "{text}"
    );
}

#[test]
fn a_trace_whose_files_were_never_made_a_bad_round_count_and_a_users_file_are_refused_in_one_line()
{
    let d = tempfile::tempdir().unwrap();
    corpus(d.path());
    std::fs::remove_file(d.path().join("files/walk/data/store.dat")).unwrap();
    let out = run(d.path(), &[], &[("ONLY", "walk")]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("store.dat is missing") && err.contains("corpus-replay.sh"),
        "{err}"
    );
    let out = run(d.path(), &["0"], &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("ROUNDS is '0'"), "{err}");
    // A report path that holds something else is the user's: refused
    // before any round, and left as it was.
    let mine = d.path().join("notes.md");
    std::fs::write(&mine, "my notes\n").unwrap();
    let out = run(d.path(), &[], &[("REPORT", mine.to_str().unwrap())]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("is not a report of this script"), "{err}");
    assert_eq!(std::fs::read_to_string(&mine).unwrap(), "my notes\n");
    let out = run(d.path(), &[], &[("ONLY", "nope")]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("ONLY names 'nope'") && err.contains("walk"),
        "{err}"
    );
}
