//! Files the lab writes beside its records (the figures, the report page),
//! regenerated in place.

use anyhow::Result;

use crate::export::target::{Mode, OutputTarget};
use std::path::Path;

/// The most bytes of an existing page or figure read to see whether iolab
/// wrote it.
const PAGE_MAX_BYTES: u64 = 256 << 20;

/// Writes `text` to `path` (a figure or page iolab regenerates): replaced
/// freely when iolab wrote it (it carries `mark`), else only with
/// --overwrite. Returns whether it went to a file (not a pipe or device).
pub fn write_regenerated(
    flag: &'static str,
    path: &Path,
    text: &str,
    mark: &str,
    overwrite: bool,
) -> Result<bool> {
    // Only a regular file of a sane size is looked into: `-o /dev/stdout`
    // is the reading end of nobody's pipe, and would never end.
    let ours = iolab::file::read_bounded(path, PAGE_MAX_BYTES, "page")
        .is_ok_and(|b| String::from_utf8_lossy(&b).contains(mark));
    let mut t = OutputTarget::check(flag, path, overwrite || ours, Mode::Replace, &[])?;
    t.write_all_atomically(text.as_bytes())?;
    Ok(!t.is_stream())
}
