//! A run that failed says so everywhere it is shown: its exit status, its
//! CSV and the report made from its records.

mod common;

use common::{iolab, stderr, words};

#[test]
fn verify_mismatches_fail_the_run_even_when_it_keeps_going() {
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let p = d.path();
    let o = iolab(&words("bench --file vf --size 1m"), p);
    assert!(o.status.success(), "{}", stderr(&o));
    // Damage a block in place (the file stays iolab's).
    {
        use std::os::unix::fs::FileExt;
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(p.join("vf"))
            .unwrap();
        f.write_all_at(&[0x55; 4096], 8192).unwrap();
    }
    let o = iolab(
        &words("bench --file vf --verify --continue-on-error --csv c.csv --jsonl r.jsonl"),
        p,
    );
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(e.contains("ops failed") && e.contains("verify"), "{e}");
    let csv = std::fs::read_to_string(p.join("c.csv")).unwrap();
    let mut lines = csv.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let row: Vec<&str> = lines.next().unwrap().split(',').collect();
    let i = head
        .iter()
        .position(|h| *h == "errors")
        .expect("an errors column");
    assert!(row[i].parse::<u64>().unwrap() >= 1, "{csv}");
    let o = iolab(&words("report r.jsonl -o rep.html"), p);
    assert!(o.status.success(), "{}", stderr(&o));
    let html = std::fs::read_to_string(p.join("rep.html")).unwrap();
    assert!(
        html.contains("failed ops") && html.contains(" failed: verify"),
        "{html}"
    );
}
