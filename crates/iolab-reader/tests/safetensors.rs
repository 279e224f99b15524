//! The safetensors loader on real files: checkpoints written here in the
//! format (header padded to 8 bytes, as the reference writes it) load with
//! every tensor's name, dtype, shape and bytes, cold and warm, single and
//! sharded; each malformed file is refused with one line naming it and
//! the problem; files from the reference Python package load the same.

use iolab_reader::gpu::{GpuOptions, GpuTechnique};
use iolab_reader::safetensors::{self, Dtype, LoadError};
use std::path::{Path, PathBuf};

/// A directory on a real file system (O_DIRECT and eviction work there).
fn dir() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

/// A tensor to write: name, dtype, shape; its bytes follow from a seed.
struct T(&'static str, Dtype, Vec<u64>);

fn bytes_of(t: &T, seed: u64) -> Vec<u8> {
    let n = t.1.bytes_of(t.2.iter().product()).unwrap();
    (0..n)
        .map(|i| ((i ^ seed).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as u8)
        .collect()
}

/// The header JSON for tensors laid out in order, and the data.
fn encode(ts: &[T], seed: u64, metadata: Option<&str>) -> (String, Vec<u8>) {
    let mut entries = Vec::new();
    if let Some(m) = metadata {
        entries.push(format!("\"__metadata__\":{m}"));
    }
    let mut data = Vec::new();
    for (k, t) in ts.iter().enumerate() {
        let b = bytes_of(t, seed + k as u64);
        entries.push(format!(
            "\"{}\":{{\"dtype\":\"{}\",\"shape\":{:?},\"data_offsets\":[{},{}]}}",
            t.0,
            t.1,
            t.2,
            data.len(),
            data.len() + b.len()
        ));
        data.extend_from_slice(&b);
    }
    (format!("{{{}}}", entries.join(",")), data)
}

/// Writes a file: length, header padded with spaces to 8 bytes, data.
fn write_raw(path: &Path, json: &str, data: &[u8]) {
    let mut h = json.as_bytes().to_vec();
    while !h.len().is_multiple_of(8) {
        h.push(b' ');
    }
    let mut f = (h.len() as u64).to_le_bytes().to_vec();
    f.extend_from_slice(&h);
    f.extend_from_slice(data);
    std::fs::write(path, f).unwrap();
}

fn write(path: &Path, ts: &[T], seed: u64) {
    let (json, data) = encode(ts, seed, Some(r#"{"format":"pt"}"#));
    write_raw(path, &json, &data);
}

fn opts() -> GpuOptions {
    GpuOptions {
        chunk: 256 << 10,
        threads: 3,
        ..GpuOptions::default()
    }
}

/// Checks every tensor against what was written with `seed`: its type,
/// shape and bytes, and its place: the data starts 8-aligned (the header
/// is padded to 8) and keeps the file's spacing, so a tensor the file
/// aligns is aligned in memory.
fn check(ck: &safetensors::HostCheckpoint, ts: &[T], seed: u64) {
    let first = ck.tensor(ts[0].0).unwrap().offset;
    assert_eq!(first % 8, 0, "data misaligned at {first}");
    let mut begin = 0u64;
    for (k, t) in ts.iter().enumerate() {
        let e = ck.tensor(t.0).unwrap_or_else(|| panic!("{} missing", t.0));
        assert_eq!((e.dtype, &e.shape), (t.1, &t.2), "{}", t.0);
        assert!(
            ck.bytes(e) == bytes_of(t, seed + k as u64),
            "{}: bytes differ",
            t.0
        );
        assert_eq!(e.offset - first, begin, "{}: moved", t.0);
        begin += e.len;
    }
}

fn model() -> Vec<T> {
    vec![
        T("embed", Dtype::BF16, vec![1000, 513]),
        T("norm", Dtype::F32, vec![777]),
        T("scalar", Dtype::I64, vec![]),
        T("empty", Dtype::F16, vec![0, 4]),
        T("packed", Dtype::F4, vec![2, 3]),
        T("big", Dtype::F32, vec![3, 300_001]),
        T("mask", Dtype::BOOL, vec![13]),
    ]
}

#[test]
fn a_checkpoint_loads_every_tensor_cold_and_warm() {
    let d = dir();
    let p = d.path().join("model.safetensors");
    let ts = model();
    write(&p, &ts, 1);
    let len = std::fs::metadata(&p).unwrap().len();
    for cold in [true, false] {
        if cold {
            iolab::cache::evict(&p).unwrap();
            let left = iolab::cache::residency(&p, len).unwrap().fraction();
            iolab::require!(left < 0.5, "the page cache kept {p:?} after eviction");
        } else {
            iolab::cache::warm(&p, len).unwrap();
        }
        let ck = safetensors::load(&p, &opts()).unwrap();
        assert_eq!(ck.tensors.len(), ts.len());
        assert_eq!(ck.metadata["format"], "pt");
        check(&ck, &ts, 1);
        let (tech, direct) = if cold {
            (GpuTechnique::Ring, direct_works(&p))
        } else {
            (GpuTechnique::Threads, false)
        };
        assert_eq!(
            (ck.stats.technique, ck.stats.direct),
            (tech, direct),
            "cold {cold}"
        );
        assert_eq!(ck.buffer.as_ptr() as usize % safetensors::HOST_ALIGN, 0);
        // The tensors lie in data order, back to back as in the file.
        let names: Vec<&str> = ck.tensors.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(
            names,
            ["embed", "norm", "scalar", "empty", "packed", "big", "mask"]
        );
    }
}

#[test]
fn a_checkpoint_without_tensors_loads_empty() {
    let d = dir();
    let p = d.path().join("none.safetensors");
    write_raw(&p, r#"{"__metadata__":{"a":"b"}}"#, b"");
    let ck = safetensors::load(&p, &opts()).unwrap();
    assert!(ck.tensors.is_empty() && ck.buffer.is_empty());
    assert_eq!(ck.metadata["a"], "b");
}

/// Writes `body` as a file and returns the loader's error for it.
fn refused(d: &Path, name: &str, body: &[u8]) -> String {
    let p = d.join(name);
    std::fs::write(&p, body).unwrap();
    let e = safetensors::load(&p, &opts()).unwrap_err();
    assert!(matches!(e, LoadError::Format(_)), "{name}: {e:?}");
    let s = e.to_string();
    assert!(
        s.starts_with(&*p.to_string_lossy()) && !s.contains('\n'),
        "{s}"
    );
    s
}

fn file_bytes(json: &str, data: &[u8]) -> Vec<u8> {
    let mut f = (json.len() as u64).to_le_bytes().to_vec();
    f.extend_from_slice(json.as_bytes());
    f.extend_from_slice(data);
    f
}

#[test]
// Long on purpose: a table of malformed files and the reason each must give.
fn each_malformed_file_is_refused_with_one_line_naming_the_problem() {
    let d = dir();
    let d = d.path();
    let good = r#"{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}"#;
    let full = file_bytes(good, &[0u8; 16]);
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("short", vec![1, 2, 3], "the file has 3 bytes"),
        ("empty", vec![], "the file has 0 bytes"),
        (
            "beyond",
            {
                let mut f = full.clone();
                f[..8].copy_from_slice(&1000u64.to_le_bytes());
                f
            },
            "header length of 1000 bytes passes the end of the file",
        ),
        (
            "absurd",
            u64::MAX.to_le_bytes().to_vec(),
            "more than the 100000000 a safetensors header may have",
        ),
        (
            "truncated",
            full[..full.len() - 5].to_vec(),
            "tensor \"a\" ends at data byte 16, but the file holds only 11 bytes",
        ),
        (
            "json",
            file_bytes("{\"a\":{\"dtype\"", &[]),
            "the header is not valid JSON",
        ),
        (
            "dtype",
            file_bytes(&good.replace("F32", "Q8_0"), &[0u8; 16]),
            "unknown dtype \"Q8_0\"",
        ),
        (
            "size",
            file_bytes(&good.replace("[4]", "[5]"), &[0u8; 16]),
            "shape [5] of F32 is 20 bytes, but its data_offsets hold 16",
        ),
        (
            "overlap",
            file_bytes(
                r#"{"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]},"b":{"dtype":"U8","shape":[8],"data_offsets":[4,12]}}"#,
                &[0u8; 12],
            ),
            "tensors \"a\" (data bytes 0..8) and \"b\" (data bytes 4..12) overlap",
        ),
    ];
    for (name, body, msg) in cases {
        let e = refused(d, name, &body);
        assert!(e.contains(msg), "{name}: {e}");
    }
    let e = safetensors::load(&d.join("missing.safetensors"), &opts())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("missing.safetensors") && e.contains("No such file"),
        "{e}"
    );
}

/// Three shards and their index in `d`; returns the tensors of each.
fn sharded(d: &Path) -> Vec<Vec<T>> {
    let shards = vec![
        vec![
            T("l0.w", Dtype::BF16, vec![700, 300]),
            T("l0.b", Dtype::F32, vec![300]),
        ],
        vec![T("l1.w", Dtype::F16, vec![1234, 77])],
        vec![
            T("l2.w", Dtype::I8, vec![5, 5]),
            T("l2.s", Dtype::F8_E4M3, vec![3]),
        ],
    ];
    let mut map = Vec::new();
    for (i, ts) in shards.iter().enumerate() {
        let name = format!("model-{:05}-of-00003.safetensors", i + 1);
        write(&d.join(&name), ts, 10 * i as u64);
        for t in ts {
            map.push(format!("\"{}\":\"{name}\"", t.0));
        }
    }
    let index = format!(
        "{{\"metadata\":{{\"total_size\":1}},\"weight_map\":{{{}}}}}",
        map.join(",")
    );
    std::fs::write(d.join(safetensors::INDEX_NAME), index).unwrap();
    shards
}

#[test]
fn a_sharded_checkpoint_loads_into_one_allocation_from_its_index_or_directory() {
    let d = dir();
    let shards = sharded(d.path());
    for path in [
        d.path().join(safetensors::INDEX_NAME),
        d.path().to_path_buf(),
    ] {
        for cold in [true, false] {
            for e in std::fs::read_dir(d.path()).unwrap() {
                let p = e.unwrap().path();
                if cold {
                    iolab::cache::evict(&p).unwrap();
                    let len = std::fs::metadata(&p).unwrap().len();
                    let left = iolab::cache::residency(&p, len).unwrap().fraction();
                    iolab::require!(left < 0.5, "the page cache kept {p:?} after eviction");
                } else {
                    iolab::cache::warm(&p, 1 << 30).unwrap();
                }
            }
            let ck = safetensors::load(&path, &opts()).unwrap();
            assert_eq!(ck.tensors.len(), 5);
            for (i, ts) in shards.iter().enumerate() {
                for (k, t) in ts.iter().enumerate() {
                    let e = ck.tensor(t.0).unwrap();
                    assert_eq!(e.shard, i);
                    assert!(
                        ck.bytes(e) == bytes_of(t, 10 * i as u64 + k as u64),
                        "{}",
                        t.0
                    );
                }
            }
            // Cold: the three shards each through their own ring at once.
            let tech = if cold {
                GpuTechnique::Ring
            } else {
                GpuTechnique::Threads
            };
            assert_eq!((ck.stats.technique, ck.stats.threads), (tech, 3));
        }
    }
}

#[test]
fn an_index_that_disagrees_with_its_shards_is_refused() {
    let d = dir();
    sharded(d.path());
    let index = d.path().join(safetensors::INDEX_NAME);
    let text = std::fs::read_to_string(&index).unwrap();
    let bad = |from: &str, to: &str| {
        std::fs::write(&index, text.replace(from, to)).unwrap();
        safetensors::load(&index, &opts()).unwrap_err().to_string()
    };
    let e = bad("\"l1.w\":\"model-00002", "\"l1.w\":\"model-00003");
    assert!(
        e.contains(
            "puts tensor \"l1.w\" in model-00003-of-00003.safetensors, which has no such tensor"
        ),
        "{e}"
    );
    let e = bad("model-00002-of-00003", "model-00009-of-00003");
    assert!(
        e.contains("model-00009-of-00003.safetensors") && e.contains("No such file"),
        "{e}"
    );
    // A tensor of one name in two shards.
    std::fs::write(&index, &text).unwrap();
    write(
        &d.path().join("model-00002-of-00003.safetensors"),
        &[T("l0.b", Dtype::F32, vec![300])],
        0,
    );
    let e = safetensors::load(&index, &opts()).unwrap_err().to_string();
    assert!(e.contains("tensor \"l0.b\" is in both model-00001-of-00003.safetensors and model-00002-of-00003.safetensors"), "{e}");
}

#[test]
fn files_written_by_the_reference_package_load_the_same() {
    let python = iolab::testing::python_with("safetensors.numpy, numpy");
    iolab::require!(
        python.is_some(),
        "no Python with safetensors and numpy (scripts/setup.sh makes .venv-py with them)"
    );
    let python = python.unwrap();
    let d = dir();
    let p: PathBuf = d.path().join("ref.safetensors");
    // The reference writes; it also prints each tensor's dtype, shape and
    // bytes (hex) as it reads them back.
    let script = r#"
import sys, json, numpy as np
from safetensors.numpy import save_file, load_file
rng = np.random.default_rng(7)
t = {
    "w": rng.standard_normal((37, 11)).astype(np.float32),
    "h": rng.standard_normal((5,)).astype(np.float16),
    "i": np.arange(-9, 9, dtype=np.int64).reshape(3, 6),
    "b": np.array([True, False, True]),
    "u": np.arange(255, dtype=np.uint8),
    "d": np.array(3.5, dtype=np.float64),
}
save_file(t, sys.argv[1], metadata={"who": "reference"})
names = {np.float32: "F32", np.float16: "F16", np.int64: "I64", np.bool_: "BOOL", np.uint8: "U8", np.float64: "F64"}
out = {k: [names[v.dtype.type], list(v.shape), v.tobytes().hex()] for k, v in load_file(sys.argv[1]).items()}
print(json.dumps(out))
"#;
    let o = std::process::Command::new(&python)
        .args(["-c", script, p.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let want: std::collections::BTreeMap<String, (String, Vec<u64>, String)> =
        serde_json::from_slice(&o.stdout).unwrap();
    let ck = safetensors::load(&p, &opts()).unwrap();
    assert_eq!(ck.metadata["who"], "reference");
    assert_eq!(ck.tensors.len(), want.len());
    for (name, (dtype, shape, hex)) in &want {
        let e = ck.tensor(name).unwrap();
        assert_eq!(
            (e.dtype.name(), &e.shape),
            (dtype.as_str(), shape),
            "{name}"
        );
        let got: String = ck.bytes(e).iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(&got, hex, "{name}");
    }
}

/// Whether this file system lets `p` be opened with O_DIRECT.
fn direct_works(p: &Path) -> bool {
    let spec = iolab::file::OpenSpec {
        direct: true,
        write: false,
    };
    iolab::file::open(p, spec).is_ok()
}
