//! fio's semantics in `iolab fio`, through the real binary: job-file
//! syntax as fio reads it, the null engine without files, thinktime at
//! depth 1, rates that are met, numjobs as N jobs, per-direction logs,
//! trims, verification, O_SYNC and varying block sizes. Each test checks
//! what the run did, never how fast the machine is.

mod common;

use common::{has, iolab, stderr, words};
use std::path::Path;
use std::process::Output;

/// The JSON document a run printed on stdout.
fn json(o: &Output) -> serde_json::Value {
    assert!(o.status.success(), "{}", stderr(o));
    serde_json::from_slice(&o.stdout).expect("stdout is one JSON document")
}

fn write(dir: &Path, name: &str, body: &str) {
    std::fs::write(dir.join(name), body).unwrap();
}

#[test]
fn comments_keywords_and_expressions_are_read_as_fio_reads_them() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    let page = iolab::usage::page_size() as u64;
    write(
        p,
        "c.fio",
        "[global]\nioengine=null ; no I/O at all\nsize=8*$pagesize\t# bc arithmetic\nbs=(2*2048)\n[c]\nnumjobs=3 ; three jobs\n",
    );
    let v = json(&iolab(&["fio", "--output-format=json", "c.fio"], p));
    let jobs = v["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 3);
    for j in jobs {
        assert_eq!(j["read"]["io_bytes"].as_u64(), Some(8 * page));
        assert_eq!(j["read"]["total_ios"].as_u64(), Some(8 * page / 4096));
    }
}

#[test]
fn the_null_engine_makes_and_opens_no_files() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    let o = iolab(
        &words("fio --name=z --ioengine=null --rw=randread --norandommap --size=1g --random_distribution=zipf:0.5 --io_size=8m --output-format=json"),
        p,
    );
    let v = json(&o);
    assert_eq!(v["jobs"][0]["read"]["io_bytes"].as_u64(), Some(8 << 20));
    let left: Vec<_> = std::fs::read_dir(p).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn thinktime_waits_for_the_queue_to_drain_as_fio_does() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    let o = iolab(
        &words("fio --name=t --filename=data --size=1m --ioengine=libaio --iodepth=8 --rw=randread --thinktime=2ms --runtime=300ms --time_based --output-format=json"),
        p,
    );
    if !o.status.success() && stderr(&o).contains("not supported") {
        iolab::testing::unmet(&format!("thinktime: libaio: {}", stderr(&o)));
        return;
    }
    let v = json(&o);
    let j = &v["jobs"][0];
    // Every I/O went out alone: fio thinks after each, with none in flight.
    assert_eq!(j["iodepth_level"]["1"], 100.0, "{}", j["iodepth_level"]);
    let (ios, ms) = (
        j["read"]["total_ios"].as_u64().unwrap(),
        j["read"]["runtime"].as_u64().unwrap(),
    );
    assert!(
        ios > 0 && ios <= ms / 2 + 2,
        "{ios} I/Os in {ms} ms with 2 ms pauses"
    );
}

#[test]
fn a_rate_is_met_and_numjobs_makes_jobs() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    // The null engine can go far faster: 1 MiB/s is what the rate allows,
    // made up for after any stall (fio's schedule from the start).
    let o = iolab(
        &words("fio --name=r --ioengine=null --size=64m --bs=4k --rate=1m --runtime=1 --time_based --numjobs=2 --output-format=json"),
        p,
    );
    let v = json(&o);
    let jobs = v["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 2, "numjobs=2 is two jobs");
    for j in jobs {
        let bw = j["read"]["bw_bytes"].as_f64().unwrap();
        assert!(
            (0.9..=1.02).contains(&(bw / (1 << 20) as f64)),
            "{bw} B/s at rate=1m"
        );
    }
    // With group_reporting the two are one result, of two jobs.
    let o = iolab(
        &words("fio --name=r --ioengine=null --size=1m --numjobs=2 --group_reporting --output-format=json"),
        p,
    );
    let v = json(&o);
    assert_eq!(v["jobs"].as_array().unwrap().len(), 1);
    assert_eq!(v["jobs"][0]["read"]["io_bytes"].as_u64(), Some(2 << 20));
}

#[test]
fn latency_logs_are_per_direction() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    write(
        p,
        "m.fio",
        "[m]\nfilename=data\nsize=1m\nrw=randrw\nioengine=libaio\niodepth=4\ndirect=1\nruntime=400ms\ntime_based\nwrite_lat_log=m\nlog_avg_msec=100\n",
    );
    let o = iolab(&["fio", "--output-format=json", "m.fio"], p);
    if !o.status.success() && stderr(&o).contains("O_DIRECT") {
        iolab::testing::unmet(&format!("latency_logs: {}", stderr(&o)));
        return;
    }
    let v = json(&o);
    for name in ["m_lat.1.log", "m_clat.1.log", "m_slat.1.log"] {
        let text = std::fs::read_to_string(p.join(name)).unwrap();
        let rows: Vec<Vec<u64>> = text
            .lines()
            .map(|l| l.split(", ").map(|c| c.parse().unwrap()).collect())
            .collect();
        let dirs: std::collections::BTreeSet<u64> = rows.iter().map(|r| r[2]).collect();
        assert_eq!(
            dirs.into_iter().collect::<Vec<_>>(),
            [0, 1],
            "{name}: {text}"
        );
        // In some window reads and writes took different times.
        let differ = rows
            .windows(2)
            .any(|w| w[0][0] == w[1][0] && w[0][1] != w[1][1]);
        assert!(differ, "{name}: {text}");
    }
    let r = &v["jobs"][0];
    assert!(r["read"]["clat_ns"]["N"].as_u64().unwrap() > 0);
    assert!(r["write"]["clat_ns"]["N"].as_u64().unwrap() > 0);
}

#[test]
fn trims_punch_holes_and_verify_reads_back() {
    use std::os::unix::fs::MetadataExt;
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    let o = iolab(&words("bench --file f --size 1m --ops 1"), p);
    assert!(o.status.success(), "{}", stderr(&o));
    let blocks = std::fs::metadata(p.join("f")).unwrap().blocks();
    let v = json(&iolab(
        &words("fio --name=t --filename=f --rw=trim --bs=64k --output-format=json"),
        p,
    ));
    assert_eq!(v["jobs"][0]["trim"]["total_ios"].as_u64(), Some(16));
    assert!(v["jobs"][0]["trim"]["clat_ns"]["N"].as_u64().unwrap() == 16);
    let after = std::fs::metadata(p.join("f")).unwrap();
    assert_eq!(after.len(), 1 << 20, "a trim keeps the size");
    assert!(
        after.blocks() < blocks / 4,
        "{} -> {} blocks",
        blocks,
        after.blocks()
    );
    // verify: the written region is read back and checked.
    let v = json(&iolab(
        &words("fio --name=v --filename=w --size=512k --rw=randwrite --verify=crc32c --output-format=json"),
        p,
    ));
    let j = &v["jobs"][0];
    assert_eq!(j["write"]["io_bytes"].as_u64(), Some(512 << 10));
    assert_eq!(j["read"]["io_bytes"].as_u64(), Some(512 << 10));
    // A spoilt file fails its verification, naming the offset.
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(p.join("w"))
        .unwrap();
    f.write_at(&[0x5a; 4096], 8192).unwrap();
    let o = iolab(
        &words("fio --name=r --filename=w --rw=read --verify=md5"),
        p,
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("8192"), "{}", stderr(&o));
}

#[test]
fn sizes_vary_per_io_and_sync_opens_with_o_sync() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    let v = json(&iolab(
        &words("fio --name=s --filename=f --size=4m --rw=randread --bssplit=4k/50:16k/50 --io_size=2m --output-format=json"),
        p,
    ));
    let r = &v["jobs"][0]["read"];
    let (bytes, ios) = (
        r["io_bytes"].as_u64().unwrap(),
        r["total_ios"].as_u64().unwrap(),
    );
    let mean = bytes as f64 / ios as f64;
    assert!(
        (6_000.0..14_000.0).contains(&mean),
        "{bytes} B in {ios} I/Os"
    );
    assert!(bytes >= 2 << 20, "{bytes}");
    if !has("strace") {
        iolab::testing::unmet("sync_opens_with_o_sync: strace is not installed (scripts/setup.sh)");
        return;
    }
    let o = std::process::Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=openat", "-o", "st.txt"])
        .arg(env!("CARGO_BIN_EXE_iolab"))
        .args(words(
            "fio --name=w --filename=f --rw=write --size=64k --sync=1",
        ))
        .current_dir(p)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let trace = std::fs::read_to_string(p.join("st.txt")).unwrap();
    assert!(
        trace
            .lines()
            .any(|l| l.contains("\"f\"") && l.contains("O_SYNC")),
        "{trace}"
    );
}
