//! `iolab fio`: real job files through the real binary. Parsing every
//! construct, refusals (one line naming file:line, exit 2, nothing left
//! behind), fio's JSON keys checked against fio's own output for the same
//! job, and the consumers Debian's fio ships (fio_jsonplus_clat2csv,
//! fio2gnuplot) run on iolab's output.

use std::collections::BTreeSet;
mod common;

use common::{has, iolab, words};
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
    // numjobs=2: two jobs, as fio runs them.
    assert!(
        out.contains("one (main.fio:11): group 0, job 0 of its section, A16B1"),
        "{out}"
    );
    assert!(
        out.contains("one (main.fio:11): group 0, job 1 of its section, A16B1"),
        "{out}"
    );
    assert!(out.contains("engine=libaio op=read pattern=rand"), "{out}");
    assert!(
        out.contains("size=2097152 stop: bytes=- time=2000ms"),
        "{out}"
    );
    assert!(
        out.contains("two (main.fio:17): group 1, job 0 of its section, U16B4MF"),
        "{out}"
    );
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
        "[a]\nsize=1m\nfilename=x\nzonemode=zbd\n",
        &[],
        "error: bad.fio:4: option 'zonemode': known to fio but not supported by iolab: zoned block devices",
    );
    // --warnings-fatal: an option accepted with a note is refused.
    assert_refused(
        "[a]\nsize=1m\nfilename=x\ndescription=x\n",
        &["--warnings-fatal"],
        "error: bad.fio:4: option 'description': a job's description is text only (--warnings-fatal)",
    );
    // An engine iolab lacks is named at its ioengine= line, before its options.
    assert_refused(
        "[a]\nsize=1m\nhttp_host=h\nfilename=x\nioengine=http\n",
        &[],
        "error: bad.fio:5: ioengine=http: 'http' is not an engine iolab has",
    );
    // An unset variable is nothing, as fio expands it; the value then fails.
    assert_refused(
        "[a]\nsize=1m\nfilename=x\nbs=${IOLAB_SURELY_NOT_SET}\n",
        &[],
        "error: bad.fio:4: bs=${IOLAB_SURELY_NOT_SET}: ${IOLAB_SURELY_NOT_SET} not set, and fio expands an unset variable to nothing",
    );
    assert_refused(
        "[a]\nsize=1m\nfilename=x\n",
        &["--section=b"],
        "error: --section=b: no job of that name",
    );
    assert_refused(
        "[a]\nsize=1m\nfilename=x\ncpus_allowed=4095\n",
        &[],
        "error: bad.fio:4: cpus_allowed=4095: CPU 4095 is not online or not allowed for this process",
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
    // A presentation-only option is accepted with a note (checked with
    // --parse-only so nothing runs); --section picks jobs; inline comments
    // and expressions are read as fio reads them.
    write(
        d.path(),
        "l.fio",
        "[a]\nsize=(1m*2)\nfilename=x\ndescription=hello ; a comment\nnumjobs=2\t; two jobs\n[b]\nsize=1m\nfilename=y\n",
    );
    let o = iolab(&["fio", "--parse-only", "--section=a", "l.fio"], d.path());
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(
        out.contains("note: l.fio:4: option 'description': a job's description is text only"),
        "{out}"
    );
    assert!(out.contains("size=2097152"), "{out}");
    assert_eq!(out.matches("a (l.fio:1)").count(), 2, "{out}");
    assert!(!out.contains("b (l.fio"), "{out}");
    let o = iolab(&["fio", "--showcmd", "l.fio"], d.path());
    assert_eq!(
        text(&o.stdout),
        "fio --name=a --size=(1m*2) --filename=x --description=hello --numjobs=2 --name=b --size=1m --filename=y\n"
    );
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

// Long on purpose: one job run by fio and by iolab, then the same key
// sets and fio's own tools checked on both outputs.
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
    // 121 fields, then 9 per disk the run used, as fio 3.33 writes them.
    let n = terse.trim_end().split(';').count();
    assert!(n >= 121 && (n - 121).is_multiple_of(9), "{n}: {terse}");
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

// Long on purpose: one paced run per option by the real binary, each
// checked against the bound only a slower machine could break.
#[test]
fn rate_and_thinktime_pace_submission() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    // A load can only slow a run down, so the bound holds on any machine:
    // a paced run issues at most rate x its measured time (+1 per thread).
    let o = iolab(
        &words("fio --name=p --filename=data --size=1m --ioengine=null --rw=randread --rate_iops=200 --runtime=300ms --time_based --output-format=json"),
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
        &words("fio --name=p --size=1m --ioengine=null --rw=randread --runtime=300ms --time_based --output-format=json"),
        p,
    );
    let free = json_of(&o, "iolab fio unpaced")["jobs"][0]["read"]["total_ios"]
        .as_u64()
        .unwrap();
    assert!(free > 10 * ios, "unpaced {free} vs paced {ios}");
    // thinktime: each op waits 5 ms after the previous completion.
    let o = iolab(
        &words("bench --file data --size 1m --engine pread --pattern rand --thinktime 5ms --time 300ms --cache as-is --json"),
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

/// One direction's (N, mean) of slat, clat and lat, and its total_ios.
fn lat_triple(v: &serde_json::Value, dir: &str) -> (u64, [(u64, f64); 3]) {
    let s = &v["jobs"][0][dir];
    let one = |k: &str| {
        (
            s[k]["N"].as_u64().unwrap(),
            s[k]["mean"].as_f64().unwrap_or(0.0),
        )
    };
    (
        s["total_ios"].as_u64().unwrap(),
        [one("slat_ns"), one("clat_ns"), one("lat_ns")],
    )
}

// Long on purpose: one end-to-end run of the real binary per engine and
// the checks on its output, in the order the output gives them.
#[test]
fn async_engines_split_slat_and_clat_per_direction_when_asked() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    let job = |engine: &str, slat: &str| {
        format!("[global]\nfilename=data\nsize=2m\nbs=4k\nrw=randrw\nrwmixread=60\nioengine={engine}\niodepth=8\niodepth_batch_submit=4\n{slat}\n[j]\n")
    };
    let mut ran = 0;
    for engine in ["io_uring", "libaio"] {
        write(
            p,
            "s.fio",
            &job(engine, "disable_slat=0\nslat_percentiles=1"),
        );
        let o = iolab(&["fio", "--output-format=json+", "s.fio"], p);
        if !o.status.success() && text(&o.stderr).contains("not supported") {
            eprintln!("{engine}: {}", text(&o.stderr));
            continue;
        }
        ran += 1;
        let v = json_of(&o, engine);
        let mut total = 0;
        for dir in ["read", "write"] {
            let (ios, [slat, clat, lat]) = lat_triple(&v, dir);
            assert!(ios > 0, "{engine} {dir}: no ios");
            total += ios;
            // Every op of this direction, and only those, in each histogram.
            assert_eq!((slat.0, clat.0, lat.0), (ios, ios, ios), "{engine} {dir}");
            // lat = slat + clat per op, so for the means (each within the
            // histograms' 0.1 %).
            let sum = slat.1 + clat.1;
            assert!(
                (sum - lat.1).abs() <= 0.002 * lat.1 + 2.0,
                "{engine} {dir}: slat {} + clat {} != lat {}",
                slat.1,
                clat.1,
                lat.1
            );
            assert!(slat.1 > 0.0 && clat.1 > 0.0, "{engine} {dir}");
            let s = &v["jobs"][0][dir];
            assert!(s["slat_ns"]["percentile"].is_object(), "{engine} {dir}");
            assert!(s["slat_ns"]["bins"].is_object(), "{engine} {dir}");
            assert!(s["clat_ns"]["bins"].is_object(), "{engine} {dir}");
        }
        assert_eq!(total, 512, "{engine}: 2 MiB of 4 KiB ops");
        // Reads and writes are different histograms.
        assert_ne!(
            v["jobs"][0]["read"]["clat_ns"]["bins"],
            v["jobs"][0]["write"]["clat_ns"]["bins"]
        );
        // The normal output prints all three per direction.
        let o = iolab(&["fio", "s.fio"], p);
        let t = text(&o.stdout);
        for l in [
            "    slat (",
            "    clat (",
            "     lat (",
            "    slat percentiles",
        ] {
            assert_eq!(t.matches(l).count(), 2, "{engine}: {l}\n{t}");
        }
        // By default the submit call is timed too, as fio times it, and
        // the percentiles are clat's.
        write(p, "n.fio", &job(engine, ""));
        let v = json_of(&iolab(&["fio", "--output-format=json", "n.fio"], p), engine);
        let (ios, [slat, clat, lat]) = lat_triple(&v, "write");
        assert_eq!(
            (slat.0, clat.0, lat.0),
            (ios, ios, ios),
            "{engine} by default"
        );
        assert!(v["jobs"][0]["write"]["clat_ns"]["percentile"]["99.000000"].is_u64());
        // disable_slat=1: no slat; clat and lat are the whole time.
        write(p, "n.fio", &job(engine, "disable_slat=1"));
        let v = json_of(&iolab(&["fio", "--output-format=json", "n.fio"], p), engine);
        let (ios, [slat, clat, lat]) = lat_triple(&v, "write");
        assert_eq!((slat.0, clat.0, lat.0), (0, ios, ios), "{engine} untimed");
    }
    require!(
        ran > 0,
        "{}: {}",
        "async_engines_split_slat_and_clat",
        "neither io_uring nor libaio runs here"
    );
    // fio's own JSON of the same job has the same slat/clat/lat keys per direction.
    require!(
        has("fio"),
        "{}: {}",
        "async_engines_split_slat_and_clat",
        "fio is not installed (scripts/setup.sh)"
    );
    write(
        p,
        "s.fio",
        &job("libaio", "disable_slat=0\nslat_percentiles=1"),
    );
    let ours = json_of(
        &iolab(&["fio", "--output-format=json+", "s.fio"], p),
        "iolab",
    );
    let fio = Command::new("fio")
        .args(["--output-format=json+", "s.fio"])
        .current_dir(p)
        .output()
        .unwrap();
    let theirs = json_of(&fio, "fio");
    let lat_keys = |v: &serde_json::Value| {
        let mut k = BTreeSet::new();
        keys(&v["jobs"], "jobs", &mut k);
        k.into_iter()
            .filter(|k| k.contains("lat_ns"))
            .collect::<BTreeSet<_>>()
    };
    assert_eq!(lat_keys(&ours), lat_keys(&theirs));
    for dir in ["read", "write"] {
        let (ios, [slat, clat, _]) = lat_triple(&theirs, dir);
        assert_eq!((slat.0, clat.0), (ios, ios), "fio {dir}: the reference");
    }
}

#[test]
fn jobs_without_stonewall_run_together_and_group_reporting_merges_them() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    let body = |gr: &str| {
        format!("[global]\nsize=1m\nbs=4k\nioengine=psync\n{gr}\n[r]\nfilename=a\nrw=randread\n[w]\nfilename=b\nrw=randwrite\n[after]\nstonewall\nfilename=a\nrw=read\n")
    };
    let shape = |v: &serde_json::Value| -> Vec<(String, u64, u64, u64)> {
        v["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|j| {
                (
                    j["jobname"].as_str().unwrap().to_string(),
                    j["groupid"].as_u64().unwrap(),
                    j["read"]["total_ios"].as_u64().unwrap(),
                    j["write"]["total_ios"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    let s = |n: &str, g, r, w| (n.to_string(), g, r, w);
    write(p, "g.fio", &body(""));
    let v = json_of(
        &iolab(&["fio", "--output-format=json", "g.fio"], p),
        "iolab",
    );
    let apart = vec![s("r", 0, 256, 0), s("w", 0, 0, 256), s("after", 1, 256, 0)];
    assert_eq!(shape(&v), apart);
    write(p, "g.fio", &body("group_reporting"));
    let o = iolab(&["fio", "--output-format=normal,json", "g.fio"], p);
    let v = json_of(&o, "iolab");
    let merged = vec![s("r", 0, 256, 256), s("after", 1, 256, 0)];
    assert_eq!(shape(&v), merged);
    let j = &v["jobs"][0];
    // One histogram per direction, each with its own ops.
    assert_eq!(j["read"]["clat_ns"]["N"], 256);
    assert_eq!(j["write"]["clat_ns"]["N"], 256);
    let t = text(&o.stdout);
    assert!(t.contains("r: (groupid=0, jobs=2)"), "{t}");
    assert!(
        t.contains("group_reporting: 2 job(s) (r, w) ran at the same time"),
        "{t}"
    );
    // fio: the same shapes for the same files.
    require!(
        has("fio"),
        "{}: {}",
        "jobs_without_stonewall_run_together",
        "fio is not installed (scripts/setup.sh)"
    );
    for (gr, want) in [("", apart), ("group_reporting", merged)] {
        write(p, "g.fio", &body(gr));
        let o = Command::new("fio")
            .args(["--output-format=json", "g.fio"])
            .current_dir(p)
            .output()
            .unwrap();
        assert_eq!(shape(&json_of(&o, "fio")), want, "fio with '{gr}'");
    }
}

#[test]
fn end_fsync_syncs_the_written_file_once_at_the_end() {
    require!(
        has("strace"),
        "{}: {}",
        "end_fsync_syncs_the_written_file",
        "strace is not installed (scripts/setup.sh)"
    );
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    let trace = |end: u32| {
        let o = Command::new("strace")
            .args(["-f", "-e", "trace=fsync,fdatasync", "-o", "st.txt"])
            .arg(env!("CARGO_BIN_EXE_iolab"))
            .args([
                "fio",
                "--overwrite",
                "--name=w",
                "--filename=data",
                "--size=1m",
                "--bs=64k",
                "--rw=write",
                &format!("--end_fsync={end}"),
                "--output-format=json",
            ])
            .current_dir(p)
            .output()
            .unwrap();
        let v = json_of(&o, "iolab end_fsync");
        assert_eq!(v["jobs"][0]["write"]["total_ios"], 16);
        std::fs::read_to_string(p.join("st.txt"))
            .unwrap()
            .lines()
            .filter(|l| l.contains("fsync(") && !l.contains("resumed"))
            .count()
    };
    // The first run lays the file out (which syncs it); the next two find it.
    trace(0);
    let without = trace(0);
    let with = trace(1);
    assert_eq!(
        with,
        without + 1,
        "end_fsync=1: one fsync more than without"
    );
}

#[test]
fn fsync_every_n_writes_fills_fio_s_sync_block() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    // 1 MiB of 4 KiB writes, an fsync before the write that follows every
    // 4th: 63 syncs, as fio makes them (none after the last write).
    let v = json_of(
        &iolab(
            &words("fio --name=w --filename=wal --size=1m --bs=4k --rw=write --fsync=4 --output-format=json"),
            p,
        ),
        "fsync job",
    );
    let j = &v["jobs"][0];
    assert_eq!(j["write"]["total_ios"].as_u64(), Some(256), "{j}");
    let s = &j["sync"];
    assert_eq!(s["total_ios"].as_u64(), Some(63), "{s}");
    let l = &s["lat_ns"];
    assert_eq!(l["N"].as_u64(), Some(63), "{l}");
    let (min, max) = (l["min"].as_u64().unwrap(), l["max"].as_u64().unwrap());
    assert!(min > 0 && min <= max, "{l}");
    let p50 = l["percentile"]["50.000000"].as_u64().unwrap();
    let p99 = l["percentile"]["99.000000"].as_u64().unwrap();
    assert!(min <= p50 && p50 <= p99 && p99 <= max, "{l}");
    // A read job has no syncs: fio's zero block.
    let v = json_of(
        &iolab(
            &words("fio --name=r --filename=wal --size=1m --bs=4k --rw=read --output-format=json"),
            p,
        ),
        "read job",
    );
    assert_eq!(v["jobs"][0]["sync"]["total_ios"].as_u64(), Some(0));
}

#[test]
fn fio_jobs_run_beside_a_stand_in_for_fios_supervisor_unless_told_not_to() {
    let d = tempfile::tempdir().unwrap();
    let cpus = iolab::primitives::allowed_cpus().unwrap();
    let last = cpus[cpus.len() - 1];
    let pin = format!("--cpus_allowed={last}");
    let job = "--name=w --filename=f --size=1m --rw=randread --bs=4k --time_based";
    // By default: one waker, not pinned (as fio's supervisor), every 10 ms.
    let mut args = words("fio --output-format=json,normal --runtime=2");
    args.extend(words(job));
    args.push(&pin);
    let o = common::assert_wakers_during_run(&args, d.path(), &[common::own_cpu_list()]);
    let out = text(&o.stdout);
    let v: serde_json::Value = serde_json::from_str(&out[..out.rfind("}\n").unwrap() + 1])
        .unwrap_or_else(|e| panic!("{e}: {out}"));
    let w = &v["jobs"][0]["iolab"]["waker"];
    assert_eq!(w["fio_supervisor_stand_in"], true, "{w}");
    assert_eq!(w["cpus"], serde_json::json!([]), "{w}");
    assert!(
        out.contains("iolab wakers : one process, not pinned, waking every 10 ms: a stand-in for fio's supervisor"),
        "{out}"
    );
    // --waker=5ms adds one pinned waker per CPU of the jobs (here one).
    let mut args = words("fio --waker=5ms --output-format=json --runtime=2");
    args.extend(words(job));
    args.push(&pin);
    let o = common::assert_wakers_during_run(
        &args,
        d.path(),
        &[common::own_cpu_list(), last.to_string()],
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let w = &v["jobs"][0]["iolab"]["waker"];
    assert_eq!(w["every_us"], 5_000, "{w}");
    assert_eq!(w["cpus"], serde_json::json!([last]), "{w}");
    // --waker=off: none at any time, and the record says none.
    let mut args = words("fio --waker=off --output-format=json --runtime=1");
    args.extend(words(job));
    let o = common::assert_wakers_during_run(&args, d.path(), &[]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["jobs"][0]["iolab"]["waker"].is_null(), "{v}");
    // A bad period: one line naming the flag, exit 2.
    let o = iolab(
        &words("fio --waker=1us --name=w --filename=f --size=1m"),
        d.path(),
    );
    assert_eq!(o.status.code(), Some(2));
    let e = text(&o.stderr);
    assert_eq!(e.trim().lines().count(), 1, "{e}");
    assert!(e.contains("--waker") && e.contains("1us"), "{e}");
}
