//! Before a run: check the spec against the files and the machine, create
//! missing test files, and put the page cache in the state asked for.

use crate::error::{BenchError, Result};
use crate::spec::{AccessPattern, CacheMode, WorkloadSpec};
use iolab::engine::EngineKind;
use iolab::file::{self, DioAlign};
use iolab::pattern::Pattern;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

/// A file ready for a run.
#[derive(Clone, Debug)]
pub struct PreparedFile {
    /// Path.
    pub path: PathBuf,
    /// Its length, bytes.
    pub len: u64,
    /// Its pattern, when iolab made it (needed by `--verify`).
    pub pattern: Option<Pattern>,
    /// Created by this invocation (`iolab fio` removes what it made).
    pub created: bool,
}

/// Files and facts a run needs.
#[derive(Clone, Debug)]
pub struct Prepared {
    /// The files, in [`WorkloadSpec::files`] order.
    pub files: Vec<PreparedFile>,
    /// O_DIRECT alignment, when `direct`.
    pub align: Option<DioAlign>,
}

impl Prepared {
    /// The bytes every file holds from `offset` on: the region a run
    /// covers when no size is given.
    pub fn region_len(&self, offset: u64) -> u64 {
        let shortest = self.files.iter().map(|f| f.len).min().unwrap_or(0);
        shortest.saturating_sub(offset)
    }
}

/// How [`prepare`] may treat the user's files.
#[derive(Clone, Copy, Debug, Default)]
pub struct PrepareOpts {
    /// Recreate / write files iolab did not make.
    pub overwrite: bool,
}

fn usage(s: String) -> BenchError {
    BenchError::Usage(s)
}

/// The engines that can write, as the command line spells them.
fn writers() -> String {
    let v: Vec<&str> = EngineKind::ALL
        .iter()
        .filter(|k| k.writes())
        .map(|k| k.name())
        .collect();
    v.join(", ")
}

/// Checks that depend only on the spec (no file system access).
pub fn validate(spec: &WorkloadSpec) -> Result<()> {
    validate_sizes(spec)?;
    validate_files(spec)?;
    validate_lat(spec)?;
    validate_engine(spec)?;
    validate_gpu_copy(spec)
}

/// `--mem cuda:N` copies what each read brought in: it needs reads that
/// fill their buffers (the null engine's copy of an untouched buffer is
/// the copy's cost alone, which is allowed).
fn validate_gpu_copy(spec: &WorkloadSpec) -> Result<()> {
    let Some(n) = spec.copy_to_gpu else {
        return Ok(());
    };
    if spec.op.writes() {
        return Err(usage(format!(
            "--mem cuda:{n} copies each read into GPU memory; --op {} writes (use --op read)",
            spec.op.name()
        )));
    }
    if spec.engine_opts.mmap_touch {
        return Err(usage(format!(
            "--mem cuda:{n}: --mmap-touch brings no bytes into the buffers, so there is nothing to copy"
        )));
    }
    Ok(())
}

/// `--lat off|sampled` against what needs every op's latency: a per-I/O
/// log and a latency target.
fn validate_lat(spec: &WorkloadSpec) -> Result<()> {
    if spec.lat == crate::lat_record::LatRecord::All {
        return Ok(());
    }
    let need = if spec.log_ops {
        "a per-I/O log"
    } else if spec.pacing.lat_target.is_some() {
        "a latency target"
    } else {
        return Ok(());
    };
    Err(usage(format!(
        "--lat {}: {need} needs every op's latency (--lat all)",
        spec.lat
    )))
}

/// A list of files (`--files`) and `--nrfiles` against the other ways of
/// naming files.
fn validate_files(spec: &WorkloadSpec) -> Result<()> {
    if spec.nrfiles == 0 {
        return Err(usage("--nrfiles 0: a thread needs at least 1 file".into()));
    }
    if !spec.more_files.is_empty() && (spec.file_per_thread || spec.nrfiles > 1) {
        return Err(usage(
            "--files: every thread spreads its ops over the list; --file-per-thread and --nrfiles name files another way (give one of them)".into(),
        ));
    }
    if spec.place.is_some() && spec.files_of(0).len() > 1 {
        return Err(usage(
            "--files/--nrfiles: under mpirun each rank has one file (--layout)".into(),
        ));
    }
    Ok(())
}

/// Block size, queue depth and batches.
fn validate_sizes(spec: &WorkloadSpec) -> Result<()> {
    if spec.bs == 0 {
        return Err(usage(
            "--bs 0: the block size must be at least 1 byte (e.g. 4k)".into(),
        ));
    }
    if spec.bs > u32::MAX as u64 / 2 {
        return Err(usage(format!(
            "--bs {}: the block size must be below 2 GiB",
            spec.bs
        )));
    }
    if spec.qd == 0 {
        return Err(usage("--qd 0: the queue depth must be at least 1".into()));
    }
    if spec.engine.is_sync() && spec.qd > 1 {
        return Err(usage(format!(
            "--qd {}: engine {} is synchronous (one op in flight per thread); use --threads for parallelism, or an asynchronous engine (uring)",
            spec.qd, spec.engine
        )));
    }
    if spec.batch_submit == 0 || spec.batch_submit > spec.qd {
        return Err(usage(format!(
            "--batch {}: the submit batch must be between 1 and the queue depth ({})",
            spec.batch_submit, spec.qd
        )));
    }
    if spec.batch_complete == 0 || spec.batch_complete > spec.qd {
        return Err(usage(format!(
            "--batch-complete {}: must be between 1 and the queue depth ({})",
            spec.batch_complete, spec.qd
        )));
    }
    Ok(())
}

/// What the engine and the operation ask of each other.
fn validate_engine(spec: &WorkloadSpec) -> Result<()> {
    if let (Some(e), false) = (spec.sync_every, spec.op.writes()) {
        return Err(usage(format!(
            "--{} {}: --op {} writes nothing to sync; use --op write or rw",
            e.call(),
            e.writes,
            spec.op.name()
        )));
    }
    if spec.op.writes() && !spec.engine.writes() {
        return Err(usage(format!(
            "--op {}: engine {} only reads (writers: {})",
            spec.op.name(),
            spec.engine,
            writers()
        )));
    }
    if spec.direct && !spec.engine.supports_direct() {
        return Err(usage(format!(
            "--direct: engine {} reads through the page cache and cannot use O_DIRECT",
            spec.engine
        )));
    }
    if spec.verify
        && (spec.engine == EngineKind::Null
            || spec.engine_opts.mmap_touch
            || spec.engine_opts.uring.nop)
    {
        return Err(usage(
            "--verify: the null engine, --mmap-touch and --uring-nop copy no bytes, so there is nothing to verify".into(),
        ));
    }
    if spec.engine_opts.hipri && !matches!(spec.engine, EngineKind::Preadv2 | EngineKind::Uring) {
        return Err(usage(format!(
            "--hipri: only the preadv2 and uring engines take it, not {}",
            spec.engine
        )));
    }
    validate_polling(spec)?;
    if spec.engine_opts.mmap_touch && spec.engine != EngineKind::Mmap {
        return Err(usage(format!(
            "--mmap-touch: only the mmap engine takes it, not {}",
            spec.engine
        )));
    }
    if let crate::spec::OpMix::Rw { read_pct } = spec.op {
        if read_pct > 100 {
            return Err(usage(format!("--read-pct {read_pct}: must be 0..=100")));
        }
    }
    Ok(())
}

/// Polled completion (`--iopoll`, `--hipri` with uring) against what it
/// needs: O_DIRECT, and something to poll.
fn validate_polling(spec: &WorkloadSpec) -> Result<()> {
    let polled = spec.engine_opts.hipri || spec.engine_opts.uring.iopoll;
    if spec.engine == EngineKind::Uring && polled && !spec.direct {
        return Err(usage(
            "--iopoll/--hipri with uring needs --direct: polled completion bypasses the page cache"
                .into(),
        ));
    }
    if spec.engine_opts.uring.nop && polled {
        return Err(usage(
            "--uring-nop: no-ops reach no device, so there is nothing to poll (drop --iopoll/--hipri)"
                .into(),
        ));
    }
    Ok(())
}

/// Whether a name exists at all (a dangling symlink exists: it is not a
/// missing file iolab may create).
fn present(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok()
}

/// Refuses, before anything is made or measured, a `--file` that is not a
/// regular file (FIFOs, character devices, sockets, directories, the
/// kernel's /proc and /sys files) or a dangling symlink. A block device is
/// allowed for reading only. A missing file is fine (it may be created).
pub fn check_file_kind(p: &Path, writes: bool) -> Result<()> {
    check_path_kind(p, writes, "--file")
}

/// [`check_file_kind`] for a path given by `flag` (`--files`, say).
pub fn check_path_kind(p: &Path, writes: bool, flag: &str) -> Result<()> {
    let lmeta = match std::fs::symlink_metadata(p) {
        Ok(m) => m,
        Err(_) => return Ok(()),
    };
    let meta = match std::fs::metadata(p) {
        Ok(m) => m,
        Err(_) if lmeta.file_type().is_symlink() => {
            return Err(usage(format!(
                "{flag} {}: a symbolic link to a missing file; iolab does not create files through links (name the target, or a new file)",
                p.display()
            )))
        }
        Err(e) => return Err(usage(format!("{flag} {}: {e}", p.display()))),
    };
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_block_device() {
        if writes {
            return Err(usage(format!(
                "{flag} {}: a block device; iolab reads block devices but never writes to them",
                p.display()
            )));
        }
        return Ok(());
    }
    let what = file::special_kind(t);
    if let Some(what) = what {
        return Err(usage(format!(
            "{flag} {}: not a regular file ({what}); name a regular file or a block device",
            p.display()
        )));
    }
    if let Some(fs) = file::virtual_fs(p) {
        return Err(usage(format!(
            "{flag} {}: not a regular file (a {fs} file the kernel generates); name a file on storage",
            p.display()
        )));
    }
    Ok(())
}

/// Makes sure every file exists with the right size (creating it when
/// missing), and checks alignment, free space and ownership rules.
// Long on purpose: one check after another, in the order a user meets
// them (space, kind, owner, size, pattern); split, the order would hide.
pub fn prepare(
    spec: &WorkloadSpec,
    size_given: bool,
    opts: PrepareOpts,
    cancel: &AtomicBool,
    created_hook: &mut dyn FnMut(&Path),
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Prepared> {
    validate(spec)?;
    if spec.no_files {
        return Ok(nothing_made(spec));
    }
    let paths = spec.files();
    // O_DIRECT alignment, checked before any file is made.
    let align = if spec.direct {
        let probe = if paths[0].exists() {
            paths[0].clone()
        } else {
            paths[0]
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(Path::new("."))
                .to_path_buf()
        };
        let mut a = file::dio_alignment(&probe)?;
        if spec.direct_logical {
            // fio's rule: the kernel's alignment, whatever the device's
            // physical block.
            a.required = a.kernel.max(1);
        }
        if !spec.bs.is_multiple_of(a.required as u64) {
            return Err(usage(format!(
                "--bs {}: O_DIRECT on {} needs a multiple of {} bytes (device physical block {}, kernel minimum {})",
                human(spec.bs),
                paths[0].display(),
                a.required,
                a.physical,
                a.kernel
            )));
        }
        if !spec.offset.is_multiple_of(a.required as u64) {
            return Err(usage(format!(
                "--offset {}: O_DIRECT on {} needs the region to start at a multiple of {} bytes",
                spec.offset,
                paths[0].display(),
                a.required
            )));
        }
        if let AccessPattern::Stride(gap) = spec.pattern {
            if !gap.is_multiple_of(a.required as u64) {
                return Err(usage(format!(
                    "--pattern stride:{gap}: O_DIRECT on {} needs the skipped bytes to be a multiple of {} too",
                    paths[0].display(),
                    a.required
                )));
            }
        }
        Some(a)
    } else {
        None
    };
    // Free space for every file still to be made, checked before making any.
    for p in &paths {
        check_file_kind(p, spec.op.writes())?;
    }
    let missing: Vec<&PathBuf> = paths.iter().filter(|p| !present(p)).collect();
    if !missing.is_empty() {
        if !size_given {
            return Err(usage(format!(
                "--file {}: no such file; give --size to create it (e.g. --size 1g)",
                missing[0].display()
            )));
        }
        let dir = missing[0]
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if !dir.is_dir() {
            return Err(usage(format!(
                "--file {}: directory {} does not exist",
                missing[0].display(),
                dir.display()
            )));
        }
        let need = spec.file_end() * missing.len() as u64;
        let free = file::free_space(dir)?;
        if need > free {
            return Err(usage(format!(
                "--size {}: {} file(s) need {} but {} has only {} free",
                human(spec.file_size),
                missing.len(),
                human(need),
                dir.display(),
                human(free)
            )));
        }
    }
    let mut files = Vec::new();
    for (i, p) in paths.iter().enumerate() {
        let mut created = false;
        if !present(p) {
            let pat = Pattern::new(spec.seed.wrapping_add(0x5EED_0000 + i as u64));
            let total = spec.file_end();
            // O_EXCL: if another process made the file meanwhile, this
            // fails and touches nothing. The hook runs the moment the file
            // exists, so the caller can note its inode (and remove only it).
            file::create_pattern_file_with(
                p,
                total,
                pat,
                false,
                cancel,
                &mut |n| progress(n, total),
                &mut |_| created_hook(p),
            )?;
            created = true;
        }
        let is_dev = file::is_block_device(p);
        if is_dev && spec.op.writes() {
            return Err(usage(format!(
                "--op {}: {} is a block device; iolab never writes to block devices",
                spec.op.name(),
                p.display()
            )));
        }
        let len = file::length(p)?;
        let seed = file::iolab_seed(p);
        if !created && spec.op.writes() && seed.is_none() && !opts.overwrite {
            return Err(usage(format!(
                "--op {}: {} was not made by iolab; pass --overwrite to write into it",
                spec.op.name(),
                p.display()
            )));
        }
        if size_given && len < spec.file_end() {
            let at = if spec.offset > 0 {
                format!(" from --offset {}", human(spec.offset))
            } else {
                String::new()
            };
            return Err(usage(format!(
                "--size {}{at}: {} holds only {}; use a new --file, or a --size it holds",
                human(spec.file_size),
                p.display(),
                human(len)
            )));
        }
        if len <= spec.offset {
            return Err(usage(format!(
                "--offset {}: at or past the end of {} ({}); give an offset inside the file",
                human(spec.offset),
                p.display(),
                human(len)
            )));
        }
        let pattern = file::verifiable_seed(p).map(Pattern::new);
        if spec.verify && pattern.is_none() {
            let why = if seed.is_some() {
                "a --write-fill once run wrote into it"
            } else {
                "it was not made by iolab"
            };
            return Err(usage(format!(
                "--verify: {}: {why}, so the bytes it should hold are unknown",
                p.display()
            )));
        }
        if spec.write_once && spec.op.writes() {
            if spec.verify {
                return Err(usage(
                    "--verify: --write-fill once writes bytes other than the pattern; use --write-fill each"
                        .into(),
                ));
            }
            // The first write of each buffer still carries the pattern.
            file::mark_unverified(p)?;
        }
        files.push(PreparedFile {
            path: p.clone(),
            len,
            pattern,
            created,
        });
    }
    let prep = Prepared { files, align };
    let size = if size_given {
        spec.file_size
    } else {
        prep.region_len(spec.offset)
    };
    if size < spec.bs {
        return Err(usage(format!(
            "--bs {}: larger than the file ({})",
            human(spec.bs),
            human(size)
        )));
    }
    Ok(prep)
}

/// The files of a run without files (`no_files`, fio's null engine): their
/// names and lengths only; none is made, opened or checked.
fn nothing_made(spec: &WorkloadSpec) -> Prepared {
    let files = spec
        .files()
        .into_iter()
        .map(|path| PreparedFile {
            path,
            len: spec.file_end(),
            pattern: None,
            created: false,
        })
        .collect();
    Prepared { files, align: None }
}

/// Puts the files' pages in the state `spec.cache` asks for and returns the
/// resident fraction measured afterwards (mincore).
pub fn set_cache(spec: &WorkloadSpec, prep: &Prepared, size: u64) -> Result<f64> {
    if spec.no_files {
        return Ok(0.0);
    }
    match spec.cache {
        CacheMode::Cold => {
            if spec.drop_caches {
                iolab::cache::drop_caches()?;
            }
            for f in &prep.files {
                iolab::cache::evict(&f.path)?;
            }
        }
        CacheMode::Warm => {
            for f in &prep.files {
                iolab::cache::warm(&f.path, spec.offset + size)?;
            }
        }
        CacheMode::AsIs => {}
    }
    residency(prep, spec.offset, size)
}

/// Resident fraction of the `size` bytes from `offset` over all files.
pub fn residency(prep: &Prepared, offset: u64, size: u64) -> Result<f64> {
    let (mut r, mut t) = (0u64, 0u64);
    for f in &prep.files {
        let x =
            iolab::cache::residency_range(&f.path, offset, size.min(f.len.saturating_sub(offset)))?;
        r += x.resident_pages;
        t += x.total_pages;
    }
    Ok(if t == 0 { 1.0 } else { r as f64 / t as f64 })
}

/// Bytes in binary units (`4 KiB`, `1.5 GiB`).
pub fn human(b: u64) -> String {
    const U: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1024.0 && i < U.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{b} B")
    } else if v.fract() == 0.0 {
        format!("{v:.0} {}", U[i])
    } else {
        format!("{v:.1} {}", U[i])
    }
}
