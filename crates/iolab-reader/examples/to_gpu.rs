//! Loads a file, or a safetensors checkpoint, into GPU memory and says how
//! fast and where the time went; `--verify` copies every byte back and
//! compares it with the file.
//!
//! ```text
//! cargo run --release -p iolab-reader --features cuda --example to_gpu -- \
//!     [--gpu N] [--technique ring|threads|cufile] [--chunk BYTES] [--depth N]
//!     [--threads N] [--pageable] [--buffered] [--repeat N] [--verify] PATH
//! ```
//!
//! PATH is a file, or a checkpoint: a `.safetensors` file, a
//! `model.safetensors.index.json`, or a directory holding either.

use iolab_reader::gpu::{self, DeviceBuffer, GpuOptions, Stats};
use iolab_reader::safetensors;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// What the command line asked for.
struct Args {
    gpu: usize,
    opts: GpuOptions,
    repeat: usize,
    verify: bool,
    path: PathBuf,
}

fn usage() -> String {
    "usage: to_gpu [--gpu N] [--technique ring|threads|cufile] [--chunk BYTES] [--depth N] \
     [--threads N] [--pageable] [--buffered] [--repeat N] [--verify] PATH"
        .into()
}

fn number(flag: &str, v: Option<String>) -> Result<usize, String> {
    let v = v.ok_or_else(|| format!("{flag} needs a number"))?;
    v.parse()
        .map_err(|_| format!("{flag} {v:?}: expected a whole number"))
}

fn parse(mut it: impl Iterator<Item = String>) -> Result<Args, String> {
    let profile = iolab_reader::profile::process_profile();
    let mut a = Args {
        gpu: 0,
        opts: GpuOptions::from_profile(&profile),
        repeat: 1,
        verify: false,
        path: PathBuf::new(),
    };
    while let Some(f) = it.next() {
        match f.as_str() {
            "--gpu" => a.gpu = number(&f, it.next())?,
            "--technique" => {
                let t = it
                    .next()
                    .ok_or("--technique needs ring, threads or cufile")?;
                a.opts.technique = Some(t.parse().map_err(|e| format!("--technique: {e}"))?);
            }
            "--chunk" => a.opts.chunk = number(&f, it.next())?,
            "--depth" => a.opts.depth = number(&f, it.next())? as u32,
            "--threads" => a.opts.threads = number(&f, it.next())?,
            "--pageable" => a.opts.pinned = false,
            "--buffered" => a.opts.direct = false,
            "--repeat" => a.repeat = number(&f, it.next())?.max(1),
            "--verify" => a.verify = true,
            "-h" | "--help" => return Err(usage()),
            p if !p.starts_with('-') && a.path.as_os_str().is_empty() => a.path = p.into(),
            other => return Err(format!("unknown argument {other:?}; {}", usage())),
        }
    }
    if a.path.as_os_str().is_empty() {
        return Err(usage());
    }
    Ok(a)
}

/// Whether PATH names a checkpoint rather than a plain file.
fn is_checkpoint(p: &Path) -> bool {
    p.is_dir()
        || p.extension()
            .is_some_and(|e| e == "safetensors" || e == "json")
}

fn report(st: &Stats) {
    let ms = |ns: u64| ns as f64 / 1e6;
    println!(
        "{} bytes in {:.1} ms: {:.2} GB/s by {} (direct {}, pinned {}, chunk {}, depth {}, threads {})",
        st.bytes,
        ms(st.elapsed_ns),
        st.gb_per_s(),
        st.technique,
        st.direct,
        st.pinned,
        st.chunk,
        st.depth,
        st.threads
    );
    println!(
        "  thread time: setup {:.1} ms, read {:.1} ms, copy {:.1} ms, waiting {:.1} ms",
        ms(st.setup_ns),
        ms(st.read_ns),
        ms(st.copy_ns),
        ms(st.wait_ns)
    );
}

/// Why a run failed: bad input, no GPU or a refused file (exit status 2),
/// or bytes on the device that differ from the file (1).
enum Fail {
    Input(String),
    Mismatch(String),
}

fn input(e: impl std::fmt::Display) -> Fail {
    Fail::Input(e.to_string())
}

/// The first byte where the device and the host bytes differ, if any.
fn compare(buf: &DeviceBuffer, at: u64, want: &[u8]) -> Result<Option<u64>, Fail> {
    let mut got = vec![0u8; want.len()];
    buf.copy_to_host(at, &mut got).map_err(input)?;
    Ok(got
        .iter()
        .zip(want)
        .position(|(a, b)| a != b)
        .map(|i| at + i as u64))
}

fn run_file(a: &Args) -> Result<(), Fail> {
    for _ in 0..a.repeat {
        let (buf, st) = gpu::load_file(&a.path, a.gpu, &a.opts).map_err(input)?;
        report(&st);
        if a.verify {
            let want = iolab_reader::read_all(&a.path).map_err(input)?;
            match compare(&buf, 0, &want)? {
                None => println!("  verified: all {} bytes equal the file", want.len()),
                Some(i) => {
                    return Err(Fail::Mismatch(format!(
                        "verify failed: device byte {i} differs from the file"
                    )))
                }
            }
        }
    }
    Ok(())
}

fn run_checkpoint(a: &Args) -> Result<(), Fail> {
    for _ in 0..a.repeat {
        let ck = safetensors::load_to_device(&a.path, a.gpu, &a.opts).map_err(input)?;
        println!(
            "{} tensors in one allocation at {:#x}",
            ck.tensors.len(),
            ck.buffer.device_ptr()
        );
        report(&ck.stats);
        if a.verify {
            let host = safetensors::load(&a.path, &a.opts).map_err(input)?;
            for t in &ck.tensors {
                if let Some(i) = compare(&ck.buffer, t.offset, host.bytes(t))? {
                    return Err(Fail::Mismatch(format!(
                        "verify failed: tensor {:?} differs at device byte {i}",
                        t.name
                    )));
                }
            }
            println!("  verified: every tensor equals the file's bytes");
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let a = match parse(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("to_gpu: {e}");
            return ExitCode::from(2);
        }
    };
    let r = if is_checkpoint(&a.path) {
        run_checkpoint(&a)
    } else {
        run_file(&a)
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(Fail::Input(e)) => {
            eprintln!("to_gpu: {e}");
            ExitCode::from(2)
        }
        Err(Fail::Mismatch(e)) => {
            eprintln!("to_gpu: {e}");
            ExitCode::from(1)
        }
    }
}
