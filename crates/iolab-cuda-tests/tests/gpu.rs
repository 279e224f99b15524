//! Files into GPU memory. On any machine: without a usable GPU every entry
//! point says why in one line, and files, ranges and checkpoints are
//! checked before the GPU is looked for. On a GPU machine (the ignored
//! tests, run by scripts/gpu-tests.sh): every byte that reaches device
//! memory equals the file, for every technique, cold and warm, pinned and
//! pageable; checkpoints land tensor for tensor; out-of-memory and a GPU
//! number out of range are one line, and nothing stays allocated.

use iolab::testing::{bytes, file};
use iolab_reader::gpu::{self, DeviceBuffer, GpuError, GpuOptions, GpuTechnique, Range};
use iolab_reader::safetensors::{self, LoadError};
use std::path::Path;

/// A directory for test files: `$TMPDIR` (scripts/gpu-tests.sh points it
/// at a disk, where O_DIRECT and eviction work).
fn dir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

/// A small safetensors file: one BF16 tensor of `n` elements and a U8 one.
fn checkpoint(p: &Path, n: usize) -> Vec<u8> {
    let body = bytes(2 * n + 3, 99);
    let json = format!(
        r#"{{"w":{{"dtype":"BF16","shape":[{n}],"data_offsets":[0,{}]}},"m":{{"dtype":"U8","shape":[3],"data_offsets":[{},{}]}}}}"#,
        2 * n,
        2 * n,
        2 * n + 3
    );
    let mut f = (json.len() as u64).to_le_bytes().to_vec();
    f.extend_from_slice(json.as_bytes());
    f.extend_from_slice(&body);
    std::fs::write(p, &f).unwrap();
    body
}

/// One line, and it says what is missing.
fn says_why(e: &str) {
    assert!(!e.contains('\n'), "{e}");
    assert!(
        e.starts_with("no NVIDIA driver:")
            || e.starts_with("no NVIDIA GPU:")
            || e.starts_with("GPU "),
        "{e}"
    );
}

#[test]
fn without_a_usable_gpu_every_entry_point_says_why_in_one_line() {
    let d = dir();
    let (p, _) = file(d.path(), "f", 10_000, 1);
    let st = d.path().join("m.safetensors");
    checkpoint(&st, 100);
    let opts = GpuOptions::default();
    // On a GPU machine, the number one past the last GPU is the bad one.
    let bad = match gpu::device_count() {
        Err(e) => {
            let e = e.to_string();
            says_why(&e);
            0
        }
        Ok(n) => n,
    };
    let e = gpu::Device::open(bad).unwrap_err().to_string();
    says_why(&e);
    if bad > 0 {
        assert!(e.contains(&format!("GPU {bad} does not exist")), "{e}");
    }
    let e = gpu::load_file(&p, bad, &opts).unwrap_err().to_string();
    says_why(&e);
    let e = safetensors::load_to_device(&st, bad, &opts).unwrap_err();
    assert!(matches!(e, LoadError::Gpu(_)), "{e:?}");
    says_why(&e.to_string());
}

#[test]
fn files_ranges_and_checkpoints_are_checked_before_the_gpu_is_looked_for() {
    let d = dir();
    let (p, _) = file(d.path(), "f", 10_000, 1);
    let opts = GpuOptions::default();
    let e = gpu::load_file(&d.path().join("missing"), 0, &opts)
        .unwrap_err()
        .to_string();
    assert!(e.contains("missing") && e.contains("No such file"), "{e}");
    let r = [Range {
        offset: 9_000,
        len: 2_000,
        at: 0,
    }];
    let e = gpu::load_ranges(&p, &r, 0, &opts).unwrap_err();
    assert!(matches!(e, GpuError::BadRange { .. }), "{e:?}");
    let bad = d.path().join("bad.safetensors");
    std::fs::write(&bad, b"\x04\0\0\0\0\0\0\0{\"a\"").unwrap();
    let e = safetensors::load_to_device(&bad, 0, &opts).unwrap_err();
    assert!(matches!(e, LoadError::Format(_)), "{e:?}");
    assert!(e.to_string().contains("not valid JSON"), "{e}");
}

/// Free device memory on GPU 0, bytes.
fn free_memory() -> u64 {
    gpu::Device::open(0).unwrap().memory().unwrap().0
}

/// Asserts `buf` holds exactly `want`, copying all of it back.
fn same(buf: &DeviceBuffer, want: &[u8], what: &str) {
    assert_eq!(buf.len(), want.len() as u64, "{what}: length");
    let got = buf.to_vec().unwrap();
    if let Some(i) = got.iter().zip(want).position(|(a, b)| a != b) {
        panic!(
            "{what}: device byte {i} is {:#04x}, the file has {:#04x}",
            got[i], want[i]
        );
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU: run scripts/gpu-tests.sh on a GPU machine"]
fn every_byte_reaches_the_gpu_with_every_technique_cold_and_warm() {
    let d = dir();
    let before = free_memory();
    let sizes = [0, 1, 4097, (3 << 20) + 123, (64 << 20) + 5];
    for (k, &n) in sizes.iter().enumerate() {
        let (p, v) = file(d.path(), &format!("f{k}"), n, k as u64);
        for t in [None, Some(GpuTechnique::Ring), Some(GpuTechnique::Threads)] {
            for pinned in [true, false] {
                for cold in [true, false] {
                    if cold {
                        iolab::cache::evict(&p).unwrap();
                    } else {
                        iolab::cache::warm(&p, n as u64).unwrap();
                    }
                    let opts = GpuOptions {
                        technique: t,
                        chunk: 1 << 20,
                        pinned,
                        ..GpuOptions::default()
                    };
                    let what = format!("{n} bytes, {t:?}, pinned {pinned}, cold {cold}");
                    let (buf, st) =
                        gpu::load_file(&p, 0, &opts).unwrap_or_else(|e| panic!("{what}: {e}"));
                    assert_eq!(st.bytes, n as u64, "{what}");
                    same(&buf, &v, &what);
                }
            }
        }
    }
    // Every allocation, staging buffer, stream and event is gone.
    let after = free_memory();
    assert!(
        after + (64 << 20) >= before,
        "{before} bytes free before, {after} after"
    );
}

#[test]
#[ignore = "needs an NVIDIA GPU: run scripts/gpu-tests.sh on a GPU machine"]
fn byte_ranges_of_several_files_land_where_asked_on_the_gpu() {
    let d = dir();
    let (a, va) = file(d.path(), "a", (5 << 20) + 3, 1);
    let (b, vb) = file(d.path(), "b", 777_777, 2);
    let ra = vec![
        Range {
            offset: 1,
            len: 3 << 20,
            at: 100,
        },
        Range {
            offset: 4 << 20,
            len: 5,
            at: 0,
        },
    ];
    let rb = vec![Range {
        offset: 77,
        len: 700_000,
        at: (3 << 20) + 100,
    }];
    let cap = (3 << 20) + 100 + 700_000;
    let mut want = vec![0u8; cap];
    for (rs, v) in [(&ra, &va), (&rb, &vb)] {
        for r in rs {
            let (o, l, at) = (r.offset as usize, r.len as usize, r.at as usize);
            want[at..at + l].copy_from_slice(&v[o..o + l]);
        }
    }
    let sources = vec![
        gpu::Source {
            path: a,
            ranges: ra,
        },
        gpu::Source {
            path: b,
            ranges: rb,
        },
    ];
    for t in [GpuTechnique::Ring, GpuTechnique::Threads] {
        let opts = GpuOptions::default().technique(t);
        let (buf, st) = gpu::load_sources(&sources, 0, &opts).unwrap();
        assert_eq!(st.bytes, (3 << 20) + 5 + 700_000);
        // The gaps were never written: compare only the ranges.
        let got = buf.to_vec().unwrap();
        for (at, l) in [(100, 3 << 20), (0, 5), ((3 << 20) + 100, 700_000)] {
            assert!(
                got[at..at + l] == want[at..at + l],
                "{t}: range at {at} differs"
            );
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU: run scripts/gpu-tests.sh on a GPU machine"]
fn a_checkpoint_reaches_the_gpu_tensor_for_tensor() {
    let d = dir();
    let p = d.path().join("m.safetensors");
    checkpoint(&p, 3_000_001);
    for cold in [true, false] {
        if cold {
            iolab::cache::evict(&p).unwrap();
        }
        let host = safetensors::load(&p, &GpuOptions::default()).unwrap();
        let dev = safetensors::load_to_device(&p, 0, &GpuOptions::default()).unwrap();
        assert_eq!(host.tensors, dev.tensors);
        for t in &dev.tensors {
            let mut got = vec![0u8; t.len as usize];
            dev.buffer.copy_to_host(t.offset, &mut got).unwrap();
            assert!(got == host.bytes(t), "{}: bytes differ", t.name);
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU: run scripts/gpu-tests.sh on a GPU machine"]
fn out_of_memory_is_one_line_and_leaves_nothing_allocated() {
    let dev = gpu::Device::open(0).unwrap();
    let (free, total) = dev.memory().unwrap();
    let e = DeviceBuffer::alloc(&dev, total + (1 << 30)).unwrap_err();
    let s = e.to_string();
    assert!(
        matches!(e, GpuError::OutOfMemory { device: 0, .. }),
        "{e:?}"
    );
    assert!(
        s.starts_with("out of memory on GPU 0") && !s.contains('\n'),
        "{s}"
    );
    let after = dev.memory().unwrap().0;
    assert!(
        after + (64 << 20) >= free,
        "{free} free before, {after} after"
    );
    let small = DeviceBuffer::alloc(&dev, 1 << 20).unwrap();
    assert_eq!(small.len(), 1 << 20);
    // A file larger than the GPU: refused before anything is read.
    let d = dir();
    let p = d.path().join("sparse");
    std::fs::File::create(&p)
        .unwrap()
        .set_len(total + (1 << 30))
        .unwrap();
    let e = gpu::load_file(&p, 0, &GpuOptions::default()).unwrap_err();
    assert!(matches!(e, GpuError::OutOfMemory { .. }), "{e:?}");
}

#[test]
#[ignore = "needs an NVIDIA GPU: run scripts/gpu-tests.sh on a GPU machine"]
fn cufile_delivers_the_same_bytes_where_its_library_is_installed() {
    iolab::require!(
        gpu::cuda::cufile::available(),
        "libcufile.so.0 is not installed"
    );
    let d = dir();
    // Without the nvidia-fs module cuFile runs only in its compatibility
    // mode (POSIX reads into host memory, then a copy), which its
    // configuration must allow: registering a file handle fails otherwise
    // (CU_FILE_HANDLE_NOT_REGISTERED). This test process allows it, as a
    // deployment without GPUDirect Storage would.
    if !std::path::Path::new("/proc/driver/nvidia-fs").exists()
        && std::env::var_os("CUFILE_ENV_PATH_JSON").is_none()
    {
        let cfg = d.path().join("cufile.json");
        std::fs::write(&cfg, r#"{"properties": {"allow_compat_mode": true}}"#).unwrap();
        std::env::set_var("CUFILE_ENV_PATH_JSON", &cfg);
    }
    let (p, v) = file(d.path(), "f", (9 << 20) + 11, 3);
    iolab::cache::evict(&p).unwrap();
    let opts = GpuOptions::default().technique(GpuTechnique::CuFile);
    match gpu::load_file(&p, 0, &opts) {
        Ok((buf, st)) => {
            assert_eq!(st.technique, GpuTechnique::CuFile);
            same(&buf, &v, "cufile");
        }
        // cuFile refuses every file whose device udev has no record of
        // (a container without udev): allowed only there, and then the
        // error must say so.
        Err(e) => {
            let f = std::fs::File::open(&p).unwrap();
            let entry = gpu::cuda::cufile::missing_udev_entry(&f)
                .unwrap_or_else(|| panic!("cuFile failed although udev knows the device: {e}"));
            let msg = e.to_string();
            assert!(
                msg.contains(&entry) && msg.contains("--technique ring"),
                "{msg}"
            );
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU: run scripts/gpu-tests.sh on a GPU machine"]
fn copies_from_pinned_and_pageable_memory_round_trip() {
    let dev = gpu::Device::open(0).unwrap();
    let buf = DeviceBuffer::alloc(&dev, 8 << 20).unwrap();
    let mut pinned = gpu::PinnedBuf::new(&dev, 8 << 20).unwrap();
    assert!(pinned.is_pinned(), "the driver refused to page-lock 8 MiB");
    let v = bytes(8 << 20, 4);
    pinned.as_mut_slice()[..8 << 20].copy_from_slice(&v);
    buf.copy_from_host(0, &pinned.as_mut_slice()[..8 << 20])
        .unwrap();
    same(&buf, &v, "pinned");
    let w = bytes(1000, 5);
    buf.copy_from_host(12_345, &w).unwrap();
    let mut back = vec![0u8; 1000];
    buf.copy_from_host(0, &[]).unwrap();
    buf.copy_to_host(12_345, &mut back).unwrap();
    assert_eq!(back, w, "pageable");
    let e = buf.copy_from_host((8 << 20) - 1, &[1, 2]).unwrap_err();
    assert!(matches!(e, GpuError::OutOfBounds { .. }), "{e:?}");
}

#[test]
#[ignore = "needs an NVIDIA GPU: run scripts/gpu-tests.sh on a GPU machine"]
fn page_locked_staging_is_kept_between_loads_within_its_bound_and_freed_on_request() {
    let d = dir();
    gpu::free_staging();
    let opts = GpuOptions {
        technique: Some(GpuTechnique::Threads),
        ..GpuOptions::default()
    };
    let (a, va) = file(d.path(), "a", (20 << 20) + 11, 1);
    let (b, vb) = file(d.path(), "b", (9 << 20) + 7, 2);
    let (buf, st) = gpu::load_file(&a, 0, &opts).unwrap();
    same(&buf, &va, "first load");
    let kept = gpu::staging_kept();
    assert!(
        st.pinned && kept > 0 && kept <= gpu::STAGING_KEEP,
        "{kept} bytes kept"
    );
    // The second load's lanes take the first's staging, which still holds
    // the first file's bytes: only the second file's may arrive.
    let (buf, _) = gpu::load_file(&b, 0, &opts).unwrap();
    same(&buf, &vb, "second load, on kept staging");
    assert_eq!(gpu::staging_kept(), kept, "the lanes' memory came back");
    assert_eq!(gpu::free_staging(), kept);
    assert_eq!(gpu::staging_kept(), 0);
}
