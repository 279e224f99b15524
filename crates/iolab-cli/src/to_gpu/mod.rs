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

mod args;
#[cfg(feature = "cuda")]
mod report;
#[cfg(feature = "cuda")]
mod sources;
#[cfg(feature = "cuda")]
mod verify;

pub use args::{CatFlags, GpuCatArgs};

use anyhow::Result;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

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
