//! The GPU check's scripts, as far as a machine without a GPU can run
//! them: each refuses in one line naming what is missing (exit status 2),
//! and the comparison's own logic (the checkpoint it writes, eviction
//! checked with mincore, alternating rounds, medians, the table, the raw
//! numbers under OUT) runs end to end with host-memory stand-ins
//! (`scripts/vs_gpu.py --dry`).

mod common;

use common::{stderr, stdout};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn script(name: &str, carry: &Path) -> Output {
    Command::new("bash")
        .arg(root().join("scripts").join(name))
        .env("GPU_CARRY", carry)
        .env("GPU_TESTS_NO_BUILD", "1")
        .env_remove("OUT")
        .output()
        .unwrap()
}

#[test]
fn without_a_gpu_every_gpu_script_says_so_in_one_line() {
    if Path::new("/dev/nvidia0").exists() {
        return;
    }
    let carry = tempfile::tempdir().unwrap();
    // Nothing carried: named first, with what builds it.
    for name in ["gpu-check.sh", "gpu-tests.sh", "vs-gpu.sh"] {
        let o = script(name, carry.path());
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{name}: {e}");
        assert_eq!(e.trim_end().lines().count(), 1, "{name}: {e}");
        assert!(e.contains("scripts/gpu-carry.sh"), "{name}: {e}");
    }
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_iolab"), carry.path().join("iolab")).unwrap();
    std::os::unix::fs::symlink("/bin/true", carry.path().join("gpu-tests")).unwrap();
    for name in ["gpu-check.sh", "gpu-tests.sh", "vs-gpu.sh"] {
        let o = script(name, carry.path());
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{name}: {e}");
        assert_eq!(e.trim_end().lines().count(), 1, "{name}: {e}");
        assert!(e.contains("no NVIDIA GPU here"), "{name}: {e}");
    }
}

#[test]
fn the_gpu_parts_refuse_a_missing_binary_in_one_line() {
    for name in ["gpu-refusals.sh", "gpu-commands.sh"] {
        let o = Command::new("bash")
            .arg(root().join("scripts").join(name))
            .args(["/nonexistent/iolab", "/tmp"])
            .output()
            .unwrap();
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{name}: {e}");
        assert_eq!(e.trim_end().lines().count(), 1, "{name}: {e}");
        assert!(
            e.starts_with(&format!("usage: scripts/{name} IOLAB DIR")),
            "{name}: {e}"
        );
    }
}

#[test]
fn the_comparison_alternates_rounds_and_keeps_its_numbers_with_host_stand_ins() {
    let python = iolab::testing::python_with("safetensors.numpy, numpy");
    iolab::require!(
        python.is_some(),
        "a Python with safetensors and numpy (scripts/setup.sh makes .venv-py with them)"
    );
    let d = tempfile::tempdir().unwrap();
    let data = d.path().join("data");
    let out = d.path().join("out");
    let o: Output = Command::new(python.unwrap())
        .arg(root().join("scripts/vs_gpu.py"))
        .args([
            "--dry",
            "--size",
            "24m",
            "--tensors",
            "4",
            "--rounds",
            "3",
            "--iolab",
        ])
        .arg(env!("CARGO_BIN_EXE_iolab"))
        .arg("--dir")
        .arg(&data)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let text = stdout(&o);
    assert!(o.status.success(), "{text}\n{}", stderr(&o));
    assert!(text.contains("of 3 alternating rounds"), "{text}");
    // The table says how it was made, and when.
    assert!(
        text.starts_with("command: python3 scripts/vs_gpu.py --dry"),
        "{text}"
    );
    assert!(
        text.lines()
            .nth(1)
            .is_some_and(|l| l.starts_with("date: 20")),
        "{text}"
    );
    for row in [
        "safetensors.numpy.load_file",
        "python read()",
        "limit: iolab cat FILE > /dev/null",
    ] {
        let line = text
            .lines()
            .find(|l| l.starts_with(row))
            .unwrap_or_else(|| panic!("{row}: {text}"));
        // A median and its range for warm (and cold, unless refused).
        assert!(line.matches('[').count() >= 1, "{line}");
    }
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("vs-gpu.json")).unwrap()).unwrap();
    for k in ["safetensors-cpu", "naive-cpu", "cat"] {
        let warm = v["gb_per_s"][k]["warm"].as_array().unwrap();
        assert_eq!(warm.len(), 3, "{k}: {warm:?}");
        assert!(
            warm.iter().all(|x| x.as_f64().is_some_and(|g| g > 0.0)),
            "{k}: {warm:?}"
        );
        let cold = v["gb_per_s"][k]["cold"].as_array().unwrap();
        assert!(cold.len() == 3 || !v["cold_refused"].is_null(), "{k}: {v}");
    }
    assert_eq!(
        std::fs::read_to_string(out.join("vs-gpu.txt")).unwrap(),
        text
    );
    // The checkpoints it wrote are gone.
    assert_eq!(std::fs::read_dir(&data).unwrap().count(), 0);
}
