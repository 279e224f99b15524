//! fio options in iolab's runner, through the real
//! binary, in `iolab bench` and `iolab fio` alike: `offset`, `rw=randread:N`,
//! `cpus_allowed`, filename lists and `nrfiles`. Each test checks what the
//! run did (bytes, ops, files, offsets verified against the pattern), not
//! how fast.

mod common;

use common::{argv, iolab, stderr, words};
use std::path::Path;
use std::process::Output;

/// The JSON document a run printed on stdout.
fn json(o: &Output) -> serde_json::Value {
    assert!(o.status.success(), "{}", stderr(o));
    serde_json::from_slice(&o.stdout).expect("stdout is one JSON document")
}

/// Exit 2 and one line on stderr containing every one of `want`.
fn refused(o: &Output, want: &[&str]) {
    let e = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert_eq!(e.trim_end().lines().count(), 1, "{e}");
    assert!(!e.contains("panicked"), "{e}");
    for w in want {
        assert!(e.contains(w), "want {w:?} in: {e}");
    }
}

/// Runs `iolab ARGS` (--print-fio, --parse-only) and checks that it
/// succeeds and prints each of `want`.
fn prints(args: &str, dir: &Path, want: &[&str]) {
    let o = iolab(&words(args), dir);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{args}: {}", stderr(&o));
    for w in want {
        assert!(out.contains(w), "{args}: want {w:?} in {out}");
    }
}

/// Spoils the pattern of `path` in `from..to` (iolab's xattr still says it
/// holds the pattern, so a verified read of those bytes fails).
fn spoil(path: &Path, from: u64, to: u64) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.write_at(&vec![0x5Au8; (to - from) as usize], from)
        .unwrap();
}

#[test]
fn offset_reads_only_the_region_after_it() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    // A 256 KiB file made by iolab, its first 64 KiB spoilt.
    let made = iolab(&words("bench --file f --size 256k --ops 1"), p);
    assert!(made.status.success(), "{}", stderr(&made));
    spoil(&p.join("f"), 0, 64 << 10);
    // The region [64k, 256k): every byte read is checked, none is spoilt.
    let v = json(&iolab(
        &words("bench --file f --offset 64k --bs 4k --pattern shuffle --verify --json"),
        p,
    ));
    let rec = &v["records"][0];
    assert_eq!(rec["spec"]["offset"].as_u64(), Some(64 << 10));
    assert_eq!(rec["spec"]["file_size"].as_u64(), Some(192 << 10));
    assert_eq!(rec["runs"][0]["bytes"].as_u64(), Some(192 << 10));
    assert_eq!(rec["runs"][0]["ops"].as_u64(), Some(48));
    // Without the offset the spoilt bytes are read, and caught.
    let o = iolab(&words("bench --file f --verify"), p);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    // fio's form: [offset, offset + size); fio is told the same.
    let v = json(&iolab(
        &words("fio --name=o --filename=f --offset=64k --size=128k --bs=8k --rw=randread --output-format=json"),
        p,
    ));
    assert_eq!(v["jobs"][0]["read"]["io_bytes"].as_u64(), Some(128 << 10));
    prints(
        "bench --file f --offset 64k --size 128k --print-fio",
        p,
        &["--offset=64k ", "--size=128k "],
    );
    prints("bench --file f --offset 64k --ops 2", p, &[" from 64 KiB "]);
    // Past the end, or not aligned for O_DIRECT: one line, exit 2.
    refused(
        &iolab(&words("bench --file f --offset 256k"), p),
        &["--offset 256 KiB", "at or past the end"],
    );
    let o = iolab(
        &argv("bench --file {} --offset 1000 --size 64k --direct", &["f"]),
        p,
    );
    if iolab::file::fs_type(p) != Some("tmpfs") {
        refused(&o, &["--offset 1000", "O_DIRECT"]);
    }
}

/// Runs iolab under `strace -f -e trace=CALLS` in `dir` and returns the
/// trace's lines (stdout is iolab's).
fn straced(calls: &str, args: &[&str], dir: &Path) -> (Output, Vec<String>) {
    let o = std::process::Command::new("strace")
        .args(["-f", "-qq", "-e", &format!("trace={calls}"), "-o", "st.txt"])
        .arg(env!("CARGO_BIN_EXE_iolab"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    let lines = std::fs::read_to_string(dir.join("st.txt"))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    (o, lines)
}

/// What [`straced_cpus`] hands a test.
type CpuCase = (tempfile::TempDir, Vec<usize>, usize, usize, String);

/// For a test that traces iolab's CPU pinning, when strace is on PATH
/// (else it is skipped, or fails under CI=true): a fresh folder, the CPUs
/// this process may use, the first and last of them, and those two as a
/// `--cpus` list (one CPU twice on a one-CPU machine).
fn straced_cpus(test: &str) -> Option<CpuCase> {
    let d = straced_dir(test)?;
    let cpus = iolab::primitives::allowed_cpus().unwrap();
    let (a, b) = (cpus[0], *cpus.last().unwrap());
    let list = format!("{a},{b}");
    Some((d, cpus, a, b, list))
}

/// For a test that traces iolab, when strace is on PATH (else it is
/// skipped, or fails under CI=true): a fresh folder.
fn straced_dir(test: &str) -> Option<tempfile::TempDir> {
    if !common::has("strace") {
        iolab::testing::unmet(&format!(
            "{test}: strace is not installed (scripts/setup.sh)"
        ));
        return None;
    }
    Some(tempfile::tempdir().unwrap())
}

/// `iolab ARGS` run in a fresh folder under strace, tracing its preads
/// (None: strace is missing, see [`straced_dir`]).
fn preads_in_new_dir(test: &str, args: &str) -> Option<(tempfile::TempDir, Output, Vec<String>)> {
    let d = straced_dir(test)?;
    let (o, lines) = straced("pread64", &words(args), d.path());
    Some((d, o, lines))
}

/// The CPU masks an strace log of sched_setaffinity shows, sorted.
fn masks(lines: &[String]) -> Vec<String> {
    let mut v: Vec<String> = lines
        .iter()
        .filter_map(|l| l.split_once("sched_setaffinity(0, 128, "))
        .map(|(_, m)| format!("{}]", m.split(']').next().unwrap()))
        .collect();
    v.sort();
    v
}

/// The (descriptor, offset) of each `bs`-byte pread in an strace log, in
/// order.
fn preads(lines: &[String], bs: u64) -> Vec<(u32, u64)> {
    let mid = format!(", {bs}, ");
    lines
        .iter()
        .filter(|l| l.ends_with(&format!(") = {bs}")))
        .filter_map(|l| {
            let fd = l
                .split_once("pread64(")?
                .1
                .split(',')
                .next()?
                .parse()
                .ok()?;
            let at = l.rfind(&mid)? + mid.len();
            Some((fd, l[at..].split(')').next()?.parse().ok()?))
        })
        .collect()
}

/// The offsets of [`preads`].
fn pread_offsets(lines: &[String], bs: u64) -> Vec<u64> {
    preads(lines, bs).into_iter().map(|r| r.1).collect()
}

#[test]
fn random_runs_read_n_blocks_in_order_from_each_random_offset() {
    // fio's rw=randread:8 with its random map: 256 KiB in runs of 8 blocks
    // of 4 KiB, every block once, the runs in random order, each verified.
    let Some((d, o, lines)) = preads_in_new_dir(
        "random_runs_read_n_blocks",
        "bench --file f --size 256k --bs 4k --pattern shuffle-run:8 --verify --json",
    ) else {
        return;
    };
    let p = d.path();
    let v = json(&o);
    assert_eq!(v["records"][0]["runs"][0]["ops"].as_u64(), Some(64));
    let offs = pread_offsets(&lines, 4096);
    assert_eq!(offs.len(), 64, "{offs:?}");
    let runs: Vec<&[u64]> = offs.chunks(8).collect();
    for r in &runs {
        assert_eq!(
            r[0] % (8 * 4096),
            0,
            "a run starts at a multiple of 8 blocks: {r:?}"
        );
        assert!(r.windows(2).all(|w| w[1] == w[0] + 4096), "{r:?}");
    }
    let starts: Vec<u64> = runs.iter().map(|r| r[0]).collect();
    let mut sorted = starts.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..8).map(|i| i * 8 * 4096).collect::<Vec<_>>());
    assert_ne!(starts, sorted, "the runs come in random order");
    // norandommap: rand-run, with replacement; fio's job file says the same.
    let (o, lines) = straced(
        "pread64",
        &words("fio --name=r --filename=f --size=256k --rw=randread:4 --norandommap --number_ios=40 --output-format=json"),
        p,
    );
    assert_eq!(json(&o)["jobs"][0]["read"]["total_ios"].as_u64(), Some(40));
    let offs = pread_offsets(&lines, 4096);
    assert_eq!(offs.len(), 40);
    for r in offs.chunks(4) {
        let wraps = |w: &[u64]| w[1] == w[0] + 4096 || (w[0] == 252 << 10 && w[1] == 0);
        assert!(r.windows(2).all(wraps), "{r:?}");
    }
    prints(
        "fio --name=r --filename=f --size=256k --rw=randrw:4 --parse-only",
        p,
        &["shuffle-run:4"],
    );
    prints(
        "bench --file f --pattern rand-run:4 --ops 8 --print-fio",
        p,
        &["--rw=randread:4 ", "--norandommap"],
    );
    refused(
        &iolab(&words("bench --file f --pattern rand-run:1"), p),
        &["--pattern", "rand-run:1", "2 or more"],
    );
}

#[test]
fn cpus_split_gives_each_worker_thread_one_cpu_in_turn() {
    let Some((d, _cpus, a, b, list)) = straced_cpus("cpus_split_gives_each_worker_thread") else {
        return;
    };
    let p = d.path();
    // split: three worker threads on a, b, a in turn.
    let (o, lines) = straced(
        "sched_setaffinity",
        &argv(
            "bench --file f --size 64k --threads 3 --cpus {} --cpus-policy split --json",
            &[&list],
        ),
        p,
    );
    let v = json(&o);
    assert_eq!(v["records"][0]["spec"]["cpus"]["split"], true);
    let set = if a == b { vec![a] } else { vec![a, b] };
    let mut want: Vec<String> = (0..3)
        .map(|i| format!("[{}]", set[i % set.len()]))
        .collect();
    want.sort();
    assert_eq!(masks(&lines), want, "{lines:?}");
}

#[test]
fn cpus_shared_pins_every_thread_to_all_and_threads_0_gets_its_cpus_back() {
    let Some((d, cpus, a, b, list)) = straced_cpus("cpus_shared_pins_every_thread") else {
        return;
    };
    let p = d.path();
    // fio's form, shared: every thread on both.
    let job = format!(
        "fio --name=c --filename=f --size=64k --numjobs=2 --cpus_allowed={list} --output-format=json"
    );
    let (o, lines) = straced("sched_setaffinity", &words(&job), p);
    // numjobs=2 is two jobs, each over the whole file, as in fio.
    let v = json(&o);
    for j in 0..2 {
        assert_eq!(v["jobs"][j]["read"]["io_bytes"].as_u64(), Some(64 << 10));
    }
    let both = if a == b {
        format!("[{a}]")
    } else {
        format!("[{a} {b}]")
    };
    // Each job runs on its own thread, pinned to both for its run, then
    // given back the CPUs it had.
    let all = format!(
        "[{}]",
        cpus.iter()
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join(" ")
    );
    let m = masks(&lines);
    assert_eq!(m.len(), 4, "{lines:?}");
    assert!(m.iter().filter(|x| **x == both).count() >= 2, "{lines:?}");
    assert!(m.iter().all(|x| *x == both || *x == all), "{lines:?}");
    // --threads 0: the calling thread is pinned for the run, then given
    // back every CPU it had.
    let (o, lines) = straced(
        "sched_setaffinity",
        &argv("bench --file f --threads 0 --cpus {}", &[&b.to_string()]),
        p,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let mut want = vec![format!("[{b}]"), all];
    want.sort();
    assert_eq!(masks(&lines), want, "{lines:?}");
    // fio is told the same list and policy.
    let o = iolab(
        &argv(
            "bench --file f --cpus {} --cpus-policy split --print-fio",
            &[&list],
        ),
        p,
    );
    let line = String::from_utf8_lossy(&o.stdout).into_owned();
    let pin = iolab_bench::pin::CpuPin {
        cpus: iolab_bench::pin::CpuPin::parse_list(&list).unwrap(),
        split: true,
        first: 0,
    };
    assert!(
        line.contains(&format!("--cpus_allowed={} ", pin.list())),
        "{line}"
    );
    assert!(line.contains("--cpus_allowed_policy=split"), "{line}");
    // A CPU the process may not use: one line, exit 2, nothing run.
    refused(
        &iolab(&words("bench --file f --cpus 4095"), p),
        &["--cpus 4095: CPU 4095 is not online or not allowed"],
    );
    let o = iolab(&words("fio --name=c --filename=f --cpus_allowed=4095"), p);
    refused(&o, &["<command line>:3: cpus_allowed=4095: CPU 4095"]);
}

/// Checks that `reads` (descriptor, offset) went to `files` descriptors in
/// turn, and read every `bs` block of `len` bytes of each once.
fn each_file_in_turn(reads: &[(u32, u64)], files: usize, len: u64, bs: u64) {
    let fds: Vec<u32> = reads[..files].iter().map(|r| r.0).collect();
    let mut distinct = fds.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), files, "{reads:?}");
    for (i, (fd, _)) in reads.iter().enumerate() {
        assert_eq!(*fd, fds[i % files], "op {i} went out of turn: {reads:?}");
    }
    for fd in fds {
        let mut offs: Vec<u64> = reads.iter().filter(|r| r.0 == fd).map(|r| r.1).collect();
        offs.sort_unstable();
        assert_eq!(offs, (0..len / bs).map(|b| b * bs).collect::<Vec<_>>());
    }
}

#[test]
fn a_file_list_and_nrfiles_send_each_io_to_the_next_file_in_turn() {
    // Two files made by iolab, every block of each read once, verified.
    let Some((d, o, lines)) = preads_in_new_dir(
        "a_file_list_and_nrfiles",
        "bench --files a:b --size 64k --bs 4k --pattern shuffle --verify --json",
    ) else {
        return;
    };
    let p = d.path();
    let v = json(&o);
    let rec = &v["records"][0];
    assert_eq!(rec["spec"]["more_files"][0], "b");
    assert_eq!(rec["runs"][0]["bytes"].as_u64(), Some(128 << 10));
    each_file_in_turn(&preads(&lines, 4096), 2, 64 << 10, 4096);
    // fio's nrfiles: JOB.0.0 and JOB.0.1 as fio names them, size shared.
    let (o, lines) = straced(
        "pread64",
        &words("fio --name=j --nrfiles=2 --size=64k --bs=4k --rw=read --output-format=json"),
        p,
    );
    assert_eq!(
        json(&o)["jobs"][0]["read"]["io_bytes"].as_u64(),
        Some(64 << 10)
    );
    for f in ["j.0.0", "j.0.1"] {
        assert_eq!(std::fs::metadata(p.join(f)).unwrap().len(), 32 << 10, "{f}");
    }
    each_file_in_turn(&preads(&lines, 4096), 2, 32 << 10, 4096);
    prints(
        "bench --file n --nrfiles 2 --file-per-thread --threads 2 --size 64k --print-fio",
        p,
        &[
            "--filename_format=n.$jobnum.$filenum",
            "--nrfiles=2 ",
            "--size=128k ",
        ],
    );
    prints("bench --files a:b --ops 2", p, &[" 2 files in turn "]);
    prints(
        "bench --files a:b --size 64k --print-fio",
        p,
        &["--filename=a:b "],
    );
}

#[test]
fn a_file_list_keeps_iolab_s_rules_for_writes() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    // A file iolab did not make is not written without --overwrite, and
    // nothing else of the list is made either.
    let mine = vec![7u8; 64 << 10];
    std::fs::write(p.join("mine"), &mine).unwrap();
    refused(
        &iolab(&words("bench --files new:mine --size 64k --op write"), p),
        &["--files mine: not made by iolab", "--overwrite"],
    );
    assert_eq!(std::fs::read(p.join("mine")).unwrap(), mine);
    assert!(!p.join("new").exists());
    let o = iolab(
        &words("fio --name=w --filename=new:mine --size=128k --rw=write"),
        p,
    );
    refused(&o, &["mine was not made by iolab"]);
    assert_eq!(std::fs::read(p.join("mine")).unwrap(), mine);
    // Writes into files iolab made: each op to the next, all verifiable after.
    let v = json(&iolab(
        &words("bench --files x:y:z --size 48k --op write --fsync 3 --json"),
        p,
    ));
    assert_eq!(v["records"][0]["runs"][0]["write_ops"].as_u64(), Some(36));
    // A sync before the write after every 3rd, as fio: none after the last.
    assert_eq!(
        v["records"][0]["runs"][0]["sync_latency"]["count"].as_u64(),
        Some(11)
    );
    json(&iolab(&words("bench --files x:y:z --verify --json"), p));
    refused(
        &iolab(&words("bench --files x:y --file-per-thread"), p),
        &["--files", "--file-per-thread"],
    );
}

/// The page holding the generated option table (`scripts/fio-options-table.sh`
/// rewrites it there).
const OPTIONS_DOC: &str = "docs/fio-options.md";

#[test]
fn docs_fio_options_md_is_what_list_options_prints() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let doc = std::fs::read_to_string(root.join(OPTIONS_DOC)).unwrap();
    let table = doc
        .split_once("```\n")
        .and_then(|(_, rest)| rest.split_once("```"))
        .map(|(t, _)| t)
        .expect("a fenced table");
    let o = iolab(&words("fio --list-options"), &root);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        table,
        String::from_utf8_lossy(&o.stdout),
        "{OPTIONS_DOC} is stale: regenerate its table with scripts/fio-options-table.sh"
    );
}

#[test]
fn every_example_job_file_is_taken_as_scripts_vs_fio_jobs_runs_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    for f in ["a", "b"] {
        json(&iolab(
            &argv("bench --file {} --size 1m --ops 1 --json", &[f]),
            p,
        ));
    }
    let mut seen = 0;
    for e in std::fs::read_dir(root.join("examples/fio")).unwrap() {
        let job = e.unwrap().path();
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_iolab"))
            .args(["fio", "--parse-only"])
            .arg(&job)
            .env("IOLAB_FIO_FILE", p.join("a"))
            .env("IOLAB_FIO_FILE2", p.join("b"))
            .env("IOLAB_FIO_SIZE", "1m")
            .env("IOLAB_FIO_RUNTIME", "1")
            .current_dir(p)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}: {}", job.display(), stderr(&o));
        seen += 1;
    }
    assert!(seen >= 14, "{seen} job files");
}
