//! Files the lab writes beside its records (the figures, the report page),
//! regenerated in place.

use anyhow::Result;

use crate::export::target::{Mode, OutputTarget};
use std::path::Path;

/// Writes `text` to `path` (a figure or page iolab regenerates): replaced
/// freely when iolab wrote it (it carries `mark`), else only with --overwrite.
pub fn write_regenerated(
    flag: &'static str,
    path: &Path,
    text: &str,
    mark: &str,
    overwrite: bool,
) -> Result<()> {
    let ours = std::fs::read_to_string(path).is_ok_and(|s| s.contains(mark));
    let mut t = OutputTarget::check(flag, path, overwrite || ours, Mode::Replace, &[])?;
    t.write_all_atomically(text.as_bytes())
}
