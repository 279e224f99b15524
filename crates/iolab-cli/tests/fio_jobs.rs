//! `iolab fio`: real job files through the real binary. Parsing every
//! construct, refusals (one line naming file:line, exit 2, nothing left
//! behind), fio's JSON keys checked against fio's own output for the same
//! job, and the consumers Debian's fio ships (fio_jsonplus_clat2csv,
//! fio2gnuplot) run on iolab's output.

use std::collections::BTreeSet;
mod common;

use common::{has, iolab};
use std::path::Path;
use std::process::{Command, Output};

use iolab::require;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn write(dir: &Path, name: &str, body: &str) {
    std::fs::write(dir.join(name), body).unwrap();
}

#[test]
fn parse_only_prints_jobs_as_understood_with_includes_variables_and_globals() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::create_dir(p.join("inc")).unwrap();
    write(
        p,
        "inc/common.fio",
        "# shared settings\n[global]\nioengine=libaio\niodepth=16\ndirect=0\n",
    );
    write(
        p,
        "main.fio",
        "; every construct once\ninclude inc/common.fio\n[global]\nsize=${IOLAB_T_SIZE}\nbs=$pagesize\nruntime=2\ntime_based\ngroup_reporting\nthread\n\n[one]\nfilename=data\nrw=randread\nnorandommap\nnumjobs=2\n\n[two]\nstonewall\nfilename=data\nrw=read\nioengine=io_uring\nfixedbufs\nregisterfiles\niodepth_batch_submit=4\niodepth_batch_complete_min=2\nramp_time=500ms\n",
    );
    let o = Command::new(env!("CARGO_BIN_EXE_iolab"))
        .args(["fio", "--parse-only", "main.fio"])
        .env("IOLAB_T_SIZE", "2m")
        .current_dir(p)
        .output()
        .unwrap();
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(out.contains("one (main.fio:11): group 0, A16B1T2"), "{out}");
    assert!(out.contains("engine=libaio op=read pattern=rand"), "{out}");
    assert!(out.contains("threads=2"), "{out}");
    assert!(
        out.contains("size=2097152 stop: bytes=- time=2000ms"),
        "{out}"
    );
    assert!(out.contains("two (main.fio:17): group 1, U16B4MF"), "{out}");
    assert!(
        out.contains("engine=uring op=read pattern=seq bs=4096 iodepth=16 batch=4/2"),
        "{out}"
    );
    assert!(out.contains("ramp=500ms"), "{out}");
    // Nothing was run or created.
    assert!(!p.join("data").exists());
}

/// Exit 2, one line on stderr that starts with `want`, nothing created.
fn assert_refused(job: &str, extra: &[&str], want: &str) {
    let d = tempfile::tempdir().unwrap();
    write(d.path(), "bad.fio", job);
    let mut args = vec!["fio"];
    args.extend_from_slice(extra);
    args.push("bad.fio");
    let o = iolab(&args, d.path());
    let e = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{job:?}: {e}");
    assert_eq!(e.trim_end().lines().count(), 1, "{job:?}: {e}");
    assert!(e.starts_with(want), "{job:?}\n got: {e}\nwant: {want}");
    assert!(!e.contains("panicked"), "{e}");
    let left: Vec<String> = std::fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "bad.fio")
        .collect();
    assert!(left.is_empty(), "{job:?} left {left:?}");
}

#[test]
fn bad_job_files_get_one_line_with_file_and_line_and_exit_2() {
    assert_refused(
        "[a]\nsize=1m\nfilename=x\nbs=4k\nblocksise=4k\n",
        &[],
        "error: bad.fio:5: option 'blocksise': unknown",
    );
    assert_refused(
        "[a]\nsize=1m\nfilename=x\nverify=crc32c\n",
        &[],
        "error: bad.fio:4: option 'verify': known to fio but not supported by iolab",
    );
    assert_refused(
        "[a]\nsize=1m\nfilename=x\ndescription=x\n",
        &[],
        "error: bad.fio:4: option 'description'",
    );
    assert_refused(
        "[a]\nsize=1m\nfilename=x\n[b]\nsize=1m\nfilename=y\n",
        &[],
        "error: bad.fio:4: job 'b': fio runs it at the same time as 'a'",
    );
    assert_refused(
        "[a]\nsize=1m\nfilename=x\ncpus_allowed=0\n",
        &[],
        "error: bad.fio:4: cpus_allowed=0:",
    );
    assert_refused(
        "[a\nsize=1m\n",
        &[],
        "error: bad.fio:1: '[a': a section header ends with ']'",
    );
    assert_refused(
        "[a]\nfilename=missing\n",
        &[],
        "error: bad.fio:1: job 'a': missing does not exist and no size is given",
    );
    assert_refused(
        "[a]\ninclude nowhere.fio\n",
        &[],
        "error: bad.fio:2: include nowhere.fio",
    );
    // fio's command-line form: the argument's position stands for the line.
    let d = tempfile::tempdir().unwrap();
    let o = iolab(&["fio", "--name=x", "--size=1m", "--iodepht=4"], d.path());
    let e = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.starts_with("error: <command line>:3: option 'iodepht': unknown"),
        "{e}"
    );
    // --lenient turns a presentation-only option into a warning (checked
    // with --parse-only so nothing runs).
    write(
        d.path(),
        "l.fio",
        "[a]\nsize=1m\nfilename=x\ndescription=hello\n",
    );
    let o = iolab(&["fio", "--lenient", "--parse-only", "l.fio"], d.path());
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(text(&o.stderr).starts_with("warning: l.fio:4: option 'description'"));
}

#[test]
fn writes_respect_what_iolab_did_not_make() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(p.join("theirs"), vec![7u8; 64 << 10]).unwrap();
    write(
        p,
        "w.fio",
        "[w]\nfilename=theirs\nrw=write\nbs=4k\nsize=64k\n",
    );
    let o = iolab(&["fio", "w.fio"], p);
    let e = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.starts_with("error: w.fio:1: job 'w': ")
            && e.contains("theirs")
            && e.contains("--overwrite"),
        "{e}"
    );
    assert_eq!(
        std::fs::read(p.join("theirs")).unwrap(),
        vec![7u8; 64 << 10]
    );
    // A file this run creates is written, and removed by unlink=1.
    write(
        p,
        "u.fio",
        "[u]\nfilename=mine\nrw=write\nbs=4k\nsize=64k\nunlink=1\n",
    );
    let o = iolab(&["fio", "--output-format=json", "u.fio"], p);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["jobs"][0]["write"]["io_bytes"], 64 << 10);
    assert!(!p.join("mine").exists());
    // unlink never removes a file the run did not create.
    write(
        p,
        "k.fio",
        "[k]\nfilename=theirs\nrw=read\nbs=4k\nunlink=1\n",
    );
    let o = iolab(&["fio", "k.fio"], p);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(p.join("theirs").exists());
    // --output does not replace an existing file without --overwrite.
    let o = iolab(&["fio", "--output=theirs", "k.fio"], p);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("--output"));
}

/// Every key path of a JSON value (`jobs.read.clat_ns.N`), arrays by
/// their first element, percentile and bin keys folded.
fn keys(v: &serde_json::Value, prefix: &str, out: &mut BTreeSet<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                let k = if prefix.ends_with("percentile") || prefix.ends_with("bins") {
                    "*"
                } else {
                    k.as_str()
                };
                let p = format!("{prefix}.{k}");
                out.insert(p.clone());
                keys(x, &p, out);
            }
        }
        serde_json::Value::Array(a) => {
            if let Some(x) = a.first() {
                keys(x, prefix, out);
            }
        }
        _ => {}
    }
}

fn json_of(o: &Output, who: &str) -> serde_json::Value {
    assert!(o.status.success(), "{who}: {}", text(&o.stderr));
    let s = text(&o.stdout);
    let start = s.find('{').unwrap_or(0);
    serde_json::from_str(&s[start..]).unwrap_or_else(|e| panic!("{who}: {e}: {s}"))
}

#[test]
fn json_keys_match_fio_s_for_the_same_job_and_fio_s_tools_read_them() {
    require!(
        has("fio"),
        "{}: {}",
        "json_keys_match_fio",
        "fio is not installed (scripts/setup.sh)"
    );
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    let job = "[global]\nfilename=data\nsize=2m\nbs=4k\nlat_percentiles=1\n[r]\nrw=randrw\nrwmixread=70\nioengine=psync\n";
    write(p, "j.fio", job);
    // iolab first: it creates the file with its pattern, which fio then reuses.
    let ours = json_of(
        &iolab(&["fio", "--output-format=json+", "j.fio"], p),
        "iolab",
    );
    let fio = Command::new("fio")
        .args(["--output-format=json+", "j.fio"])
        .current_dir(p)
        .output()
        .unwrap();
    let theirs = json_of(&fio, "fio");
    let (mut a, mut b) = (BTreeSet::new(), BTreeSet::new());
    keys(&ours["jobs"], "jobs", &mut a);
    keys(&theirs["jobs"], "jobs", &mut b);
    // Everything iolab writes in fio's namespace is a key fio writes.
    let extra: Vec<&String> = a
        .difference(&b)
        .filter(|k| !k.starts_with("jobs.iolab"))
        .collect();
    assert!(extra.is_empty(), "keys fio does not have: {extra:?}");
    // The keys the consumers read are all there.
    for k in [
        "jobs.jobname",
        "jobs.groupid",
        "jobs.job options",
        "jobs.read.io_bytes",
        "jobs.read.bw",
        "jobs.read.iops",
        "jobs.read.runtime",
        "jobs.read.clat_ns.percentile.*",
        "jobs.read.clat_ns.bins.*",
        "jobs.read.lat_ns.percentile.*",
        "jobs.read.lat_ns.bins.*",
        "jobs.write.lat_ns.bins.*",
        "jobs.read.slat_ns.N",
        "jobs.trim.lat_ns.N",
        "jobs.usr_cpu",
        "jobs.sys_cpu",
        "jobs.ctx",
        "jobs.latency_us.2",
        "jobs.read.bw_mean",
        "jobs.read.iops_mean",
    ] {
        assert!(b.contains(k), "fio lacks {k}: the check is stale");
        assert!(a.contains(k), "iolab lacks {k}");
    }
    // Same job, same amounts: fio and iolab both move the 2 MiB once.
    let total = |v: &serde_json::Value| {
        v["jobs"][0]["read"]["io_bytes"].as_u64().unwrap()
            + v["jobs"][0]["write"]["io_bytes"].as_u64().unwrap()
    };
    assert_eq!(total(&ours), 2 << 20);
    assert_eq!(total(&theirs), 2 << 20);

    // fio_jsonplus_clat2csv: same columns for both.
    require!(
        has("fio_jsonplus_clat2csv"),
        "{}: {}",
        "json_keys_match_fio",
        "fio_jsonplus_clat2csv missing"
    );
    std::fs::write(p.join("ours.json"), serde_json::to_vec(&ours).unwrap()).unwrap();
    std::fs::write(p.join("theirs.json"), serde_json::to_vec(&theirs).unwrap()).unwrap();
    for n in ["ours", "theirs"] {
        let o = Command::new("fio_jsonplus_clat2csv")
            .args([format!("{n}.json"), format!("{n}.csv")])
            .current_dir(p)
            .output()
            .unwrap();
        assert!(o.status.success(), "{n}: {}", text(&o.stderr));
    }
    let head = |n: &str| {
        let s = std::fs::read_to_string(p.join(format!("{n}_job0.csv"))).unwrap();
        (s.lines().next().unwrap().to_string(), s.lines().count())
    };
    let (ho, no) = head("ours");
    let (ht, _) = head("theirs");
    assert_eq!(ho, ht);
    assert!(no > 2, "iolab's CSV has no latency rows");
}

#[test]
fn logs_are_read_by_fio2gnuplot() {
    require!(
        has("fio2gnuplot"),
        "{}: {}",
        "logs_are_read_by_fio2gnuplot",
        "fio2gnuplot is not installed (scripts/setup.sh)"
    );
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    write(p, "l.fio", "[lg]\nfilename=data\nsize=1m\nbs=4k\nioengine=psync\ninvalidate=0\nruntime=300ms\ntime_based\nwrite_bw_log=lg\nwrite_iops_log=lg\nwrite_lat_log=lg\nlog_avg_msec=50\n");
    let o = iolab(&["fio", "--output-format=terse", "l.fio"], p);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let terse = text(&o.stdout);
    assert_eq!(terse.trim_end().split(';').count(), 121, "{terse}");
    for f in [
        "lg_bw.1.log",
        "lg_iops.1.log",
        "lg_lat.1.log",
        "lg_clat.1.log",
    ] {
        let s = std::fs::read_to_string(p.join(f)).unwrap();
        assert!(s.lines().count() >= 3, "{f}: {s}");
        for l in s.lines() {
            let cols: Vec<&str> = l.split(", ").collect();
            assert_eq!(cols.len(), 5, "{f}: {l}");
            assert!(cols.iter().all(|c| c.parse::<u64>().is_ok()), "{f}: {l}");
        }
    }
    // A second run refuses to replace the logs without --overwrite.
    let o = iolab(&["fio", "l.fio"], p);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let o = Command::new("fio2gnuplot")
        .args(["-b"])
        .current_dir(p)
        .output()
        .unwrap();
    let out = text(&o.stdout) + &text(&o.stderr);
    assert!(out.contains("lg_bw.1.log"), "{out}");
    assert!(
        p.join("result.average").exists() || p.join("mygraph").exists(),
        "{out}"
    );
}

#[test]
fn rate_and_thinktime_pace_submission() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    // A load can only slow a run down, so the bound holds on any machine:
    // a paced run issues at most rate x its measured time (+1 per thread).
    let o = iolab(
        &[
            "fio",
            "--name=p",
            "--filename=data",
            "--size=1m",
            "--ioengine=null",
            "--rw=randread",
            "--rate_iops=200",
            "--runtime=300ms",
            "--time_based",
            "--output-format=json",
        ],
        p,
    );
    let v = json_of(&o, "iolab fio rate_iops");
    let r = &v["jobs"][0]["read"];
    let (ios, ms) = (
        r["total_ios"].as_u64().unwrap(),
        r["runtime"].as_u64().unwrap(),
    );
    assert!(
        ios > 0 && ios <= 200 * (ms + 1) / 1000 + 2,
        "{ios} ios in {ms} ms at 200/s"
    );
    // Unpaced, the null engine does far more in the same time.
    let o = iolab(
        &[
            "fio",
            "--name=p",
            "--filename=data",
            "--ioengine=null",
            "--rw=randread",
            "--runtime=300ms",
            "--time_based",
            "--output-format=json",
        ],
        p,
    );
    let free = json_of(&o, "iolab fio unpaced")["jobs"][0]["read"]["total_ios"]
        .as_u64()
        .unwrap();
    assert!(free > 10 * ios, "unpaced {free} vs paced {ios}");
    // thinktime: each op waits 5 ms after the previous completion.
    let o = iolab(
        &[
            "bench",
            "--file",
            "data",
            "--engine",
            "pread",
            "--pattern",
            "rand",
            "--thinktime",
            "5ms",
            "--time",
            "300ms",
            "--cache",
            "as-is",
            "--json",
        ],
        p,
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let run = &v["records"][0]["runs"][0];
    let (ops, ns) = (
        run["ops"].as_u64().unwrap(),
        run["duration_ns"].as_u64().unwrap(),
    );
    assert!(
        ops > 0 && ops <= ns / 5_000_000 + 2,
        "{ops} ops in {ns} ns with 5 ms thinktime"
    );
    assert_eq!(v["records"][0]["spec"]["thinktime_ns"], 5_000_000);
}
