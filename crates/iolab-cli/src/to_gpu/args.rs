//! The flags `iolab cat` takes for reading into GPU memory, and what it
//! hands on besides.

use iolab_reader::gpu::GpuTechnique;

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
    /// With --gpu: staging buffers per reading thread of a cached file
    /// (default: the profile's); fewer keep less memory in flight.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=64), requires = "gpu")]
    pub slots: Option<u32>,
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
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
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
