//! Multi-rank runs under a real `mpirun` (Open MPI) on this host: aggregate
//! bytes, the shared-file layouts read every byte once (verified against
//! the pattern), merged latency, the deadline, and failures that end every
//! rank instead of hanging. Needs the `mpi` feature, which
//! `cargo test --workspace` turns on (crates/iolab-mpi-tests).

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_iolab");

/// Whether this test can run; otherwise fail under CI, else say why.
fn ready() -> bool {
    let why = if !iolab_mpi::MPI_BUILT {
        "iolab built without the mpi feature"
    } else if Command::new("mpirun").arg("--version").output().is_err() {
        "mpirun not found (scripts/setup.sh installs openmpi-bin)"
    } else {
        return true;
    };
    iolab::testing::unmet(why);
    false
}

/// `mpirun` as these tests run it: as root, over shared memory only.
fn ompi() -> Command {
    let mut c = Command::new("mpirun");
    c.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_btl", "self,vader");
    c
}

fn mpirun(n: u32, args: &[&str]) -> Command {
    let mut c = ompi();
    c.args(["--oversubscribe", "-n", &n.to_string(), BIN, "bench"])
        .args(args);
    c
}

/// The run was refused (status 2) with exactly one line naming `flag`
/// (not one per rank).
fn refused_once(o: &Output, flag: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().filter(|l| l.contains(flag)).count(), 1, "{err}");
}

fn run(n: u32, args: &[&str]) -> Output {
    mpirun(n, args).output().expect("mpirun runs")
}

fn json_of(o: &Output) -> Value {
    assert!(
        o.status.success(),
        "status {:?}\nstderr: {}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    let text = String::from_utf8_lossy(&o.stdout);
    // Exactly one document, from rank 0.
    let docs: Vec<&str> = text.lines().filter(|l| l.starts_with('{')).collect();
    assert_eq!(docs.len(), 1, "one record from rank 0 only: {text}");
    serde_json::from_str(docs[0]).unwrap()
}

/// `--file FILE` and then `flags`, split at white space (none of the
/// flags these tests pass has a space in it).
fn with_file<'a>(file: &'a str, flags: &'a str) -> Vec<&'a str> {
    let mut a = vec!["--file", file];
    a.extend(flags.split_whitespace());
    a
}

/// Each rank's number at the JSON `pointer` (e.g. `/metrics/bytes`).
fn per_rank(v: &Value, pointer: &str) -> Vec<u64> {
    v["per_rank"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.pointer(pointer).and_then(Value::as_u64).unwrap())
        .collect()
}

fn path(d: &Path, name: &str) -> String {
    d.join(name).to_string_lossy().into_owned()
}

#[test]
fn file_per_rank_aggregates_every_ranks_bytes() {
    if !ready() {
        return;
    }
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let f = path(d.path(), "data.{rank}");
    let v = json_of(&run(
        2,
        &with_file(&f, "--size 8m --bs 64k --verify --cache cold --json"),
    ));
    let per: Vec<&Value> = v["per_rank"].as_array().unwrap().iter().collect();
    assert_eq!(per.len(), 2);
    let sum: u64 = per_rank(&v, "/metrics/bytes").iter().sum();
    assert_eq!(v["aggregate"]["bytes"].as_u64().unwrap(), sum);
    assert_eq!(sum, 2 * (8 << 20));
    let ops: u64 = per_rank(&v, "/metrics/ops").iter().sum();
    // Latency of all ops: the merged histogram counts every rank's ops, and
    // its extremes are the ranks' extremes.
    let lat = &v["aggregate"]["latency"];
    assert_eq!(lat["count"].as_u64().unwrap(), ops);
    let min = per_rank(&v, "/metrics/latency/min_ns").into_iter().min();
    let max = per_rank(&v, "/metrics/latency/max_ns").into_iter().max();
    assert_eq!(lat["min_ns"].as_u64(), min);
    assert_eq!(lat["max_ns"].as_u64(), max);
    // Cold on every rank, and the record says how resident each was.
    for r in &per {
        assert!(r["resident_before"].as_f64().unwrap() < 0.05, "{r}");
    }
    assert!(d.path().join("data.0").exists() && d.path().join("data.1").exists());
    assert!(v["mpi_library"].as_str().unwrap().contains("Open MPI"));
}

#[test]
fn a_shared_file_is_read_once_in_both_layouts() {
    if !ready() {
        return;
    }
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    for layout in ["segmented", "strided"] {
        let f = path(d.path(), &format!("shared.{layout}"));
        let v = json_of(&run(
            4,
            &with_file(
                &f,
                &format!("--size 16m --bs 16k --layout {layout} --segments 2 --verify --json"),
            ),
        ));
        // 4 ranks × 2 segments × 2 MiB = the whole file, each block once
        // (a byte read twice or missed would change the op count; a block
        // read at the wrong place fails --verify).
        let a = &v["aggregate"];
        assert_eq!(a["bytes"].as_u64().unwrap(), 16 << 20, "{layout}");
        assert_eq!(
            a["ops"].as_u64().unwrap(),
            (16 << 20) / (16 << 10),
            "{layout}"
        );
        assert_eq!(a["errors"].as_u64().unwrap(), 0);
        for r in v["per_rank"].as_array().unwrap() {
            assert_eq!(r["metrics"]["bytes"].as_u64().unwrap(), 4 << 20, "{layout}");
        }
        assert_eq!(v["spec"]["place"]["layout"], layout);
        assert_eq!(std::fs::metadata(&f).unwrap().len(), 16 << 20);
    }
}

#[test]
fn the_deadline_stops_every_rank() {
    if !ready() {
        return;
    }
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let f = path(d.path(), "data.{rank}");
    let v = json_of(&run(
        2,
        &with_file(&f, "--size 64m --bs 4k --pattern rand --ops 1000000000 --deadline 400ms --cache warm --json"),
    ));
    for r in v["per_rank"].as_array().unwrap() {
        let m = &r["metrics"];
        let dur = m["duration_ns"].as_u64().unwrap();
        let ops = m["ops"].as_u64().unwrap();
        let slowest_op = m["latency"]["max_ns"].as_u64().unwrap();
        // Stopped by the deadline, not by the billion ops asked for (a warm
        // 4 KiB read takes a microsecond or more: a billion would be minutes).
        assert!(dur >= 400_000_000, "{dur}");
        assert!(ops > 0 && ops < 1_000_000_000 / 100, "{ops}");
        // The check runs after each completion, so the window ends one op
        // past the deadline, plus however long the scheduler kept the rank
        // off a CPU between that completion and its check: that time is in
        // no op's latency, and with two ranks, mpirun and the other tests
        // on two cores it reached 7 ms in CI. 250 ms is far inside what
        // running on to the op count would take, and outside any stall.
        assert!(
            dur <= 400_000_000 + 2 * slowest_op + 250_000_000,
            "{dur} {slowest_op}"
        );
    }
}

#[test]
fn wearout_evens_the_ranks_out_and_keeps_the_deadline_figure() {
    if !ready() {
        return;
    }
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let f = path(d.path(), "data.{rank}");
    let v = json_of(&run(
        2,
        &with_file(&f, "--size 32m --bs 4k --pattern rand --ops 1000000000 --deadline 300ms --wearout --cache warm --verify --json"),
    ));
    let a = &v["aggregate"];
    let w = &a["stonewall"];
    let most = w["ops_max"].as_u64().unwrap();
    let per = v["per_rank"].as_array().unwrap();
    let at_deadline = per_rank(&v, "/stonewall/ops");
    // Two ranks racing for 300 ms: the counts at the deadline are theirs,
    // and the figure's extremes are those counts.
    assert_eq!(at_deadline.iter().max(), Some(&most));
    assert_eq!(at_deadline.iter().min().copied(), w["ops_min"].as_u64());
    assert!(most > 0);
    let sw_bytes: u64 = per_rank(&v, "/stonewall/bytes").iter().sum();
    assert_eq!(w["bytes"].as_u64().unwrap(), sw_bytes);
    assert!(w["wall_ns"].as_u64().unwrap() >= 300_000_000, "{w}");
    // Then every rank did as many ops as the busiest: the whole run moved
    // the same bytes on each rank, all of them verified.
    for r in per {
        let m = &r["metrics"];
        assert_eq!(m["ops"].as_u64().unwrap(), most, "{r}");
        assert_eq!(m["bytes"].as_u64().unwrap(), most * 4096);
        assert_eq!(m["errors"].as_u64().unwrap(), 0);
        assert_eq!(m["latency"]["count"].as_u64().unwrap(), most);
        assert!(m["duration_ns"].as_u64().unwrap() >= 300_000_000);
    }
    assert_eq!(a["ops"].as_u64().unwrap(), 2 * most);
    // Without --deadline there is nothing to wear out: refused, once.
    refused_once(
        &run(2, &["--file", &f, "--size", "1m", "--wearout"]),
        "--deadline",
    );
}

#[test]
fn the_lab_s_mt_suite_runs_its_tests_with_ranks_too() {
    if !ready() {
        return;
    }
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let out = d.path().join("out");
    let o = ompi()
        .current_dir(d.path())
        .args(["--oversubscribe", "-n", "2", BIN, "lab", "run", "mt-suite"])
        .args(["--scale", "smoke", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Rank 0 alone reports, and its table has the ranks next to threads.
    assert_eq!(text.matches("== mt-suite").count(), 1, "{text}");
    assert_eq!(text.matches("(2 ranks)").count(), 8, "{text}");
    let recs: Vec<Value> = std::fs::read_to_string(out.join("mt-suite.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ranked: Vec<&Value> = recs.iter().filter(|r| r["tags"]["ranks"] == "2").collect();
    assert_eq!(ranked.len(), 8, "one record per test with 2 ranks");
    for r in &ranked {
        let mib = r["samples"][0].as_f64().unwrap();
        assert!(mib > 0.0, "{r}");
        assert!(r["tags"].get("threads").is_none());
    }
    // Threads and processes on the same figure.
    let svg = std::fs::read_to_string(out.join("mt-suite-read-shared-seq.svg")).unwrap();
    assert!(svg.contains("processes (MPI ranks)") && svg.contains(", threads"));
}

#[test]
fn ranks_that_disagree_are_refused_before_any_io() {
    if !ready() {
        return;
    }
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let f = path(d.path(), "data.{rank}");
    let o = ompi()
        .args(["--oversubscribe", "-n", "1", BIN, "bench"])
        .args(with_file(&f, "--size 1m --bs 4k"))
        .args([":", "-n", "1", BIN, "bench"])
        .args(with_file(&f, "--size 1m --bs 8k"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("rank 1 differs from rank 0") && err.contains("4k vs 8k"),
        "{err}"
    );
    assert!(!d.path().join("data.0").exists(), "no I/O before agreement");
}

#[test]
fn bad_input_is_reported_once() {
    if !ready() {
        return;
    }
    refused_once(&run(3, &["--bs", "nope"]), "--bs");
    refused_once(
        &run(2, &["--layout", "segmented", "--size", "1m"]),
        "--file",
    );
}

#[test]
fn a_failing_rank_names_itself_and_ends_the_run() {
    if !ready() {
        return;
    }
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    // Rank 1's file is one it may not read: it fails at open; rank 0 would
    // otherwise wait for it in a barrier.
    std::fs::write(d.path().join("data.1"), vec![0u8; 1 << 20]).unwrap();
    let f = path(d.path(), "data.{rank}");
    let t = Instant::now();
    let o = run(2, &["--file", &f, "--size", "1m", "--bs", "4k", "--verify"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(t.elapsed() < Duration::from_secs(60));
    assert!(err.contains("rank 1 on "), "{err}");
}

#[test]
fn a_killed_rank_ends_the_others() {
    if !ready() {
        return;
    }
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let f = path(d.path(), "data.{rank}");
    let mut child = mpirun(
        2,
        &with_file(
            &f,
            "--size 16m --bs 4k --pattern rand --time 60s --cache warm",
        ),
    )
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    // Wait until both ranks (mpirun's children: this test's own ranks, not
    // those of tests running beside it) run, then kill one.
    let t = Instant::now();
    let victim = loop {
        let out = Command::new("pgrep")
            .args(["-P", &child.id().to_string()])
            .output()
            .unwrap();
        let pids: Vec<i32> = String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect();
        if d.path().join("data.1").exists()
            && pids.len() >= 2
            && t.elapsed() > Duration::from_secs(2)
        {
            break pids[pids.len() - 1];
        }
        assert!(t.elapsed() < Duration::from_secs(60), "ranks never started");
        std::thread::sleep(Duration::from_millis(100));
    };
    std::process::Command::new("kill")
        .args(["-9", &victim.to_string()])
        .status()
        .unwrap();
    let killed = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            killed.elapsed() < Duration::from_secs(30),
            "the other rank hung"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut err = String::new();
    use std::io::Read;
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(!status.success());
    // Open MPI's launcher names the rank that died.
    assert!(err.contains("rank"), "{err}");
}
