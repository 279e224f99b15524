//! Whole files: [`read_all`], [`read_into`] and [`read_whole_with`], all on
//! the one whole-file path ([`crate::whole::read_whole_plan`]: io_uring,
//! O_DIRECT when cold) with the piece size and depth from the profile.

use crate::profile::Profile;
use crate::whole::{read_whole_into, read_whole_plan, Plan, WholeStats};
use crate::{ReadError, Result};
use std::path::Path;

/// How to read one whole file.
pub type WholePlan = Plan;

/// The whole-file plan the profile recommends (O_DIRECT when cold unless
/// the profile measured otherwise).
pub fn plan_from(p: &Profile, ordered: bool) -> WholePlan {
    Plan {
        chunk: p.whole.block,
        depth: p.whole.depth,
        direct: if p.whole.direct_cold {
            None
        } else {
            Some(false)
        },
        ordered,
        warm_chunk: p.whole.warm_block,
        warm_offset: p.whole.warm_offset,
        warm_threads: 0,
    }
}

fn wrap(path: &Path, e: iolab::Error) -> ReadError {
    match e {
        iolab::Error::Io { source, .. } => ReadError::Io {
            path: path.to_path_buf(),
            offset: 0,
            len: 0,
            source,
        },
        other => ReadError::Io {
            path: path.to_path_buf(),
            offset: 0,
            len: 0,
            source: std::io::Error::other(other.to_string()),
        },
    }
}

/// Reads all of `path` with `plan`, calling `f(offset, bytes)` per chunk;
/// `f` returning false stops early.
pub fn read_whole_with(
    path: &Path,
    plan: &WholePlan,
    f: &mut dyn FnMut(u64, &[u8]) -> bool,
) -> Result<WholeStats> {
    crate::check_kind(path)?;
    read_whole_plan(path, plan, f).map_err(|e| wrap(path, e))
}

/// Reads the whole file into `buf`, which must be at least as long as the
/// file; returns the file's length. The bytes land in `buf` itself (no
/// buffer of ours in between; see [`read_whole_into`]).
pub fn read_into(path: &Path, buf: &mut [u8]) -> Result<usize> {
    crate::check_kind(path)?;
    let len = iolab::file::length(path).map_err(|e| wrap(path, e))?;
    if len > buf.len() as u64 {
        return Err(ReadError::TooLarge {
            path: path.to_path_buf(),
            what: format!("the file has {len} bytes, the buffer {}", buf.len()),
        });
    }
    let plan = plan_from(&crate::profile::process_profile(), false);
    read_into_with(path, &plan, buf)
}

/// Reads `path` from its start into `buf` with `plan` until `buf` is full
/// or the file ends, straight into `buf`; returns the bytes read.
pub fn read_into_with(path: &Path, plan: &WholePlan, buf: &mut [u8]) -> Result<usize> {
    crate::check_kind(path)?;
    let stats = read_whole_into(path, plan, buf).map_err(|e| wrap(path, e))?;
    Ok(stats.bytes as usize)
}

/// Reads the whole file into a new vector.
pub fn read_all(path: &Path) -> Result<Vec<u8>> {
    crate::check_kind(path)?;
    let len = iolab::file::length(path).map_err(|e| wrap(path, e))?;
    let n = usize::try_from(len).map_err(|_| ReadError::TooLarge {
        path: path.to_path_buf(),
        what: format!("{len} bytes do not fit in memory here"),
    })?;
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| ReadError::TooLarge {
        path: path.to_path_buf(),
        what: format!("cannot allocate {n} bytes to hold the file"),
    })?;
    v.resize(n, 0);
    let got = read_into(path, &mut v)?;
    v.truncate(got);
    Ok(v)
}
