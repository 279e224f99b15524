//! `--dir D` of the commands that make files under a directory (bench,
//! sys, survey, tune, lab, replay), handled one way: an existing directory
//! is used; a missing one is made, only its last part (a typo in a parent
//! is not turned into a tree), said on stderr with the device it is on,
//! and removed at the end if it is still empty.

use crate::error::usage;
use anyhow::Result;
use std::path::{Path, PathBuf};

/// The directory `dir` would be made in.
fn parent_of(dir: &Path) -> PathBuf {
    match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Checks `dir` without changing anything: an existing directory (links
/// followed), or a missing one whose parent exists and that may be made
/// there. Returns whether it is missing.
pub fn check(flag: &str, dir: &Path) -> Result<bool> {
    let shown = dir.display();
    if dir.as_os_str().is_empty() {
        return Err(usage(format!("{flag}: empty path; name a directory")));
    }
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => return Ok(false),
        Ok(_) => return Err(usage(format!("{flag} {shown}: not a directory"))),
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(usage(format!("{flag} {shown}: {e}")));
        }
        Err(_) => {}
    }
    if std::fs::symlink_metadata(dir).is_ok() {
        return Err(usage(format!(
            "{flag} {shown}: a symbolic link to a directory that does not exist; iolab creates nothing through a link"
        )));
    }
    let parent = parent_of(dir);
    if !parent.is_dir() {
        return Err(usage(format!(
            "{flag} {shown}: no such directory, and {} does not exist either (iolab makes only the last part of a missing directory)",
            parent.display()
        )));
    }
    if dir.file_name().is_some_and(|n| n.len() > 255) {
        return Err(usage(format!(
            "{flag} {shown}: the name is longer than 255 bytes"
        )));
    }
    if !iolab::file::may_write(&parent) {
        return Err(usage(format!(
            "{flag} {shown}: no such directory, and this user may not make it in {}",
            parent.display()
        )));
    }
    Ok(true)
}

/// Makes `dir` if it is missing (see [`check`]), says so on stderr, and
/// has it removed when the run ends if nothing was left in it.
pub fn ensure(flag: &str, dir: &Path) -> Result<()> {
    if !check(flag, dir)? {
        return Ok(());
    }
    std::fs::create_dir(dir).map_err(|e| usage(format!("{flag} {}: {e}", dir.display())))?;
    if let Some(id) = iolab::file::FileIdent::of_path(dir) {
        crate::cleanup::remove_if_empty_at_exit(dir, id);
    }
    let on = match (iolab::file::block_device_of(dir), iolab::file::fs_type(dir)) {
        (Some(d), Some(t)) => format!("{} ({t})", d.name),
        (Some(d), None) => d.name,
        (None, Some(t)) => t.to_string(),
        (None, None) => "an unknown device".into(),
    };
    eprintln!(
        "created {} on {on}; it is removed at the end if left empty",
        dir.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_last_part_is_made_and_only_when_asked() {
        let d = tempfile::tempdir().unwrap();
        let new = d.path().join("new");
        assert!(check("--dir", &new).unwrap());
        assert!(!new.exists(), "check makes nothing");
        let deep = d.path().join("a/b");
        let e = check("--dir", &deep).unwrap_err();
        assert!(e.to_string().contains("only the last part"), "{e}");
        std::fs::write(d.path().join("f"), b"").unwrap();
        let e = check("--dir", &d.path().join("f")).unwrap_err();
        assert!(e.to_string().contains("not a directory"), "{e}");
        std::os::unix::fs::symlink("nowhere", d.path().join("l")).unwrap();
        let e = check("--dir", &d.path().join("l")).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert!(!check("--dir", d.path()).unwrap());
    }
}
