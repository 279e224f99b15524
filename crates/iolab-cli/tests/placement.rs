//! `--placement`: without `--cpus`, a run that waits on the device runs on
//! the CPUs that take the device's completion interrupts, says so in the
//! table, JSON and CSV, and `--placement any` leaves it to the scheduler.

mod common;

use common::stderr;
use iolab_bench::placement::place;
use iolab_bench::spec::Placement;
use iolab_bench::spec::WorkloadSpec;
use std::path::Path;

/// Runs `iolab bench ARGS --jsonl OUT` and samples the process's allowed
/// CPUs while it runs; returns the record and every list seen.
fn run_sampling(dir: &Path, args: &[&str]) -> (serde_json::Value, Vec<String>) {
    let out = dir.join("r.jsonl");
    let _ = std::fs::remove_file(&out);
    let out_s = out.to_str().unwrap();
    let mut seen: Vec<String> = Vec::new();
    common::watch_run(&[args, &["--jsonl", out_s]].concat(), |pid| {
        let Ok(s) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
            return;
        };
        if let Some(l) = s.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")) {
            let l = l.trim().to_string();
            if !seen.contains(&l) {
                seen.push(l);
            }
        }
    });
    let text = std::fs::read_to_string(&out).unwrap();
    (
        serde_json::from_str(text.lines().next().unwrap()).unwrap(),
        seen,
    )
}

#[test]
fn a_direct_run_goes_next_to_the_completion_interrupts_and_says_so() {
    // On the disk (the target folder), not tmpfs: the device must be real.
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let f = d.path().join("f");
    let f = f.to_str().unwrap();
    let base = [
        "bench",
        "--file",
        f,
        "--size",
        "8m",
        "--engine",
        "pread",
        "--pattern",
        "rand",
        "--bs",
        "4k",
        "--time",
        "1s",
    ];
    let direct = WorkloadSpec {
        direct: true,
        ..WorkloadSpec::default()
    };
    let Some(expected) = place(&direct, d.path()) else {
        iolab::testing::unmet(
            "this disk's completion interrupts go to every CPU (or none were found): nothing to place",
        );
        return;
    };
    let cpus = expected.pin.list();

    let (v, seen) = run_sampling(d.path(), &[&base[..], &["--direct"]].concat());
    let why = v["runs"][0]["placement"].as_str().unwrap_or_default();
    assert!(why.starts_with(&format!("CPU {cpus}: takes ")), "{why}");
    assert!(why.contains("completion interrupts (irq"), "{why}");
    assert!(
        seen.contains(&cpus),
        "the run never ran pinned to {cpus}: {seen:?}"
    );

    // --placement any: no placement, and the process is never narrowed.
    let (v, seen) = run_sampling(
        d.path(),
        &[&base[..], &["--direct", "--placement", "any"]].concat(),
    );
    assert!(v["runs"][0].get("placement").is_none(), "{v}");
    assert!(!seen.contains(&cpus), "{seen:?}");
    assert_eq!(v["spec"]["placement"], "any");

    // A warm buffered run never waits on the device: left alone.
    let (v, _) = run_sampling(d.path(), &[&base[..], &["--cache", "warm"]].concat());
    assert!(v["runs"][0].get("placement").is_none(), "{v}");
}

#[test]
fn the_table_and_csv_say_where_the_run_was_placed() {
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let direct = WorkloadSpec {
        direct: true,
        placement: Placement::Irq,
        ..WorkloadSpec::default()
    };
    let Some(expected) = place(&direct, d.path()) else {
        iolab::testing::unmet("nothing to place on this machine's disk");
        return;
    };
    let f = d.path().join("f");
    let csv = d.path().join("r.csv");
    let o = common::iolab(
        &[
            "bench",
            "--file",
            f.to_str().unwrap(),
            "--size",
            "4m",
            "--direct",
            "--ops",
            "64",
            "--csv",
            csv.to_str().unwrap(),
        ],
        d.path(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let table = common::stdout(&o);
    let line = format!("placed on        CPU {}:", expected.pin.list());
    assert!(table.contains(&line), "{table}");
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut r = csv::Reader::from_reader(text.as_bytes());
    let col = r
        .headers()
        .unwrap()
        .iter()
        .position(|h| h == "placement")
        .expect("a placement column");
    let row = r.records().next().unwrap().unwrap();
    assert_eq!(row.get(col), Some(expected.why.as_str()));
}

#[test]
fn placement_and_cpus_are_refused_together_and_bad_values_named() {
    let d = tempfile::tempdir().unwrap();
    let o = common::iolab(&["bench", "--placement", "near"], d.path());
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("--placement") && e.contains("irq") && e.contains("any"),
        "{e}"
    );
    let o = common::iolab(&["bench", "--placement", "any", "--cpus", "0"], d.path());
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--cpus"), "{}", stderr(&o));
}

#[test]
fn iolab_fio_places_jobs_without_cpus_allowed_and_takes_placement_any() {
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let direct = WorkloadSpec {
        direct: true,
        ..WorkloadSpec::default()
    };
    let Some(expected) = place(&direct, d.path()) else {
        iolab::testing::unmet("nothing to place on this machine's disk");
        return;
    };
    let f = d.path().join("j.dat");
    let job = [
        "fio",
        "--name=j",
        "--rw=randread",
        "--bs=4k",
        "--direct=1",
        "--size=4m",
        "--number_ios=64",
    ];
    let fname = format!("--filename={}", f.display());
    let o = common::iolab(&[&job[..], &[fname.as_str()]].concat(), d.path());
    assert!(o.status.success(), "{}", stderr(&o));
    let out = common::stdout(&o);
    assert!(
        out.contains(&format!("iolab placed : CPU {}:", expected.pin.list())),
        "{out}"
    );
    let o = common::iolab(
        &[
            &job[..],
            &[fname.as_str(), "--overwrite", "--placement=any"],
        ]
        .concat(),
        d.path(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        !common::stdout(&o).contains("iolab placed"),
        "{}",
        common::stdout(&o)
    );
    let o = common::iolab(&["fio", "--placement=near", "--name=j"], d.path());
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--placement"), "{}", stderr(&o));
}
