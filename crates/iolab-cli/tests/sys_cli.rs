//! `iolab sys` through the real binary.

mod common;

use common::words;

use std::process::Command;

fn iolab() -> Command {
    Command::new(env!("CARGO_BIN_EXE_iolab"))
}

#[test]
fn list_names_every_measurement() {
    let o = iolab().args(["sys", "list"]).output().unwrap();
    assert!(o.status.success());
    let s = String::from_utf8(o.stdout).unwrap();
    for n in [
        "getpid",
        "fork",
        "mem_latency",
        "fault_major",
        "tcp_rtt",
        "file_cache",
    ] {
        assert!(s.contains(n), "{n} missing from:\n{s}");
    }
}

#[test]
fn syscall_json_parses() {
    let d = tempfile::tempdir().unwrap();
    let jsonl = d.path().join("r.jsonl");
    let csv = d.path().join("r.csv");
    let o = iolab()
        .args([
            "sys", "getpid", "call0", "--quick", "--repeat", "2", "--json",
        ])
        .arg("--jsonl")
        .arg(&jsonl)
        .arg("--csv")
        .arg(&csv)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["schema_version"], 1);
    assert!(v["environment"]["kernel"].is_string());
    let e = &v["entries"][0];
    assert_eq!(e["name"], "call0");
    let g = &v["entries"][1];
    assert_eq!(g["name"], "getpid");
    assert!(g["time_ns"]["median"].as_f64().unwrap() > 0.0);
    assert_eq!(g["time_ns"]["n"], 2);
    let lines = std::fs::read_to_string(&jsonl).unwrap();
    assert_eq!(lines.lines().count(), 2);
    for l in lines.lines() {
        let r: serde_json::Value = serde_json::from_str(l).unwrap();
        assert!(r["entry"]["method"].is_string());
    }
    // No series in these two: the CSV has the header and each median.
    let c = std::fs::read_to_string(&csv).unwrap();
    assert!(c.starts_with("series,x,x_unit,y,y_unit"), "{c}");
    let row = c.lines().find(|l| l.starts_with("getpid,")).expect(&c);
    let f: Vec<&str> = row.split(',').collect();
    assert_eq!((f[1], f[2], f[4]), ("", "", "ns"), "{row}");
    let (med, lo, hi): (f64, f64, f64) = (
        f[3].parse().unwrap(),
        f[5].parse().unwrap(),
        f[6].parse().unwrap(),
    );
    assert!(lo > 0.0 && lo <= med && med <= hi, "{row}");
}

#[test]
fn series_reach_the_csv() {
    // Under target/ (a real file system: O_DIRECT), not /tmp (maybe tmpfs).
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let csv = d.path().join("r.csv");
    let o = iolab()
        .args(["sys", "contention", "--quick", "--repeat", "1", "--detail"])
        .arg("--dir")
        .arg(d.path())
        .arg("--csv")
        .arg(&csv)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let c = std::fs::read_to_string(&csv).unwrap();
    let mut lines = c.lines();
    assert_eq!(lines.next(), Some("series,x,x_unit,y,y_unit,y_min,y_max"));
    assert!(lines
        .next()
        .unwrap()
        .starts_with("contention,1.0,processes,"));
    let table = String::from_utf8(o.stdout).unwrap();
    assert!(table.contains("contention") && table.contains("method:"));
    // The temporary directory was removed.
    let left: Vec<_> = std::fs::read_dir(d.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(".iolab-sys-"))
        .collect();
    assert!(left.is_empty());
}

#[test]
fn unknown_name_exits_2_with_one_line() {
    let o = iolab().args(["sys", "getpid", "nosuch"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8(o.stderr).unwrap();
    assert_eq!(e.trim_end().lines().count(), 1, "{e}");
    assert!(e.contains("nosuch"));
    assert!(o.stdout.is_empty());
}

#[test]
fn bad_flags_exit_2() {
    let o = iolab().args(["sys", "--repeat", "0"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let o = iolab()
        .args(["sys", "fork", "--serve", "7000"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let o = iolab()
        .args(["sys", "--dir", "/nonexistent/dir", "getpid"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn serve_and_connect_on_loopback() {
    // Find a free port, serve on it, run the remote tests against it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut server = iolab()
        .args(["sys", "net", "--serve", &port.to_string()])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let o = iolab()
        .args(words("sys net --quick --repeat 1 --json --connect"))
        .arg(format!("127.0.0.1:{port}"))
        .output()
        .unwrap();
    // SIGTERM via the termination feature of ctrlc stops the server.
    let _ = Command::new("kill").arg(server.id().to_string()).status();
    let _ = server.wait();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let names: Vec<_> = v["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["tcp_rtt", "udp_rtt", "tcp_bw", "tcp_connect"]);
}

/// `read1` in a multi-threaded process pays a file reference per call; the
/// note says when that happened. No thread waits for signals any more, so a
/// `sys` run is single-threaded and the note is absent.
#[test]
fn read1_runs_in_a_single_threaded_process() {
    let o = iolab()
        .args(["sys", "read1", "--quick", "--repeat", "2", "--json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let e = &v["entries"][0];
    assert_eq!(e["name"], "read1");
    let notes = e["notes"].to_string();
    assert!(!notes.contains("threads"), "{notes}");
}
