//! `iolab xor FILE`: the XOR of a file's 4-byte little-endian words, read the
//! fastest way iolab knows (O_DIRECT io_uring when cold, buffered when warm).

use anyhow::{Context, Result};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

/// Arguments of `iolab xor`.
#[derive(clap::Args, Debug)]
pub struct XorArgs {
    /// The file (or block device) to read.
    pub file: PathBuf,
    /// Say on stderr how long the read took and how it was done.
    #[arg(short, long)]
    pub verbose: bool,
}

/// Refuses, without opening it (opening a FIFO blocks), anything but a
/// regular file on storage or a block device.
pub fn check(a: &XorArgs) -> Result<()> {
    let f = &a.file;
    if std::fs::metadata(f).is_err() {
        return Err(super::usage(format!("xor: {}: no such file", f.display())));
    }
    iolab_bench::prepare::check_file_kind(f, false)
        .map_err(|e| super::usage(e.to_string().replacen("--file ", "xor: ", 1)))
}

/// Prints the XOR on stdout (`0x` and 8 hex digits), and with -v how it
/// was read on stderr.
pub fn run(a: &XorArgs, _stop: &AtomicBool) -> Result<i32> {
    check(a)?;
    let t = Instant::now();
    let (x, st) = iolab_reader::xor::xor_file(&a.file)
        .with_context(|| format!("xor {}", a.file.display()))?;
    let secs = t.elapsed().as_secs_f64();
    crate::export::stdout(&format!("{x:#010x}\n"))?;
    if !a.verbose {
        return Ok(0);
    }
    eprintln!(
        "read {} in {:.2} s ({:.0} MiB/s) with {}{}",
        iolab_bench::prepare::human(st.bytes),
        secs,
        st.bytes as f64 / secs.max(1e-9) / (1 << 20) as f64,
        st.engine,
        if st.direct { " O_DIRECT" } else { " buffered" }
    );
    Ok(0)
}
