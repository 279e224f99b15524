//! `iolab cat --gpu N FILE…`: files (or a safetensors checkpoint) read
//! into the memory of GPU N through the reading library's GPU pipeline,
//! with the rate and where the time went; `--verify` copies what arrived
//! back and compares it with the files.
//!
//! A checkpoint is recognised by its name (a `.safetensors` file, a
//! `*.index.json` index, or a directory holding `model.safetensors` or its
//! index), because that is what a user handing one to `--gpu` wants: its
//! tensors, each header checked, laid out as the loader lays them out.
//! `--as bytes` takes such a file byte for byte instead, and `--as
//! safetensors` loads a checkpoint with any other name; the first output
//! line says which was done.

#[cfg(feature = "cuda")]
mod report;
#[cfg(feature = "cuda")]
mod sources;
#[cfg(feature = "cuda")]
mod verify;

use anyhow::Result;
use iolab_reader::gpu::GpuTechnique;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

/// How `--verify` checks what reached the GPU.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum VerifyWhat {
    /// Windows of 64 KiB at the start, the end and evenly between, of each
    /// file (each shard of a checkpoint).
    Samples,
    /// Every byte.
    All,
}

/// What the files handed to `--gpu` are.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadAs {
    /// By name: a `.safetensors` file, an index JSON or a directory is a
    /// checkpoint, anything else bytes.
    Auto,
    /// The files' bytes, one after another.
    Bytes,
    /// A safetensors checkpoint (one file, an index, or a directory).
    Safetensors,
}

/// The flags `iolab cat` takes for reading into GPU memory.
#[derive(clap::Args, Debug)]
pub struct GpuCatArgs {
    /// Read the files into the memory of GPU N (one allocation, the files
    /// one after another, or a checkpoint's tensors) instead of writing
    /// them out; prints the rate and where the time went.
    #[arg(long, value_name = "N")]
    pub gpu: Option<u32>,
    /// With --gpu: copy what reached the GPU back and compare it with the
    /// files: --verify (64 KiB windows of each file) or --verify=all.
    #[arg(long, value_name = "WHAT", num_args = 0..=1, require_equals = true, default_missing_value = "samples", requires = "gpu")]
    pub verify: Option<VerifyWhat>,
    /// With --gpu: what the files are (auto: a .safetensors file, an index
    /// JSON or a directory is a checkpoint).
    #[arg(
        long = "as",
        value_name = "KIND",
        default_value = "auto",
        requires = "gpu"
    )]
    pub load_as: LoadAs,
    /// With --gpu: how to read (ring, threads or cufile; default: the
    /// policy's choice by what the page cache holds).
    #[arg(long, value_parser = technique, requires = "gpu")]
    pub technique: Option<GpuTechnique>,
    /// With --gpu: reading threads (default: the profile's).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=256), requires = "gpu")]
    pub threads: Option<u32>,
    /// With --gpu: stage through pageable memory instead of page-locked
    /// (slower; for comparison).
    #[arg(long, requires = "gpu")]
    pub pageable: bool,
    /// With --gpu: print one JSON object instead of text.
    #[arg(long, requires = "gpu")]
    pub json: bool,
}

fn technique(s: &str) -> Result<GpuTechnique, String> {
    s.parse()
        .map_err(|e: iolab_reader::gpu::ParseGpuTechniqueError| e.to_string())
}

/// What `iolab cat` hands on besides the GPU flags.
pub struct CatFlags<'a> {
    /// `--block`: bytes per read and copy.
    pub block: Option<u64>,
    /// `--depth`: pieces in flight.
    pub depth: Option<u32>,
    /// `--direct`: auto, on or off.
    pub direct: &'a str,
    /// `--xor` (the bytes would be summed, not kept).
    pub xor: bool,
    /// `-o` (the bytes would go to a file).
    pub output: bool,
}

/// Runs `iolab cat --gpu N`: reads `files` into GPU memory and reports.
pub fn cat(g: &GpuCatArgs, files: &[PathBuf], f: CatFlags<'_>, stop: &AtomicBool) -> Result<i32> {
    let n = g.gpu.unwrap_or(0);
    let clash = [("--xor", f.xor), ("-o", f.output)]
        .into_iter()
        .find(|c| c.1);
    if let Some((flag, _)) = clash {
        return Err(crate::error::usage(format!(
            "cat --gpu {n}: the bytes go to GPU memory; drop {flag}"
        )));
    }
    run(n, g, files, &f, stop)
}

#[cfg(feature = "cuda")]
fn run(
    n: u32,
    g: &GpuCatArgs,
    files: &[PathBuf],
    f: &CatFlags<'_>,
    stop: &AtomicBool,
) -> Result<i32> {
    let what = sources::what(g.load_as, files)?;
    let opts = sources::options(g, f)?;
    let loaded = sources::load(n, &what, &opts)?;
    if stop.load(std::sync::atomic::Ordering::Relaxed) {
        return Err(anyhow::Error::new(iolab::Error::Cancelled));
    }
    let checked = match g.verify {
        Some(how) => Some(verify::check(&loaded, how)?),
        None => None,
    };
    let text = if g.json {
        report::json(&loaded, checked.as_ref())
    } else {
        report::text(&loaded, checked.as_ref())
    };
    crate::export::stdout(&text)?;
    Ok(0)
}

#[cfg(not(feature = "cuda"))]
fn run(n: u32, _: &GpuCatArgs, _: &[PathBuf], _: &CatFlags<'_>, _: &AtomicBool) -> Result<i32> {
    Err(crate::error::usage(format!(
        "cat --gpu {n}: this iolab was built without the cuda feature (build it with --features cuda)"
    )))
}
