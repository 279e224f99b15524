//! The GPU commands on a machine without a usable GPU (as CI is): `cat
//! --gpu`, `bench --mem cuda`, `tune` and their bad input each end with
//! one line naming what is wrong and exit status 2, leaving nothing
//! behind; input that is wrong whatever the machine (a malformed
//! checkpoint, a flag that writes elsewhere) is named before the GPU is
//! looked for. The byte-for-byte checks on a GPU are in
//! crates/iolab-cuda-tests and scripts/gpu-tests.sh.

mod common;

use common::{iolab, listing, stderr};
use std::path::Path;

/// Whether this machine has an NVIDIA GPU (then the "no GPU" lines differ).
fn gpu_here() -> bool {
    Path::new("/dev/nvidia0").exists()
}

/// Exit status 2 and one line on stderr (after any profile warning) that
/// contains every one of `words`.
fn refused(o: &std::process::Output, words: &[&str]) {
    let e = stderr(o);
    let lines: Vec<&str> = e.lines().filter(|l| !l.starts_with("warning:")).collect();
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert_eq!(lines.len(), 1, "{e}");
    for w in words {
        assert!(lines[0].contains(w), "{w:?} not in {e}");
    }
}

#[test]
fn cat_into_a_gpu_says_in_one_line_why_it_cannot_and_checks_its_input_first() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("data");
    std::fs::write(&f, vec![7u8; 100_000]).unwrap();
    if !gpu_here() {
        let o = iolab(&["cat", "--gpu", "0", "data"], d.path());
        refused(&o, &["cat --gpu 0: no NVIDIA"]);
        assert!(o.stdout.is_empty());
    }
    // A malformed checkpoint is named whatever the machine has.
    std::fs::write(d.path().join("m.safetensors"), b"\x04\0\0\0\0\0\0\0{\"a\"").unwrap();
    let o = iolab(&["cat", "--gpu", "0", "m.safetensors"], d.path());
    refused(&o, &["m.safetensors", "not valid JSON"]);
    let o = iolab(&["cat", "--gpu", "0", "data", "m.safetensors"], d.path());
    refused(&o, &["one checkpoint at a time", "--as bytes"]);
    // Bytes that would go elsewhere: refused before anything is written.
    let o = iolab(&["cat", "--gpu", "0", "-o", "out", "data"], d.path());
    refused(&o, &["drop -o"]);
    assert!(!d.path().join("out").exists());
    let o = iolab(&["cat", "--verify=all", "data"], d.path());
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--gpu"), "{}", stderr(&o));
    assert_eq!(listing(d.path()), ["data", "m.safetensors"]);
}

#[test]
fn bench_into_a_gpu_refuses_writes_fio_and_a_missing_gpu_before_making_a_file() {
    let d = tempfile::tempdir().unwrap();
    let bench = |extra: &[&str]| {
        let mut a = vec!["bench", "--size", "1m", "--dir", "."];
        a.extend_from_slice(extra);
        iolab(&a, d.path())
    };
    refused(
        &bench(&["--mem", "cuda", "--op", "write"]),
        &["--mem cuda:0", "--op write"],
    );
    refused(
        &bench(&["--mem", "cuda:1", "--vs", "fio"]),
        &["--mem cuda:1 with --vs"],
    );
    refused(
        &bench(&["--mem", "gpu"]),
        &["malloc, thp, hugetlb, or cuda[:N]"],
    );
    if !gpu_here() {
        refused(&bench(&["--mem", "cuda:0"]), &["--mem cuda:0: no NVIDIA"]);
    }
    assert!(listing(d.path()).is_empty(), "{:?}", listing(d.path()));
}

#[test]
fn fio_libcufile_jobs_need_a_gpu_before_anything_is_made_and_cudamalloc_says_why_not() {
    let d = tempfile::tempdir().unwrap();
    let job = "[global]\nioengine=libcufile\ncuda_io=posix\ngpu_dev_ids=0\nbs=1m\nsize=4m\nfilename=data\n[read]\nrw=read\n";
    std::fs::write(d.path().join("gpu.fio"), job).unwrap();
    // Parsing needs no GPU: the job reads with pread and copies into GPU 0.
    let o = iolab(&["fio", "--parse-only", "gpu.fio"], d.path());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = common::stdout(&o);
    assert!(
        out.contains("P>G0") && out.contains("fio's posix mode"),
        "{out}"
    );
    if !gpu_here() {
        let o = iolab(&["fio", "gpu.fio"], d.path());
        refused(
            &o,
            &["gpu.fio:8: job 'read': ioengine=libcufile, GPU 0: no NVIDIA"],
        );
    }
    std::fs::write(d.path().join("w.fio"), job.replace("rw=read", "rw=write")).unwrap();
    let o = iolab(&["fio", "w.fio"], d.path());
    refused(
        &o,
        &["w.fio:9: rw=write", "writes out of GPU memory are not run"],
    );
    std::fs::write(
        d.path().join("m.fio"),
        "[m]\nmem=cudamalloc\nrw=read\nsize=1m\nfilename=data\n",
    )
    .unwrap();
    let o = iolab(&["fio", "m.fio"], d.path());
    refused(&o, &["m.fio:2: mem=cudamalloc", "GPUDirect RDMA"]);
    assert_eq!(listing(d.path()), ["gpu.fio", "m.fio", "w.fio"]);
}

#[test]
fn tune_asked_for_a_gpu_it_cannot_open_stops_before_measuring() {
    if gpu_here() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let o = iolab(
        &[
            "tune", "--quick", "--gpu", "0", "--dir", ".", "--out", "p.json",
        ],
        d.path(),
    );
    refused(&o, &["tune --gpu 0: no NVIDIA"]);
    assert!(o.stdout.is_empty());
    assert!(listing(d.path()).is_empty(), "{:?}", listing(d.path()));
}
