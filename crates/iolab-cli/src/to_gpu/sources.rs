//! What `cat --gpu` reads (the files' bytes, or a checkpoint's tensor
//! data), with which settings, and the load itself: the GPU is opened
//! first (the driver's once-per-process start is timed apart), then the
//! clock runs from the headers' check to the last byte in device memory.

use super::args::{CatFlags, GpuCatArgs, LoadAs};
use crate::error::usage;
use anyhow::Result;
use iolab_reader::gpu::{
    self, Device, DeviceBuffer, GpuError, GpuOptions, GpuTechnique, Source, Stats,
};
use iolab_reader::safetensors::{Checkpoint, LoadError};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The files' bytes, or one checkpoint.
#[derive(Clone, Debug)]
pub(super) enum What {
    /// These files, one after another.
    Bytes(Vec<PathBuf>),
    /// The checkpoint at this path (file, index or directory).
    Checkpoint(PathBuf),
}

/// Whether `p` names a checkpoint by its name: a `.safetensors` file, an
/// index JSON, or a directory.
pub(super) fn looks_like_checkpoint(p: &Path) -> bool {
    let name = p
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    p.is_dir() || name.ends_with(".safetensors") || name.ends_with(".safetensors.index.json")
}

/// What the files are, by `--as` and their names: one checkpoint, or
/// files that are all bytes (a mix is refused, as are two checkpoints).
pub(super) fn what(load_as: LoadAs, files: &[PathBuf]) -> Result<What> {
    let ck = |p: &Path| match load_as {
        LoadAs::Auto => looks_like_checkpoint(p),
        LoadAs::Bytes => false,
        LoadAs::Safetensors => true,
    };
    let checkpoints: Vec<&PathBuf> = files.iter().filter(|p| ck(p)).collect();
    match (checkpoints.as_slice(), files.len()) {
        ([], _) => {
            for f in files {
                crate::limits::check_input_file("cat --gpu", f)?;
            }
            Ok(What::Bytes(files.to_vec()))
        }
        ([one], 1) => Ok(What::Checkpoint(one.to_path_buf())),
        _ => Err(usage(format!(
            "cat --gpu: {} is a safetensors checkpoint; load one checkpoint at a time, or give --as bytes to read the files' bytes",
            checkpoints[0].display()
        ))),
    }
}

/// The profile's settings with `cat`'s flags on top.
pub(super) fn options(g: &GpuCatArgs, f: &CatFlags<'_>) -> Result<GpuOptions> {
    let mut o = GpuOptions::from_profile(&iolab_reader::profile::process_profile());
    o.technique = g.technique;
    if let Some(b) = f.block {
        if !(4096..=256 << 20).contains(&b) {
            return Err(usage(format!(
                "cat --gpu: --block {b}: give a size from 4k to 256m"
            )));
        }
        o.chunk = b as usize;
    }
    if let Some(d) = f.depth {
        o.depth = d;
    }
    if let Some(t) = g.threads {
        o.threads = t as usize;
    }
    if let Some(n) = g.slots {
        o.slots = n as usize;
    }
    o.pinned = !g.pageable;
    match f.direct {
        "on" => {
            o.direct = true;
            // Only the ring reads with O_DIRECT.
            o.technique.get_or_insert(GpuTechnique::Ring);
        }
        "off" => o.direct = false,
        _ => {}
    }
    Ok(o)
}

/// What a load did.
pub(super) struct Loaded {
    /// The GPU.
    pub(super) gpu: u32,
    /// Its name.
    pub(super) name: String,
    /// What was asked for (file names, or the checkpoint).
    pub(super) what: What,
    /// Tensors, for a checkpoint.
    pub(super) tensors: Option<usize>,
    /// The byte ranges read, and where each went in `buffer`.
    pub(super) sources: Vec<Source>,
    /// The allocation.
    pub(super) buffer: DeviceBuffer,
    /// The pipeline's counts.
    pub(super) stats: Stats,
    /// The driver's start and the GPU's context (not part of the load).
    pub(super) init: Duration,
    /// From the check of the headers (or files) to the last byte in place.
    pub(super) wall: Duration,
}

/// Checks what to read (the files, or the checkpoint's headers), opens GPU
/// `n`, then reads it into one new allocation there. The driver's start
/// is timed apart; the checks and the load make the wall time.
pub(super) fn load(n: u32, what: &What, opts: &GpuOptions) -> Result<Loaded> {
    let t0 = Instant::now();
    let (sources, tensors) = match what {
        What::Bytes(files) => (whole_files(files)?, None),
        What::Checkpoint(p) => {
            let ck = Checkpoint::open(p).map_err(|e| checkpoint_error(p, e))?;
            (ck.sources(), Some(ck.tensors.len()))
        }
    };
    let checks = t0.elapsed();
    let t = Instant::now();
    let dev = Device::open(n as usize).map_err(|e| usage(format!("cat --gpu {n}: {e}")))?;
    let name = dev.name().unwrap_or_else(|_| "unknown".into());
    let init = t.elapsed();
    let t1 = Instant::now();
    let (buffer, stats) =
        gpu::load_sources(&sources, n as usize, opts).map_err(|e| gpu_error(n, e))?;
    let wall = checks + t1.elapsed();
    drop(dev);
    Ok(Loaded {
        gpu: n,
        name,
        what: what.clone(),
        tensors,
        sources,
        buffer,
        stats,
        init,
        wall,
    })
}

/// Each file whole, one after another in the allocation.
fn whole_files(files: &[PathBuf]) -> Result<Vec<Source>> {
    let mut at = 0u64;
    let mut v = Vec::with_capacity(files.len());
    for f in files {
        let s = Source::whole(f, at).map_err(|e| usage(format!("cat --gpu: {e}")))?;
        at += s.ranges.iter().map(|r| r.len).sum::<u64>();
        v.push(s);
    }
    Ok(v)
}

/// A malformed or unreadable checkpoint is bad input (exit 2).
fn checkpoint_error(p: &Path, e: LoadError) -> anyhow::Error {
    match e {
        LoadError::Format(_) | LoadError::TooLarge { .. } => usage(format!("cat --gpu: {e}")),
        LoadError::Read(iolab_reader::ReadError::Open { .. }) => usage(format!("cat --gpu: {e}")),
        other => anyhow::Error::new(other).context(format!("cat --gpu {}", p.display())),
    }
}

/// What the GPU or the files refused before anything was read is bad
/// input (exit 2); a failure while moving bytes is a failed run (1).
fn gpu_error(n: u32, e: GpuError) -> anyhow::Error {
    match e {
        GpuError::Driver { .. }
        | GpuError::CuFile { .. }
        | GpuError::ShortFile { .. }
        | GpuError::OutOfBounds { .. }
        | GpuError::Read(iolab_reader::ReadError::Io { .. })
        | GpuError::Read(iolab_reader::ReadError::UnexpectedEof { .. }) => {
            anyhow::Error::new(e).context(format!("cat --gpu {n}"))
        }
        other => usage(format!("cat --gpu {n}: {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkpoints_are_known_by_name_and_never_mixed_with_bytes() {
        let d = tempfile::tempdir().unwrap();
        let st = d.path().join("m.safetensors");
        let idx = d.path().join("model.safetensors.index.json");
        let raw = d.path().join("data.bin");
        for p in [&st, &idx, &raw] {
            std::fs::write(p, b"x").unwrap();
        }
        assert!(looks_like_checkpoint(&st) && looks_like_checkpoint(&idx));
        assert!(looks_like_checkpoint(d.path()) && !looks_like_checkpoint(&raw));
        let one = |a: LoadAs, f: &[PathBuf]| what(a, f).map(|w| matches!(w, What::Checkpoint(_)));
        assert!(one(LoadAs::Auto, std::slice::from_ref(&st)).unwrap());
        assert!(!one(LoadAs::Bytes, std::slice::from_ref(&st)).unwrap());
        assert!(one(LoadAs::Safetensors, std::slice::from_ref(&raw)).unwrap());
        assert!(!one(LoadAs::Auto, &[raw.clone(), raw.clone()]).unwrap());
        let e = one(LoadAs::Auto, &[raw.clone(), st.clone()]).unwrap_err();
        let e = crate::error::one_line(&e);
        assert!(
            e.contains("m.safetensors is a safetensors checkpoint") && e.contains("--as bytes"),
            "{e}"
        );
        assert_eq!(
            crate::error::exit_code(
                &what(LoadAs::Bytes, &[d.path().to_path_buf()])
                    .err()
                    .unwrap()
            ),
            2
        );
    }
}
