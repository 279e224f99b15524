//! Checks of `iolab bench`'s values that the corpus of bad command lines
//! found missing: zero amounts, depths beyond the ring, a completion batch
//! deeper than the queue, blocks larger than the file, and paths that
//! cannot be created. All before anything is made or measured.

use crate::bench_args::{BenchArgs, OpArg};
use crate::error::usage;
use anyhow::Result;
use iolab::engine::EngineKind;
use iolab_bench::prepare::human;
use std::path::Path;

/// The most entries an io_uring submission queue may have (the kernel's
/// IORING_MAX_ENTRIES).
pub const URING_MAX_ENTRIES: u32 = 32768;

/// Refuses values no run can use, naming the flag.
pub fn check_bench(a: &BenchArgs) -> Result<()> {
    if a.size == Some(0) {
        return Err(usage(
            "--size 0: give a positive file size (e.g. --size 1g)",
        ));
    }
    if a.ops == Some(0) {
        return Err(usage(
            "--ops 0: give a positive number of ops (e.g. --ops 10k)",
        ));
    }
    if a.io_size == Some(0) {
        return Err(usage(
            "--io-size 0: give a positive amount (e.g. --io-size 1g)",
        ));
    }
    check_lists(a)?;
    let max_qd = a.qd.iter().copied().max().unwrap_or(1);
    if a.batch_complete > max_qd {
        return Err(usage(format!(
            "--batch-complete {}: larger than --qd {max_qd}; at most the ops in flight can complete at once",
            a.batch_complete
        )));
    }
    if a.engine.contains(&EngineKind::Uring) {
        if let Some(q) = a.qd.iter().find(|&&q| q > URING_MAX_ENTRIES) {
            return Err(usage(format!(
                "--qd {q}: an io_uring ring holds at most {URING_MAX_ENTRIES} ops in flight"
            )));
        }
    }
    if let Some(size) = a.size {
        if let Some(bs) = a.bs.iter().find(|&&b| b > size) {
            return Err(usage(format!(
                "--bs {}: larger than --size {}; use a block no larger than the file",
                human(*bs),
                human(size)
            )));
        }
    }
    let flag = if a.file.is_some() {
        "--file"
    } else {
        "--files"
    };
    for f in a.named_files().unwrap_or_default() {
        check_named(a, flag, &f)?;
    }
    Ok(())
}

/// A depth of 0 among --qd's values, an empty name among --files'.
fn check_lists(a: &BenchArgs) -> Result<()> {
    if a.qd.contains(&0) {
        return Err(usage("--qd 0: give 1 or more ops in flight (e.g. --qd 32)"));
    }
    if let Some(list) = &a.files {
        use std::os::unix::ffi::OsStrExt;
        if list
            .as_os_str()
            .as_bytes()
            .split(|b| *b == b':')
            .any(<[u8]>::is_empty)
        {
            return Err(usage(format!(
                "--files {}: an empty name; list files as A:B:C",
                list.display()
            )));
        }
    }
    Ok(())
}

/// A file `--file` or `--files` names: one iolab can make, read, or (with
/// --overwrite, when iolab did not make it) write.
fn check_named(a: &BenchArgs, flag: &str, f: &Path) -> Result<()> {
    check_creatable(flag, f)?;
    let writes = a.op != OpArg::Read;
    iolab_bench::prepare::check_path_kind(f, writes, flag)?;
    if writes
        && !a.out.overwrite
        && std::fs::metadata(f).is_ok_and(|m| m.is_file())
        && iolab::file::iolab_seed(f).is_none()
    {
        return Err(usage(format!(
            "{flag} {}: not made by iolab; writing would destroy its contents (add --overwrite to allow it)",
            f.display()
        )));
    }
    Ok(())
}

/// A path that does not exist must be creatable: its directory exists, and
/// the name and the path are within the system's limits.
pub fn check_creatable(flag: &str, p: &Path) -> Result<()> {
    match std::fs::symlink_metadata(p) {
        Ok(_) => return Ok(()),
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(usage(format!("{flag} {}: {e}", p.display())));
        }
        Err(_) => {}
    }
    if p.as_os_str().is_empty() {
        return Err(usage(format!("{flag}: empty path; name a file")));
    }
    let dir = match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        return Err(usage(format!(
            "{flag} {}: directory {} does not exist",
            p.display(),
            dir.display()
        )));
    }
    Ok(())
}

/// An input file a command reads whole (a trace, a log): it must exist and
/// be a regular file, checked without opening it (opening a FIFO blocks
/// until someone writes to it).
pub fn check_input_file(what: &str, p: &Path) -> Result<()> {
    let m = std::fs::metadata(p).map_err(|e| usage(format!("{what} {}: {e}", p.display())))?;
    let Some(kind) = iolab::file::special_kind(m.file_type()) else {
        return Ok(());
    };
    Err(usage(format!(
        "{what} {}: not a regular file ({kind}); name a file",
        p.display()
    )))
}

/// Refuses, without opening it, a missing input or one that is not a
/// regular file or block device (usage error naming `cmd`).
pub(crate) fn check_input(cmd: &str, f: &Path) -> Result<()> {
    if std::fs::metadata(f).is_err() {
        return Err(crate::error::usage(format!(
            "{cmd}: {}: no such file",
            f.display()
        )));
    }
    iolab_bench::prepare::check_file_kind(f, false)
        .map_err(|e| crate::error::usage(e.to_string().replacen("--file ", &format!("{cmd}: "), 1)))
}
