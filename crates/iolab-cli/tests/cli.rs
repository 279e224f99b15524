//! Runs the real `iolab` binary: bad input gets one line and exit 2, results
//! are valid JSON/CSV, `xor` matches an independent fold, Ctrl-C stops
//! cleanly with what was measured.

mod common;

use common::{iolab, stderr, words};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Exit 2, exactly one line on stderr, naming `flag`.
fn assert_bad(args: &[&str], flag: &str) {
    let d = tempfile::tempdir().unwrap();
    let o = iolab(args, d.path());
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
    assert_eq!(
        e.trim_end().lines().count(),
        1,
        "{args:?}: more than one line: {e}"
    );
    assert!(e.contains(flag), "{args:?}: '{e}' does not name {flag}");
    assert!(!e.contains("panicked") && !e.contains("backtrace"), "{e}");
    // Nothing left behind.
    let left: Vec<_> = std::fs::read_dir(d.path()).unwrap().collect();
    assert!(left.is_empty(), "{args:?} left files: {left:?}");
}

#[test]
fn bad_inputs_exit_2_with_one_line_naming_the_flag() {
    assert_bad(
        &["bench", "--bs", "0", "--file", "f", "--size", "1m"],
        "--bs",
    );
    assert_bad(
        &[
            "bench", "--bs", "3k", "--direct", "--file", "f", "--size", "1m",
        ],
        "--bs",
    );
    assert_bad(&["bench", "--file", "missing"], "--size");
    assert_bad(&["bench", "--engine", "warp", "--size", "1m"], "--engine");
    assert_bad(
        &["bench", "--engine", "pread", "--qd", "8", "--size", "1m"],
        "--qd",
    );
    assert_bad(&["bench", "--file", "f", "--size", "1000t"], "--size");
    assert_bad(&["bench", "--time", "ten", "--size", "1m"], "--time");
    assert_bad(
        &["bench", "--qd", "0", "--engine", "uring", "--size", "1m"],
        "--qd",
    );
    assert_bad(
        &[
            "bench", "--engine", "uring", "--qd", "4", "--batch", "8", "--size", "1m",
        ],
        "--batch",
    );
    assert_bad(
        &["bench", "--engine", "pread", "--fixed-bufs", "--size", "1m"],
        "--fixed-bufs",
    );
    assert_bad(
        &words("bench --engine uring --sqpoll --sqpoll-cpu 99 --size 1m"),
        "--sqpoll-cpu",
    );
    assert_bad(
        &["bench", "--engine", "mmap", "--op", "write", "--size", "1m"],
        "--op",
    );
    assert_bad(&["bench", "--nonsense"], "--nonsense");
    assert_bad(
        &["bench", "--engine", "uring", "--iopoll", "--size", "1m"],
        "--iopoll",
    );
    assert_bad(&["xor", "no-such-file"], "no-such-file");
}

#[test]
fn buffer_sqpoll_and_write_fill_flags_refuse_bad_values() {
    assert_bad(
        &["bench", "--direct", "--buf-offset", "16", "--size", "1m"],
        "--buf-offset",
    );
    assert_bad(
        &["bench", "--buf-offset", "64", "--size", "1m"],
        "--buf-offset",
    );
    assert_bad(
        &words("bench --engine uring --sqpoll-wait spin --size 1m"),
        "--sqpoll-wait",
    );
    assert_bad(
        &words("bench --engine uring --sqpoll --sqpoll-wait busy --size 1m"),
        "--sqpoll-wait",
    );
    assert_bad(
        &["bench", "--write-fill", "twice", "--size", "1m"],
        "--write-fill",
    );
    assert_bad(
        &words("bench --op rw --write-fill once --verify --size 1m"),
        "--write-fill once",
    );
}

/// Writes 8 blocks of 4 KiB at depth 1 with `--write-fill FILL` into a new
/// file `w` in `dir` and returns its bytes.
fn written(dir: &std::path::Path, fill: &str) -> Vec<u8> {
    let args = [
        "bench",
        "--op",
        "write",
        "--file",
        "w",
        "--size",
        "32k",
        "--bs",
        "4k",
        "--pattern",
        "seq",
        "--write-fill",
        fill,
    ];
    let o = iolab(&args, dir);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    std::fs::read(dir.join("w")).unwrap()
}

#[test]
fn write_fill_each_writes_every_offset_s_pattern_and_once_reuses_the_buffer() {
    // each: every block differs (its own offset's pattern) and verifies.
    let d = tempfile::tempdir().unwrap();
    let each = written(d.path(), "each");
    assert_eq!(each.len(), 32 << 10);
    let blocks: Vec<&[u8]> = each.chunks(4096).collect();
    assert!(blocks.windows(2).all(|w| w[0] != w[1]), "blocks repeat");
    let o = iolab(&["bench", "--file", "w", "--verify"], d.path());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // once: the one buffer was filled for the first write and reused.
    let d = tempfile::tempdir().unwrap();
    let once = written(d.path(), "once");
    let blocks: Vec<&[u8]> = once.chunks(4096).collect();
    assert_eq!(
        &blocks[0],
        &&each[..4096],
        "first write carries offset 0's pattern"
    );
    assert!(
        blocks.iter().all(|b| b == &blocks[0]),
        "every block is the first one"
    );
    // The file is still iolab's to write, but no longer verifiable.
    let o = iolab(&["bench", "--file", "w", "--verify"], d.path());
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--write-fill once"), "{}", stderr(&o));
    written(d.path(), "once");
}

#[test]
fn never_writes_into_a_file_it_did_not_make() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("mine");
    std::fs::write(&f, vec![1u8; 1 << 20]).unwrap();
    let o = iolab(&["bench", "--op", "write", "--file", "mine"], d.path());
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--overwrite"));
    assert_eq!(std::fs::read(&f).unwrap(), vec![1u8; 1 << 20]);
    // Reading it is fine, verifying it is not (its bytes are unknown).
    let o = iolab(&["bench", "--file", "mine", "--bs", "64k"], d.path());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = iolab(&["bench", "--file", "mine", "--verify"], d.path());
    assert_eq!(o.status.code(), Some(2));
}

// Long on purpose: one measurement by the real binary, its table and
// JSON checked metric by metric.
#[test]
fn one_measurement_prints_every_metric_and_json_is_valid() {
    let d = tempfile::tempdir().unwrap();
    let o = iolab(
        &words(
            "bench --engine pread --pattern rand --bs 4k --file f --size 4m --ops 2000 --verify",
        ),
        d.path(),
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for word in [
        "MiB/s",
        "IOPS",
        "min",
        "mean",
        "p50",
        "p90",
        "p99",
        "p99.9",
        "p99.99",
        "max",
        "user",
        "system",
        "context switches",
        "minor",
        "major",
        "resident before",
        "latency =",
    ] {
        assert!(out.contains(word), "missing {word}: {out}");
    }
    // The file stays, the next run reuses it.
    assert!(d.path().join("f").exists());
    let o = iolab(
        &words("bench --engine uring,null --qd 1,8 --file f --ops 1000 --json --repeat 2"),
        d.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value =
        serde_json::from_slice(&o.stdout).expect("stdout is one JSON document");
    let recs = v["records"].as_array().unwrap();
    assert_eq!(recs.len(), 4);
    for r in recs {
        assert_eq!(r["runs"].as_array().unwrap().len(), 2);
        assert_eq!(r["runs"][0]["ops"], 1000);
        assert!(r["env"]["kernel"].as_str().unwrap().len() > 1);
        assert!(r["summary"]["mib_per_s"]["median"].as_f64().unwrap() > 0.0);
        let l = &r["runs"][0]["latency"];
        let p: Vec<u64> = [
            "min_ns",
            "p50_ns",
            "p90_ns",
            "p99_ns",
            "p99_9_ns",
            "p99_99_ns",
            "max_ns",
        ]
        .iter()
        .map(|k| l[k].as_u64().unwrap())
        .collect();
        assert!(p.windows(2).all(|w| w[0] <= w[1]), "{p:?}");
    }
}

#[test]
fn sweep_skips_impossible_combinations_and_writes_csv_and_jsonl() {
    let d = tempfile::tempdir().unwrap();
    let o = iolab(
        &words(
            "bench --engine pread,uring --qd 1,4 --size 2m --ops 500 --csv r.csv --jsonl r.jsonl",
        ),
        d.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("skipping"));
    let csv = std::fs::read_to_string(d.path().join("r.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 3, "{csv}");
    let jl = std::fs::read_to_string(d.path().join("r.jsonl")).unwrap();
    assert_eq!(jl.lines().count(), 3);
    for l in jl.lines() {
        serde_json::from_str::<serde_json::Value>(l).unwrap();
    }
    // The temporary data file is gone.
    assert!(!std::fs::read_dir(d.path()).unwrap().any(|e| e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .contains("iolab")));
    // An existing CSV is not replaced without --overwrite.
    let o = iolab(
        &[
            "bench", "--engine", "null", "--size", "1m", "--csv", "r.csv",
        ],
        d.path(),
    );
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn xor_matches_an_independent_fold() {
    let d = tempfile::tempdir().unwrap();
    let n = (5 << 20) + 6;
    let data: Vec<u8> = (0..n as u64)
        .map(|i| (i.wrapping_mul(0x9E37_79B9) >> 7) as u8)
        .collect();
    std::fs::write(d.path().join("x"), &data).unwrap();
    let mut want = 0u32;
    for c in data.chunks(4) {
        let mut w = [0u8; 4];
        w[..c.len()].copy_from_slice(c);
        want ^= u32::from_le_bytes(w);
    }
    let o = iolab(&["xor", "x"], d.path());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        format!("{want:#010x}")
    );
    // And a generated file's XOR equals the pattern's, computed without I/O.
    let o = iolab(
        &["bench", "--file", "g", "--size", "3m", "--ops", "1"],
        d.path(),
    );
    assert_eq!(o.status.code(), Some(0));
    let seed = iolab::file::iolab_seed(&d.path().join("g"));
    if let Some(seed) = seed {
        let want = iolab::pattern::Pattern::new(seed).xor32(3 << 20);
        let o = iolab(&["xor", "g"], d.path());
        assert_eq!(
            String::from_utf8_lossy(&o.stdout).trim(),
            format!("{want:#010x}")
        );
    }
}

#[test]
fn ctrl_c_stops_prints_writes_and_cleans_up() {
    let d = tempfile::tempdir().unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(words("bench --engine pread --pattern rand --size 16m --cache warm --time 60s --jsonl r.jsonl"))
        .current_dir(d.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let k = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(k.success());
    let t = Instant::now();
    let o = child.wait_with_output().unwrap();
    assert!(t.elapsed() < Duration::from_secs(10));
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("IOPS") && out.contains("[interrupted]"),
        "{out}"
    );
    let jl = std::fs::read_to_string(d.path().join("r.jsonl")).unwrap();
    let v: serde_json::Value = serde_json::from_str(jl.lines().next().unwrap()).unwrap();
    assert_eq!(v["runs"][0]["interrupted"], true);
    assert!(v["runs"][0]["ops"].as_u64().unwrap() > 0);
    let left: Vec<String> = std::fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, vec!["r.jsonl".to_string()]);
}

fn have_fio() -> bool {
    Command::new("fio")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

#[test]
fn vs_fio_runs_both_alternately_and_refuses_what_fio_cannot_express() {
    assert_bad(
        &["bench", "--engine", "stream", "--size", "1m", "--vs", "fio"],
        "stream",
    );
    assert_bad(&["bench", "--vs", "dd", "--size", "1m"], "--vs");
    iolab::require!(
        have_fio(),
        "fio is not installed (scripts/setup.sh installs it)"
    );
    assert_bad(
        &["bench", "--verify", "--size", "1m", "--vs", "fio"],
        "--verify",
    );
    let d = tempfile::tempdir().unwrap();
    let o = iolab(
        &words("bench --engine pread --pattern rand --file f --size 8m --ops 2000 --vs fio --pairs 2 --json"),
        d.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let c = &v["records"][0]["vs_fio"];
    assert!(c["command"]
        .as_str()
        .unwrap()
        .starts_with("fio --name=iolab --filename="));
    assert_eq!(c["fio"].as_array().unwrap().len(), 2);
    assert_eq!(c["iolab"].as_array().unwrap().len(), 2);
    assert!(c["fio"][0]["iops"].as_f64().unwrap() > 0.0);
    let o = iolab(
        &[
            "bench", "--engine", "uring", "--qd", "4", "--file", "f", "--ops", "1000", "--vs",
            "fio", "--pairs", "1",
        ],
        d.path(),
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        out.contains("fio command: fio") && out.contains("iolab/fio"),
        "{out}"
    );
}

#[test]
fn vs_fio_shows_the_device_view_of_both_sides() {
    iolab::require!(
        have_fio(),
        "fio is not installed (scripts/setup.sh installs it)"
    );
    let d = tempfile::tempdir().unwrap();
    iolab::require!(
        iolab::file::block_device_of(d.path()).is_some(),
        "the temporary folder is on no block device"
    );
    // O_DIRECT 4 KiB reads at depth 1: every op is one request the device
    // completes, on both sides, and the rest of its time is the host's.
    let o = iolab(
        &words("bench --engine pread --pattern rand --bs 4k --direct --file f --size 8m --ops 3000 --vs fio --pairs 1 --json"),
        d.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let c = &v["records"][0]["vs_fio"];
    for side in ["iolab", "fio"] {
        let s = &c[side][0];
        let ops = s["ops"].as_f64().unwrap();
        let reqs = s["dev_requests"].as_f64().unwrap();
        assert!(ops >= 3000.0, "{side}: {s}");
        // Other processes may use the disk too: at least one request per op.
        assert!(reqs >= ops, "{side}: {reqs} requests for {ops} ops");
        let wait = s["dev_await_ns"].as_f64().unwrap();
        let mean = 1e9 / s["iops"].as_f64().unwrap();
        assert!(wait > 0.0, "{side}: await {wait} ns");
        // The device's time per request is within the op's time, unless
        // other processes' requests (a parallel test's writes) shared the
        // disk: then their queueing is in the mean too. A few large writes
        // (a flush of megabytes) weigh little in the count of requests
        // and much in their mean time: the device's bytes say so.
        let bytes = s["dev_bytes"].as_f64().unwrap();
        if reqs <= ops * 1.1 && bytes <= ops * 4096.0 * 1.1 {
            assert!(
                wait < mean * 1.5,
                "{side}: await {wait} ns, mean op {mean} ns"
            );
        }
    }
    let o = iolab(
        &words("bench --engine pread --pattern rand --bs 4k --direct --file f --size 8m --ops 3000 --vs fio --pairs 1"),
        d.path(),
    );
    let out = String::from_utf8_lossy(&o.stdout);
    for row in ["dev req/op", "dev await", "outside", "/sys/block/DEV/stat"] {
        assert!(out.contains(row), "no {row} in\n{out}");
    }
    // Both sides ran next to fio's supervisor's period of wakers.
    assert_eq!(v["records"][0]["env"]["waker"]["every_us"], 10_000, "{v}");
    assert!(
        out.contains("wakers: both tools ran next to a process waking every 10.00 ms"),
        "{out}"
    );
    // And iolab's runs beside a stand-in for fio's own supervisor.
    assert_eq!(
        v["records"][0]["env"]["waker"]["fio_supervisor_stand_in"], true,
        "{v}"
    );
    assert!(out.contains("standing in for fio's supervisor"), "{out}");
}

#[test]
fn waker_processes_sit_on_the_run_cpus_and_end_with_it() {
    let d = tempfile::tempdir().unwrap();
    let cpus = iolab::primitives::allowed_cpus().unwrap();
    for (pin, want) in [
        (None, cpus.clone()),
        (Some(cpus[cpus.len() - 1]), vec![cpus[cpus.len() - 1]]),
    ] {
        let mut args = words("bench --engine pread --bs 4k --file f --size 1m --time 2s --cache as-is --waker 5ms --json");
        let list = pin.map(|c| c.to_string());
        if let Some(c) = &list {
            args.extend(["--cpus", c.as_str()]);
        }
        let lists: Vec<String> = want.iter().map(usize::to_string).collect();
        let o = common::assert_wakers_during_run(&args, d.path(), &lists);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let w = &v["records"][0]["env"]["waker"];
        assert_eq!(w["every_us"], 5000, "{v}");
        assert_eq!(w["cpus"].as_array().unwrap().len(), want.len(), "{w}");
    }
}

#[test]
fn a_bad_waker_period_is_one_line_naming_the_flag() {
    let d = tempfile::tempdir().unwrap();
    for bad in ["1us", "soon"] {
        let mut args = words("bench --engine null --ops 10 --waker");
        args.push(bad);
        let o = iolab(&args, d.path());
        assert_eq!(o.status.code(), Some(2), "{bad}");
        let e = stderr(&o);
        assert_eq!(e.trim().lines().count(), 1, "{e}");
        assert!(
            e.contains("--waker") && e.contains(bad) && e.contains("off"),
            "{e}"
        );
    }
}

#[test]
fn unsupported_iopoll_is_one_line_and_exit_2() {
    let d = tempfile::tempdir().unwrap();
    let dev = iolab::file::block_device_of(d.path());
    let polls = dev
        .and_then(|d| d.queue_attr("io_poll"))
        .unwrap_or_default();
    iolab::require!(
        polls == "0",
        "this device may poll (io_poll={polls}): --iopoll is not refused here"
    );
    assert_bad(
        &[
            "bench", "--engine", "uring", "--iopoll", "--direct", "--size", "1m", "--ops", "10",
        ],
        "--iopoll",
    );
}

#[test]
fn a_stride_reads_one_block_in_each_step_and_verifies() {
    let d = tempfile::tempdir().unwrap();
    // 1 MiB, 4 KiB read and 12 KiB skipped: 64 blocks, every byte checked.
    let o = iolab(
        &words("bench --file f --size 1m --bs 4k --pattern stride:12k --verify --json"),
        d.path(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let run = &v["records"][0]["runs"][0];
    assert_eq!(run["ops"].as_u64(), Some(64), "{run}");
    assert_eq!(run["bytes"].as_u64(), Some(64 * 4096));
    assert_eq!(
        v["records"][0]["spec"]["pattern"]["stride"].as_u64(),
        Some(12288)
    );
    // Two threads split the file; fio is told rw=read:12k.
    let o = iolab(
        &words("bench --file f --size 1m --bs 4k --pattern stride:12k --threads 2 --print-fio"),
        d.path(),
    );
    assert!(stdout_has(&o, "--rw=read:12k"), "{}", stderr(&o));
    let o = iolab(&words("bench --file f --pattern stride:x"), d.path());
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--pattern") && stderr(&o).contains("stride:x"));
}

fn stdout_has(o: &std::process::Output, s: &str) -> bool {
    String::from_utf8_lossy(&o.stdout).contains(s)
}

#[test]
fn fdatasync_every_n_writes_is_counted_timed_and_translated() {
    let d = tempfile::tempdir().unwrap();
    // 1 MiB in 4 KiB writes, an fdatasync after every 4th before the next
    // write, as fio does: 63 syncs (none after the last write).
    let o = iolab(
        &words("bench --file w --size 1m --bs 4k --op write --fdatasync 4 --json"),
        d.path(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rec = &v["records"][0];
    assert_eq!(rec["spec"]["sync_every"]["writes"].as_u64(), Some(4));
    assert_eq!(rec["spec"]["sync_every"]["data_only"].as_bool(), Some(true));
    let y = &rec["runs"][0]["sync_latency"];
    assert_eq!(y["count"].as_u64(), Some(63), "{y}");
    assert!(y["p50_ns"].as_u64().unwrap() <= y["max_ns"].as_u64().unwrap());
    let o = iolab(
        &words("bench --file w --size 1m --bs 4k --op write --fsync 2 --print-fio"),
        d.path(),
    );
    assert!(stdout_has(&o, "--fsync=2"), "{}", stderr(&o));
    // Both at once, or a read-only run: refused, naming the flag.
    for bad in [
        "bench --file w --size 1m --op write --fsync 2 --fdatasync 2",
        "bench --file w --size 1m --fsync 2",
    ] {
        let o = iolab(&words(bad), d.path());
        assert_eq!(o.status.code(), Some(2), "{bad}");
        assert!(stderr(&o).contains("--fsync"), "{bad}: {}", stderr(&o));
    }
}

/// The most threads `/proc/PID/task` showed while `args` ran (sampled every
/// 5 ms until the process exits).
fn most_threads_while(args: &[&str]) -> usize {
    let mut most = 0;
    common::watch_run(args, |pid| {
        if let Ok(rd) = std::fs::read_dir(format!("/proc/{pid}/task")) {
            most = most.max(rd.count());
        }
    });
    most
}

/// A one-worker run is a single-threaded process (no worker
/// spawned, no signal or watchdog thread), as fio's job and lmbench are;
/// with two workers the sampling does see the threads.
#[test]
fn a_one_thread_run_is_a_single_threaded_process() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("f");
    let f = f.to_str().unwrap();
    let run = |threads: &str| {
        most_threads_while(&[
            "bench",
            "--file",
            f,
            "--size",
            "8m",
            "--engine",
            "pread",
            "--bs",
            "4k",
            "--time",
            "1s",
            "--threads",
            threads,
        ])
    };
    assert_eq!(run("1"), 1);
    assert!(run("2") >= 3, "two workers and the collector");
}

#[test]
fn latency_recording_is_a_choice_the_table_states() {
    assert_bad(&words("bench --lat some --size 1m"), "--lat");
    assert_bad(&words("bench --lat sampled:1 --size 1m"), "--lat");
    assert_bad(
        &words("bench --engine pread --uring-nop --size 1m"),
        "--uring-nop",
    );
    assert_bad(
        &words("bench --engine uring --uring-nop --verify --size 1m"),
        "--uring-nop",
    );
    let d = tempfile::tempdir().unwrap();
    let run = |lat: &str| {
        let o = iolab(
            &words(&format!(
                "bench --engine uring --qd 8 --batch 4 --pattern rand --file f --size 4m --ops 800 --lat {lat}"
            )),
            d.path(),
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let out = run("sampled:8");
    assert!(
        out.contains("1 in 8 ops timed, at random: 100 of 800 ops"),
        "{out}"
    );
    assert!(out.contains("p99.9"), "{out}");
    let out = run("off");
    assert!(
        out.contains("latency          not recorded (--lat off)"),
        "{out}"
    );
    assert!(!out.contains("p99.9"), "{out}");
}
