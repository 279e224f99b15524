//! `iolab run FILE -r|-w BLOCK_SIZE BLOCK_COUNT` and `iolab run2 FILE
//! BLOCK_SIZE [--warm]`: the course's programs (study 002), for graders
//! that compare their output.
//!
//! `run -r` reads with plain `read(2)` calls of BLOCK_SIZE bytes, as the
//! assignment's programs do, and XORs the 4-byte little-endian words of
//! each read: bytes that do not fill a word at the end of a read are not
//! folded in (the course's `xorbuf(buf, bytes_read / 4)`). So with a block
//! size that is not a multiple of 4 the answer differs from `iolab xor`'s.

use crate::export::target::{Mode, OutputTarget};
use anyhow::{Context, Result};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// Largest block accepted: one buffer of it is allocated.
const MAX_BLOCK: u64 = 1 << 30;

/// A read that takes at least this long ends `run2`'s search.
const TARGET_SECS: f64 = 5.0;

/// Arguments of `iolab run`.
#[derive(clap::Args, Debug)]
#[command(group(clap::ArgGroup::new("mode").required(true).args(["read", "write"])))]
pub struct RunArgs {
    /// The file to read or write.
    pub file: PathBuf,
    /// Read BLOCK_COUNT blocks (fewer at the end of the file) and print the
    /// XOR of each read's whole 4-byte words as 8 hex digits.
    #[arg(short = 'r')]
    pub read: bool,
    /// Create or truncate FILE (a regular file only) and write BLOCK_COUNT
    /// blocks of a fixed pattern.
    #[arg(short = 'w')]
    pub write: bool,
    /// Bytes per read or write call (e.g. 4096, 4k, 1m).
    #[arg(value_name = "BLOCK_SIZE", value_parser = crate::parse::size, allow_negative_numbers = true)]
    pub block_size: u64,
    /// Number of blocks (e.g. 1000, 10k).
    #[arg(value_name = "BLOCK_COUNT", value_parser = crate::parse::count, allow_negative_numbers = true)]
    pub block_count: u64,
    /// With -w: allow replacing an existing file iolab did not write.
    #[arg(long)]
    pub overwrite: bool,
}

/// The seed of the pattern `run -w` writes; the file it makes is marked
/// with it, as iolab's other test files are, so a later `run -w` may
/// replace it without --overwrite.
const RUN_SEED: u64 = 6233;

/// Arguments of `iolab run2`.
#[derive(clap::Args, Debug)]
pub struct Run2Args {
    /// The file to read (it is never written or extended).
    pub file: PathBuf,
    /// Bytes per read call (e.g. 4096, 4k, 1m).
    #[arg(value_name = "BLOCK_SIZE", value_parser = crate::parse::size)]
    pub block_size: u64,
    /// Keep the file cached (read it once first, never evict) instead of
    /// evicting it before each read.
    #[arg(long)]
    pub warm: bool,
}

fn check_block(cmd: &str, bs: u64) -> Result<usize> {
    if bs == 0 || bs > MAX_BLOCK {
        return Err(super::usage(format!(
            "{cmd}: BLOCK_SIZE {bs}: give 1 byte to 1g"
        )));
    }
    Ok(bs as usize)
}

fn buffer(cmd: &str, bs: usize) -> Result<Vec<u8>> {
    let mut v = Vec::new();
    v.try_reserve_exact(bs).map_err(|_| {
        super::usage(format!(
            "{cmd}: BLOCK_SIZE {bs}: cannot allocate a buffer that large here"
        ))
    })?;
    v.resize(bs, 0);
    Ok(v)
}

/// Reads up to `count` blocks of `buf.len()` bytes from the start of
/// `path`, one `read(2)` each, the course's way; returns the XOR of each
/// read's whole words and the bytes read. Stops early at the end of file.
pub fn read_blocks(
    path: &Path,
    buf: &mut [u8],
    count: u64,
    stop: &AtomicBool,
) -> Result<(u32, u64)> {
    let mut f = std::fs::File::open(path).with_context(|| format!("open {}", path.display()))?;
    let mut x = 0u32;
    let mut total = 0u64;
    let mut i = 0;
    while i < count {
        if stop.load(Ordering::Relaxed) {
            return Err(anyhow::Error::new(iolab::Error::Cancelled));
        }
        let n = match f.read(buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                return Err(
                    anyhow::Error::new(e).context(format!("read {} at {total}", path.display()))
                )
            }
        };
        // Whole words only: xorbuf(buf, bytes_read / 4).
        x ^= iolab_reader::xor::xor32(&buf[..n / 4 * 4]);
        total += n as u64;
        i += 1;
    }
    Ok((x, total))
}

/// Refuses, before anything is written, whatever `-w` must not replace:
/// anything but a regular file (a symlink, directory, device, FIFO, socket).
/// Returns the size of the file it will replace, if there is one.
fn check_write_target(f: &Path) -> Result<Option<u64>> {
    let shown = f.display();
    match std::fs::symlink_metadata(f) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(super::usage(format!("run -w {shown}: {e}"))),
        Ok(m) if m.file_type().is_file() => Ok(Some(m.len())),
        Ok(m) => {
            let what = if m.file_type().is_symlink() {
                "a symbolic link; give the path of a regular file"
            } else if m.is_dir() {
                "a directory; name a file"
            } else {
                "not a regular file; run -w writes only regular files"
            };
            Err(super::usage(format!("run -w {shown}: is {what}")))
        }
    }
}

/// What `run -w` will write: the checked target, the bytes, and the size
/// of the file it replaces, if any.
struct WritePlan {
    target: OutputTarget,
    total: u64,
    old: Option<u64>,
}

fn check_write(a: &RunArgs, bs: usize) -> Result<WritePlan> {
    if a.file.as_os_str().is_empty() {
        return Err(super::usage("run -w: empty FILE; name a file"));
    }
    let old = check_write_target(&a.file)?;
    if old.is_some() {
        iolab_bench::prepare::check_file_kind(&a.file, true)
            .map_err(|e| super::usage(e.to_string().replacen("--file ", "run -w ", 1)))?;
    }
    let total = (bs as u64).checked_mul(a.block_count).ok_or_else(|| {
        super::usage(format!(
            "run -w: BLOCK_SIZE {bs} x BLOCK_COUNT {} does not fit in 64 bits; give fewer blocks",
            a.block_count
        ))
    })?;
    let dir = match a.file.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if let Ok(free) = iolab::file::free_space(&dir) {
        if total > free {
            return Err(super::usage(format!(
                "run -w {}: {total} bytes do not fit in the {free} bytes free there; give fewer blocks",
                a.file.display()
            )));
        }
    }
    // Only a file iolab made is replaced without --overwrite.
    let ours = old.is_some() && iolab::file::iolab_seed(&a.file).is_some();
    let target = OutputTarget::check("run -w", &a.file, a.overwrite || ours, Mode::Replace, &[])?;
    Ok(WritePlan { target, total, old })
}

/// Checks everything `run` can check before it reads or writes (usage
/// errors, exit status 2); nothing is created. The bad-input corpus calls it.
#[cfg(test)]
pub fn check(a: &RunArgs) -> Result<()> {
    plan(a).map(|_| ())
}

fn plan(a: &RunArgs) -> Result<(usize, Option<WritePlan>)> {
    let cmd = if a.write { "run -w" } else { "run -r" };
    let bs = check_block(cmd, a.block_size)?;
    if a.block_count == 0 {
        return Err(super::usage(format!(
            "{cmd}: BLOCK_COUNT 0: give 1 or more blocks"
        )));
    }
    if a.write {
        return Ok((bs, Some(check_write(a, bs)?)));
    }
    crate::limits::check_input(cmd, &a.file)?;
    Ok((bs, None))
}

fn write(a: &RunArgs, bs: usize, mut w: WritePlan, stop: &AtomicBool) -> Result<i32> {
    let mut buf = buffer("run -w", bs)?;
    let pattern = iolab::pattern::Pattern::new(RUN_SEED);
    w.target.write_streamed(&mut |sink| {
        for i in 0..a.block_count {
            if stop.load(Ordering::Relaxed) {
                return Err(anyhow::Error::new(iolab::Error::Cancelled));
            }
            pattern.fill(&mut buf, i * bs as u64);
            sink(&buf)?;
        }
        Ok(())
    })?;
    mark_ours(&a.file);
    if let Some(n) = w.old {
        eprintln!(
            "run -w: replaced the existing file {} ({n} bytes) with {} bytes",
            a.file.display(),
            w.total
        );
    }
    Ok(0)
}

/// Marks the regular file `run -w` wrote as iolab's (best effort: a file
/// system without user extended attributes gets an unmarked file).
fn mark_ours(p: &Path) {
    if let Ok(f) = std::fs::File::open(p) {
        if f.metadata().is_ok_and(|m| m.is_file()) {
            let seed = RUN_SEED.to_string();
            let _ = iolab::kernel::fs::set_xattr(&f, iolab::file::SEED_XATTR, seed.as_bytes());
        }
    }
}

/// Runs `iolab run`.
pub fn run(a: &RunArgs, stop: &AtomicBool) -> Result<i32> {
    let (bs, w) = plan(a)?;
    if let Some(w) = w {
        return write(a, bs, w, stop);
    }
    let mut buf = buffer("run -r", bs)?;
    let (x, _) = read_blocks(&a.file, &mut buf, a.block_count, stop)?;
    crate::export::stdout(&format!("{x:08x}\n"))?;
    Ok(0)
}

/// Runs `iolab run2`: doubles the block count from 1 until one read takes
/// at least 5 s, or stops when the count outgrows the file.
pub fn run2(a: &Run2Args, stop: &AtomicBool) -> Result<i32> {
    let bs = check_block("run2", a.block_size)?;
    crate::limits::check_input("run2", &a.file)?;
    let len = iolab::file::length(&a.file)?;
    if len < bs as u64 {
        return Err(super::usage(format!(
            "run2: {} has {len} bytes, less than one block of {bs}; give a smaller BLOCK_SIZE or a larger file",
            a.file.display()
        )));
    }
    let mut buf = buffer("run2", bs)?;
    if a.warm {
        iolab::cache::warm(&a.file, len)?;
    }
    let mut count = 1u64;
    let mut last = (0u64, 0u64, 0.0f64);
    loop {
        let bytes = count * bs as u64;
        if bytes > len {
            return outgrown(a, len, last);
        }
        if !a.warm {
            iolab::cache::evict(&a.file)?;
        }
        let t = Instant::now();
        let (_, got) = read_blocks(&a.file, &mut buf, count, stop)?;
        let secs = t.elapsed().as_secs_f64();
        eprintln!("run2: {count} blocks ({got} bytes): {secs:.3} s");
        last = (count, got, secs);
        if secs >= TARGET_SECS {
            crate::export::stdout(&format!(
                "block count {count}, file size {got} bytes ({}), time {secs:.3} s\n",
                iolab_bench::prepare::human(got)
            ))?;
            return Ok(0);
        }
        count *= 2;
    }
}

/// What `run2` prints when the next count would read past the end of the
/// file: the longest time reached and the file size 5 s would need.
fn outgrown(a: &Run2Args, len: u64, (count, bytes, secs): (u64, u64, f64)) -> Result<i32> {
    let rate = bytes as f64 / secs.max(1e-9);
    let need = (rate * TARGET_SECS) as u64;
    crate::export::stdout(&format!(
        "{} ({len} bytes) is read in under 5 s: the longest read, {count} blocks ({bytes} bytes), took {secs:.3} s ({:.0} MiB/s); 5 s would need a file of about {} ({need} bytes)\n",
        a.file.display(),
        rate / (1 << 20) as f64,
        iolab_bench::prepare::human(need),
    ))?;
    Ok(0)
}
