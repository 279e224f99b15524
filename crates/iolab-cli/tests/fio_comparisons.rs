//! Comparisons with fio that are fair, through the real binary: one fio
//! translation (scripts use it), the null-engine comparison fair and
//! default, CPU like for like, and the record naming the machine it ran on.

mod common;

use common::{has, iolab, stdout, words};
use std::path::Path;

use iolab::require;

fn repo_file(rel: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    std::fs::read_to_string(root.join(rel)).unwrap()
}

#[test]
fn scripts_take_fio_options_from_the_one_translation() {
    let d = tempfile::tempdir().unwrap();
    let o = iolab(
        &words("bench --engine uring --qd 4 --pattern rand --bs 4k --direct --file f --size 1m --time 2s --print-fio"),
        d.path(),
    );
    assert!(o.status.success(), "{o:?}");
    let line = stdout(&o);
    assert_eq!(line.lines().count(), 1, "{line}");
    assert!(line.starts_with("fio --name=iolab --filename=f --ioengine=io_uring --rw=randread --bs=4k --norandommap --randrepeat=1 --direct=1 --iodepth=4 --size=1m"), "{line}");
    // Printing measures nothing and makes no file.
    assert!(!d.path().join("f").exists());
    // The fair command is only for the null engine, with a one-line error.
    let o = iolab(
        &words("bench --file f --size 1m --print-fio fair"),
        d.path(),
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--print-fio fair"));

    // The scripts write no fio option by hand: they go through --vs fio
    // and show --print-fio's lines (randrepeat can no longer differ).
    for script in ["scripts/vs-fio.sh", "scripts/vs-fio-async.sh"] {
        let s = repo_file(script);
        for hand in ["--ioengine=", "--randrepeat", "--rw=", "--iodepth="] {
            assert!(!s.contains(hand), "{script} writes fio's {hand} by hand");
        }
        assert!(s.contains("--vs fio"), "{script}");
    }
    assert!(repo_file("scripts/vs-fio.sh").contains("--print-fio"));
}

#[test]
fn vs_fio_null_is_fair_and_default_cpu_like_for_like_and_names_the_machine() {
    require!(
        has("fio"),
        "fio is not installed (scripts/setup.sh installs it)"
    );
    let d = tempfile::tempdir().unwrap();
    let o = iolab(
        &[
            "bench", "--engine", "null", "--file", "f", "--size", "1m", "--ops", "20000", "--vs",
            "fio", "--pairs", "1", "--json",
        ],
        d.path(),
    );
    assert!(o.status.success(), "{o:?}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let r = &v["records"][0];
    let c = &r["vs_fio"];
    // Default: fio's own accounting; fair: iolab's. Both pinned alike.
    let cpu = c["fair"]["cpu"].as_u64().unwrap();
    let pin = format!("--cpus_allowed={cpu}");
    let fair = c["fair"]["command"].as_str().unwrap();
    let default = c["command"].as_str().unwrap();
    assert!(
        fair.contains("--disable_lat=1") && fair.contains(&pin),
        "{fair}"
    );
    assert!(default.contains("--lat_percentiles=1") && default.contains(&pin));
    assert_eq!(c["fair"]["fio"].as_array().unwrap().len(), 1);
    assert!(c["fair"]["fio"][0]["iops"].as_f64().unwrap() > 0.0);
    assert!(c["fair"]["fio"][0]["p99_ns"].as_f64().unwrap() > 0.0);
    // fio measures its job threads only: no helper/kernel figure.
    assert!(c["fio"][0]["cpu_offload_pct"].is_null());
    assert!(c["iolab"][0]["cpu_offload_pct"].is_number());
    // The machine, named.
    let env = &r["env"];
    assert!(
        env["fio_version"].as_str().unwrap().starts_with("fio-"),
        "{env}"
    );
    assert!(env["clocksource"].is_string(), "{env}");
    for k in ["hypervisor", "cpu_governor"] {
        assert!(env.get(k).is_some(), "{k} missing: {env}");
    }
    assert!(env["queue"].get("max_segments").is_some(), "{env}");

    // The text says which ratio is which.
    let o = iolab(
        &[
            "bench", "--engine", "null", "--file", "f", "--ops", "20000", "--vs", "fio", "--pairs",
            "1",
        ],
        d.path(),
    );
    assert!(o.status.success(), "{o:?}");
    let t = stdout(&o);
    let line = |k: &str| {
        t.lines()
            .find(|l| l.trim_start().starts_with(k))
            .map(str::to_string)
    };
    let fair = line("fair ").unwrap_or_else(|| panic!("no fair line: {t}"));
    let default = line("default ").unwrap_or_else(|| panic!("no default line: {t}"));
    assert!(fair.contains("IOPS") && fair.contains("cpu/op"), "{t}");
    assert!(fair.contains("--disable_lat=1"), "{t}");
    assert!(default.contains("fio's default accounting"), "{t}");
    assert!(t.contains("cpu sub%") && t.contains("like for like"), "{t}");
}

#[test]
fn sqpoll_cpu_total_is_marked_not_comparable() {
    require!(
        has("fio"),
        "fio is not installed (scripts/setup.sh installs it)"
    );
    let d = tempfile::tempdir().unwrap();
    let o = iolab(
        &words("bench --engine uring --sqpoll --qd 4 --pattern rand --direct --file f --size 4m --ops 2000 --vs fio --pairs 1"),
        d.path(),
    );
    let err = String::from_utf8_lossy(&o.stderr);
    require!(
        o.status.success() || !err.contains("SQPOLL"),
        "SQPOLL unavailable: {err}"
    );
    assert!(o.status.success(), "{o:?}");
    let t = stdout(&o);
    let row = |name: &str| {
        t.lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no {name} row: {t}"))
            .to_string()
    };
    assert!(row("cpu tot%").contains("n/c"), "{t}");
    assert!(row("cpu oth%").contains("not measured"), "{t}");
    assert!(!row("cpu sub%").contains("n/c"), "{t}");
    assert!(t.contains("iou-sqp"), "{t}");
}
