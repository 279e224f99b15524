//! `iolab cat FILE... [--xor] [-o OUT]` and `iolab fast FILE`: whole files
//! read the fastest way this machine has (the one whole-file path,
//! `iolab_reader::read_whole_with`: io_uring into huge-page buffers,
//! O_DIRECT when the file is cold, piece size and depth from the profile).

use crate::export::target::{Mode, OutputTarget};
use crate::limits::check_input;
use anyhow::{Context, Result};
use iolab_reader::{profile, WholePlan};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// Arguments of `iolab cat`.
#[derive(clap::Args, Debug)]
pub struct CatArgs {
    /// Files to read, in order.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Print the XOR of each file's 4-byte little-endian words (as `iolab
    /// xor` does: a final partial word is zero-padded) instead of the bytes.
    #[arg(long)]
    pub xor: bool,
    /// Write the bytes to OUT instead of stdout (never over an existing
    /// file without --overwrite).
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    pub output: Option<PathBuf>,
    /// Replace OUT if it exists.
    #[arg(long)]
    pub overwrite: bool,
    /// Page cache or not: auto (O_DIRECT when the file is cold), on, off.
    #[arg(long, default_value = "auto", value_parser = ["auto", "on", "off"])]
    pub direct: String,
    /// Piece size (default: the profile's), e.g. 1m.
    #[arg(long, value_parser = crate::parse::size)]
    pub block: Option<u64>,
    /// Pieces in flight (default: the profile's).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub depth: Option<u32>,
    /// Say on stderr how each file was read.
    #[arg(short, long)]
    pub verbose: bool,
    #[command(flatten)]
    pub gpu: crate::to_gpu::GpuCatArgs,
}

/// Arguments of `iolab fast`.
#[derive(clap::Args, Debug)]
pub struct FastArgs {
    /// The file.
    pub file: PathBuf,
}

/// The profile `iolab tune` wrote, or the built-in one. Without a profile
/// (the usual case until `iolab tune` runs) nothing is said unless
/// `verbose`; a profile that cannot be used is always said, once.
fn the_profile(verbose: bool) -> std::sync::Arc<profile::Profile> {
    static P: std::sync::OnceLock<std::sync::Arc<profile::Profile>> = std::sync::OnceLock::new();
    P.get_or_init(|| {
        let path = profile::default_path();
        let (p, warn) = profile::Profile::load_or_default(&path);
        let missing = std::fs::symlink_metadata(&path).is_err();
        if let Some(w) = warn.filter(|_| verbose || !missing) {
            eprintln!("{}", crate::error::clean(&w));
        }
        std::sync::Arc::new(p)
    })
    .clone()
}

fn plan(a: &CatArgs, ordered: bool) -> Result<WholePlan> {
    let p = the_profile(a.verbose);
    let mut plan = iolab_reader::plan_from(&p, ordered);
    plan.direct = match a.direct.as_str() {
        "on" => Some(true),
        "off" => Some(false),
        _ => plan.direct,
    };
    if let Some(b) = a.block {
        if b == 0 || b > 256 << 20 {
            return Err(super::usage(format!(
                "cat: --block {b}: give a size from 4k to 256m"
            )));
        }
        plan.chunk = b as usize;
    }
    if let Some(d) = a.depth {
        plan.depth = d;
    }
    Ok(plan)
}

/// Runs `iolab cat`.
pub fn run(a: &CatArgs, stop: &AtomicBool) -> Result<i32> {
    if a.gpu.gpu.is_some() {
        return into_gpu(a, stop);
    }
    a.files.iter().try_for_each(|f| check_input("cat", f))?;
    if a.xor && a.output.is_some() {
        return Err(super::usage("cat: --xor prints to stdout; drop -o"));
    }
    if a.xor {
        return xor_files(a, stop);
    }
    let mut target = match &a.output {
        Some(out) => Some(OutputTarget::check(
            "-o",
            out,
            a.overwrite,
            Mode::Replace,
            &a.files,
        )?),
        None => None,
    };
    let plan = plan(a, true)?;
    let mut produce = |sink: &mut crate::export::target::Sink<'_>| -> Result<()> {
        for f in &a.files {
            let mut err: Option<anyhow::Error> = None;
            let t = Instant::now();
            let st = iolab_reader::read_whole_with(f, &plan, &mut |_, b| {
                if let Err(e) = sink(b) {
                    err = Some(e);
                    return false;
                }
                !stop.load(Ordering::Relaxed)
            })
            .with_context(|| format!("cat {}", f.display()))?;
            if let Some(e) = err {
                return Err(e);
            }
            if stop.load(Ordering::Relaxed) {
                return Err(anyhow::Error::new(iolab::Error::Cancelled));
            }
            report(a.verbose, f, &st, &plan, t);
        }
        Ok(())
    };
    match &mut target {
        Some(t) => t.write_streamed(&mut produce)?,
        None => {
            // Our own handle on fd 1: unbuffered, large writes go straight through.
            let fd = std::io::stdout()
                .lock()
                .as_fd_clone()
                .context("duplicate stdout")?;
            let mut o = std::fs::File::from(fd);
            refuse_input_as_output(&a.files, &o)?;
            produce(&mut |b| o.write_all(b).map_err(anyhow::Error::new))?;
        }
    }
    Ok(0)
}

/// `iolab cat --gpu N`: the files into GPU memory (`crate::to_gpu`).
fn into_gpu(a: &CatArgs, stop: &AtomicBool) -> Result<i32> {
    let f = crate::to_gpu::CatFlags {
        block: a.block,
        depth: a.depth,
        direct: &a.direct,
        xor: a.xor,
        output: a.output.is_some(),
    };
    crate::to_gpu::cat(&a.gpu, &a.files, f, stop)
}

/// `iolab cat --xor`: each file's XOR-32 of its bytes, printed.
fn xor_files(a: &CatArgs, stop: &AtomicBool) -> Result<i32> {
    let plan = plan(a, false)?;
    let mut out = String::new();
    for f in &a.files {
        let mut x = 0u32;
        let t = Instant::now();
        let st = iolab_reader::read_whole_with(f, &plan, &mut |_, b| {
            x ^= iolab_reader::xor::xor32(b);
            !stop.load(Ordering::Relaxed)
        })
        .with_context(|| format!("cat {}", f.display()))?;
        report(a.verbose, f, &st, &plan, t);
        if a.files.len() == 1 {
            out.push_str(&format!("{x:#010x}\n"));
        } else {
            out.push_str(&format!("{x:#010x}  {}\n", f.display()));
        }
    }
    crate::export::stdout(&out)?;
    Ok(0)
}

/// `iolab cat f >> f` would read what it appends, forever or until the
/// disk is full: a regular file that is stdout may not also be an input
/// (GNU cat refuses the same way).
fn refuse_input_as_output(files: &[PathBuf], out: &std::fs::File) -> Result<()> {
    if !out.metadata().is_ok_and(|m| m.is_file()) {
        return Ok(());
    }
    let Ok(id) = iolab::file::FileIdent::of_file(out) else {
        return Ok(());
    };
    match files
        .iter()
        .find(|f| iolab::file::FileIdent::of_target(f) == Some(id))
    {
        Some(f) => Err(super::usage(format!(
            "cat: {}: input file is output file (stdout); write to another file",
            f.display()
        ))),
        None => Ok(()),
    }
}

trait FdClone {
    fn as_fd_clone(&self) -> std::io::Result<std::os::fd::OwnedFd>;
}

impl FdClone for std::io::StdoutLock<'_> {
    fn as_fd_clone(&self) -> std::io::Result<std::os::fd::OwnedFd> {
        use std::os::fd::AsFd;
        self.as_fd().try_clone_to_owned()
    }
}

/// With -v: how a file was read (engine, page cache or not, pieces and
/// their depth, and the profile they came from) and how fast.
fn report(
    verbose: bool,
    f: &Path,
    st: &iolab_reader::whole::WholeStats,
    plan: &WholePlan,
    t: Instant,
) {
    if verbose {
        let secs = t.elapsed().as_secs_f64();
        let human = iolab_bench::prepare::human;
        eprintln!(
            "{}: {} in {:.3} s ({:.0} MiB/s) with {}{}{}, pieces of {} with {} in flight, profile {}",
            f.display(),
            human(st.bytes),
            secs,
            st.bytes as f64 / secs.max(1e-9) / (1 << 20) as f64,
            st.engine,
            if st.direct { " O_DIRECT" } else { " buffered" },
            match st.threads {
                1 => String::new(),
                n => format!(", {n} threads"),
            },
            human(plan.chunk as u64),
            plan.depth,
            profile_used()
        );
    }
}

/// Which profile the pieces and depth came from, in words.
fn profile_used() -> String {
    let p = the_profile(true);
    if p.source == "built-in" {
        "built in (no `iolab tune` profile)".into()
    } else {
        profile::default_path().display().to_string()
    }
}

/// XOR of a whole file's 4-byte little-endian words, a final partial word
/// dropped (the course's rule), read on the `cat` path.
pub fn fast_xor(path: &Path, stop: &AtomicBool) -> Result<u32> {
    let len = iolab::file::length(path)?;
    let plan = iolab_reader::plan_from(&the_profile(false), false);
    let mut x = 0u32;
    iolab_reader::read_whole_with(path, &plan, &mut |off, b| {
        let end = off + b.len() as u64;
        // Pieces start at multiples of 4; only the file's last piece can
        // end inside a word.
        let b = if end >= len { &b[..b.len() / 4 * 4] } else { b };
        x ^= iolab_reader::xor::xor32(b);
        !stop.load(Ordering::Relaxed)
    })
    .with_context(|| format!("fast {}", path.display()))?;
    if stop.load(Ordering::Relaxed) {
        return Err(anyhow::Error::new(iolab::Error::Cancelled));
    }
    Ok(x)
}

/// Runs `iolab fast`: 8 bare lowercase hex digits.
pub fn run_fast(a: &FastArgs, stop: &AtomicBool) -> Result<i32> {
    check_input("fast", &a.file)?;
    let x = fast_xor(&a.file, stop)?;
    crate::export::stdout(&format!("{x:08x}\n"))?;
    Ok(0)
}
