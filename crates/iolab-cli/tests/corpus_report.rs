//! `scripts/corpus-report.py`, the corpus replay's report, on records
//! whose numbers are known: the best fixed reader per trace, the median
//! per-round ratio with its interval, the rounds Auto lost badly (the
//! tail a median hides) beside the same count for the library without a
//! policy, what the policy alone gains or costs over the library's plain
//! reader, what knowing each trace ahead gains over the best single
//! reader, the trace where Auto is furthest behind `pread`, and the
//! guard's fall backs.

use std::path::{Path, PathBuf};
use std::process::Command;

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/corpus-report.py")
}

/// One reader's record of `trace` (warm) with these round times, ms, and
/// these fall backs per round.
fn record(trace: &str, reader: &str, ms: &[f64], fell: &[u64]) -> String {
    let runs: Vec<serde_json::Value> = ms
        .iter()
        .enumerate()
        .map(|(i, t)| {
            serde_json::json!({
                "round": i,
                "wall_ns": (t * 1e6) as u64,
                "user_ns": (t * 5e5) as u64,
                "sys_ns": (t * 5e5) as u64,
                "fell_back": fell.get(i).copied().unwrap_or(0),
            })
        })
        .collect();
    let switches: Vec<String> = if fell.iter().any(|&f| f > 0) {
        vec![format!("/data/{trace}.db: the mapping took 900 µs/MiB against pread's 300 µs/MiB (3 samples): pread from request 56 on")]
    } else {
        Vec::new()
    };
    serde_json::json!({
        "trace": format!("/corpus/{trace}.csv"),
        "cache": "warm",
        "reader": reader,
        "runs": runs,
        "switches": switches,
    })
    .to_string()
}

/// The first line of `text` starting with `start`, and its cells (index
/// 0 is the empty text before the first `|`).
fn table_row<'t>(text: &'t str, start: &str) -> (&'t str, Vec<&'t str>) {
    let row = text
        .lines()
        .find(|l| l.starts_with(start))
        .unwrap_or_else(|| panic!("no row {start}: {text}"));
    (row, row.split('|').map(str::trim).collect())
}

#[test]
fn the_report_names_the_best_fixed_reader_the_ratio_and_the_rounds_auto_lost_badly() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("MANIFEST.tsv");
    std::fs::write(
        &manifest,
        "name\thalf\tshape\tmaps\twhat\nscan\ttest\tdb-scan\tno\tsqlite3: a full scan\n\
         walk\ttest\ttree-walk\tno\tgrep -r over a tree\n",
    )
    .unwrap();
    let n = 11;
    let flat = |ms: f64| vec![ms; n];
    // Auto at 8.4 ms against the mapping's 8.0, but two rounds fell back
    // and took 20 ms (2.5 times).
    let mut auto = flat(8.4);
    auto[3] = 20.0;
    auto[7] = 20.0;
    let mut fell = vec![0; n];
    fell[3] = 1;
    fell[7] = 1;
    let lines = [
        record("scan", "pread", &flat(10.0), &[]),
        record("scan", "stream", &flat(10.2), &[]),
        record("scan", "mapped", &flat(8.0), &[]),
        record("scan", "auto", &auto, &fell),
        record("scan", "auto:builtin", &flat(8.8), &[]),
        // A second trace where `pread` is best and Auto 4 % behind it.
        record("walk", "pread", &flat(5.0), &[]),
        record("walk", "stream", &flat(5.1), &[]),
        record("walk", "mapped", &flat(7.5), &[]),
        record("walk", "auto", &flat(5.2), &[]),
        record("walk", "auto:builtin", &flat(5.3), &[]),
    ];
    let jsonl = dir.path().join("replay.jsonl");
    std::fs::write(&jsonl, lines.join("\n") + "\n").unwrap();
    let out = Command::new("python3")
        .arg(script())
        .args([&manifest, &jsonl])
        .arg("corpus-replay.sh WORKDIR 11")
        .env("IOLAB_COMMIT", "abc1234")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("- commit: abc1234"), "{text}");
    // The row: the mapping is the best fixed reader; the median round is
    // 8.4 / 8.0; built-in 8.8 / 8.0, above 1.05 (marked).
    let (row, cells) = table_row(&text, "| scan |");
    assert_eq!(cells[4], "mapped", "{row}");
    assert_eq!(cells[5], "8.0 ms", "{row}");
    assert!(cells[6].starts_with("1.050 ["), "{row}");
    assert!(
        cells[7].starts_with("1.100 [") && cells[7].ends_with('¹'),
        "{row}"
    );
    assert_eq!(cells[9], "1.020", "{row}");
    // The policy alone: tuned Auto over `stream`, the same opens and
    // requests without a policy (8.4 / 10.2 in the median round).
    assert!(cells[10].starts_with("0.824 ["), "{row}");
    // On the walk Auto is 2 % behind the plain reader (5.2 / 5.1): marked
    // only above 1.05.
    let (row, cells) = table_row(&text, "| walk |");
    assert!(
        cells[10].starts_with("1.020 [") && cells[10].ends_with(']'),
        "{row}"
    );
    // Over both traces the best single reader is `pread` (geomean 1.118
    // of the per-trace best, against `stream`'s 1.140 and the mapping's
    // 1.225); knowing each trace ahead gains sqrt(8/10 * 5/5) = 0.894 of
    // it. The worst trace against `pread` is the walk (5.2 / 5.0 tuned,
    // 5.3 / 5.0 built-in; the scan's median round is 0.84 / 0.88).
    let (summary, cells) = table_row(&text, "| warm |");
    assert_eq!(cells[3], "pread", "{summary}");
    assert_eq!(cells[5], "0.894", "{summary}");
    assert_eq!(cells[6], "1.040 (walk) / 1.060 (walk)", "{summary}");
    // The tail: the two rounds that fell back, none built-in, none for
    // the library without a policy.
    assert_eq!(cells[7], "2 of 22 / 0 of 22", "{summary}");
    assert_eq!(cells[8], "0 of 22", "{summary}");
    // The guard's fall backs: the median round fell back on no file, and
    // the last round's switch is shown.
    assert!(text.contains("- scan, warm, auto: 0 file(s)"), "{text}");
    assert!(
        text.contains("  - /data/scan.db: the mapping took 900 µs/MiB"),
        "{text}"
    );
}
