//! Where a replay reads: the trace's files mapped under `--dir` (made when
//! missing, reused when present), or the original paths (`--in-place`).
//!
//! A trace is data from elsewhere, so every recorded path — absolute,
//! relative, `/etc/shadow`, `../../x`, a device — becomes a path *inside*
//! the directory: the leading `/` is dropped, `.` components vanish, `..`
//! becomes `__`. A path whose way down passes through a symbolic link, or
//! that names anything but a regular file, is refused; new files are made
//! with `O_EXCL` (so a link put there meanwhile is never followed) and
//! filled with iolab's verifiable pattern.

use super::{Trace, TraceError, TraceFormat};
use iolab::file::FileIdent;
use iolab::pattern::Pattern;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::AtomicBool;

/// The files a replay reads, one per trace file.
#[derive(Clone, Debug)]
pub struct Placed {
    /// Path of each trace file.
    pub paths: Vec<PathBuf>,
    /// Size each must have, bytes.
    pub sizes: Vec<u64>,
    /// Pattern of each (known when iolab made it), for `--verify`.
    pub patterns: Vec<Option<Pattern>>,
    /// How many were made by this call.
    pub created: usize,
}

/// The path inside `dir` a recorded path maps to.
pub fn map_path(dir: &Path, recorded: &str) -> PathBuf {
    let mut out = dir.to_path_buf();
    let mut any = false;
    for c in Path::new(recorded).components() {
        match c {
            Component::Normal(s) => {
                out.push(s);
                any = true;
            }
            Component::ParentDir => {
                out.push("__");
                any = true;
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    if !any {
        out.push("__root");
    }
    out
}

/// A stable seed for a recorded path (FNV-1a), so the same trace gives
/// the same file contents every time.
fn seed_of(path: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in path.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h
}

fn refuse(msg: String) -> TraceError {
    TraceError::Refused(msg)
}

/// Makes (or reuses) every file of `t` under `dir`. `on_created` is told
/// each file the moment it exists, so an interrupted run can remove
/// exactly the files it made.
pub fn place(
    t: &Trace,
    dir: &Path,
    cancel: &AtomicBool,
    on_created: &mut dyn FnMut(&Path, FileIdent),
) -> Result<Placed, TraceError> {
    let sizes = t.file_sizes();
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(refuse(format!("--dir {}: not a directory", dir.display())));
        }
        Err(_) => {
            return Err(refuse(format!(
                "--dir {}: no such directory; create it first",
                dir.display()
            )))
        }
    }
    let paths: Vec<PathBuf> = t.files.iter().map(|f| map_path(dir, f)).collect();
    // Check every path before making anything.
    let mut need = 0u64;
    let mut seen = std::collections::HashSet::new();
    for (i, p) in paths.iter().enumerate() {
        if !seen.insert(p.clone()) {
            return Err(refuse(format!(
                "trace files '{}' and another map to the same path {}; rename one in the trace",
                t.files[i],
                p.display()
            )));
        }
        need += check_path(dir, p, &t.files[i], sizes[i])?;
    }
    let free = iolab::file::free_space(dir).unwrap_or(u64::MAX);
    if need > free {
        return Err(refuse(format!(
            "--dir {}: the trace's files need {} more bytes but only {} are free",
            dir.display(),
            need,
            free
        )));
    }
    let mut patterns = Vec::new();
    let mut created = 0;
    for (i, p) in paths.iter().enumerate() {
        let (pattern, made) = make_or_reuse(p, &t.files[i], sizes[i], cancel, on_created)?;
        patterns.push(pattern);
        created += usize::from(made);
    }
    Ok(Placed {
        paths,
        sizes,
        patterns,
        created,
    })
}

/// Checks the path trace file `name` maps to under `dir`, component by
/// component: no symbolic links, directories on the way, and at the end a
/// regular file of at least `size` bytes or nothing. Returns the bytes
/// still to be made (`size` when the file, or a directory on its way, is
/// missing; before, a missing directory counted nothing against the free
/// space), else 0.
fn check_path(dir: &Path, p: &Path, name: &str, size: u64) -> Result<u64, TraceError> {
    let rel = p.strip_prefix(dir).expect("mapped under dir");
    let mut cur = dir.to_path_buf();
    let comps: Vec<_> = rel.components().collect();
    for (k, c) in comps.iter().enumerate() {
        cur.push(c);
        let last = k + 1 == comps.len();
        match std::fs::symlink_metadata(&cur) {
            // Missing here, so the file is too: it will be made.
            Err(_) => return Ok(size),
            Ok(m) if m.file_type().is_symlink() => {
                return Err(refuse(format!(
                    "trace file '{name}' maps to {}, and {} is a symbolic link; iolab does not follow links out of --dir (remove it or choose another --dir)",
                    p.display(),
                    cur.display()
                )))
            }
            Ok(m) if !last && !m.is_dir() => {
                return Err(refuse(format!(
                    "trace file '{name}' maps to {}, but {} is not a directory",
                    p.display(),
                    cur.display()
                )))
            }
            Ok(m) if last && !m.is_file() => {
                return Err(refuse(format!(
                    "trace file '{name}' maps to {}, which exists and is not a regular file",
                    p.display()
                )))
            }
            Ok(m) if last && m.len() < size => {
                return Err(refuse(format!(
                    "trace file '{name}' maps to {}, which holds {} bytes but the trace reads up to {size}; remove it or choose another --dir",
                    p.display(),
                    m.len(),
                )))
            }
            Ok(_) => {}
        }
    }
    Ok(0)
}

/// Makes `p` (trace file `name`, `size` bytes of its pattern) unless it is
/// there: its pattern (None when it cannot be verified) and whether it was
/// made now.
fn make_or_reuse(
    p: &Path,
    name: &str,
    size: u64,
    cancel: &AtomicBool,
    on_created: &mut dyn FnMut(&Path, FileIdent),
) -> Result<(Option<Pattern>, bool), TraceError> {
    if let Some(parent) = p.parent() {
        // Each component was checked: no links, only directories.
        std::fs::create_dir_all(parent).map_err(|source| TraceError::Io {
            path: parent.to_path_buf(),
            source,
        })?;
    }
    if std::fs::symlink_metadata(p).is_ok() {
        return Ok((iolab::file::verifiable_seed(p).map(Pattern::new), false));
    }
    let pat = Pattern::new(seed_of(name));
    iolab::file::create_pattern_file_with(p, size, pat, false, cancel, &mut |_| {}, &mut |id| {
        on_created(p, id)
    })
    .map_err(|e| refuse(format!("{}: {e}", p.display())))?;
    Ok((Some(pat), true))
}

/// The trace's own paths, read-only (`--in-place`): each must exist, be a
/// regular file (or block device) and be long enough.
pub fn in_place(t: &Trace) -> Result<Placed, TraceError> {
    if t.format == TraceFormat::Blkparse {
        return Err(refuse(
            "--in-place: a blkparse trace names devices (dev-MAJ-MIN), not files; replay it under --dir".into(),
        ));
    }
    let sizes = t.file_sizes();
    let mut paths = Vec::new();
    let mut patterns = Vec::new();
    for (i, f) in t.files.iter().enumerate() {
        let p = PathBuf::from(f);
        if std::fs::metadata(&p).is_err() {
            return Err(refuse(format!("--in-place: {f}: no such file")));
        }
        iolab_bench::prepare::check_file_kind(&p, false)
            .map_err(|e| refuse(e.to_string().replacen("--file", "--in-place:", 1)))?;
        let len = iolab::file::length(&p).map_err(|e| refuse(format!("--in-place: {e}")))?;
        if len < sizes[i] {
            return Err(refuse(format!(
                "--in-place: {f} holds {len} bytes but the trace reads up to {}",
                sizes[i]
            )));
        }
        patterns.push(iolab::file::verifiable_seed(&p).map(Pattern::new));
        paths.push(p);
    }
    Ok(Placed {
        paths,
        sizes,
        patterns,
        created: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse;

    #[test]
    fn hostile_paths_map_inside_the_directory() {
        let d = Path::new("/r");
        assert_eq!(map_path(d, "/etc/shadow"), PathBuf::from("/r/etc/shadow"));
        assert_eq!(map_path(d, "../../x"), PathBuf::from("/r/__/__/x"));
        assert_eq!(map_path(d, "a/./../b"), PathBuf::from("/r/a/__/b"));
        assert_eq!(map_path(d, "/dev/sda"), PathBuf::from("/r/dev/sda"));
        assert_eq!(map_path(d, "/"), PathBuf::from("/r/__root"));
        assert_eq!(map_path(d, "dev-8-0"), PathBuf::from("/r/dev-8-0"));
    }

    #[test]
    fn creates_reuses_and_refuses_links() {
        let d = tempfile::tempdir().unwrap();
        let t = parse(
            "file,offset,len\n/etc/shadow,0,10000\n../x,5,5\n",
            "t",
            None,
        )
        .unwrap();
        let stop = AtomicBool::new(false);
        let mut made = Vec::new();
        let p = place(&t, d.path(), &stop, &mut |p, _| made.push(p.to_path_buf())).unwrap();
        assert_eq!(p.created, 2);
        assert_eq!(made.len(), 2);
        assert_eq!(
            std::fs::metadata(d.path().join("etc/shadow"))
                .unwrap()
                .len(),
            10000
        );
        assert_eq!(std::fs::metadata(d.path().join("__/x")).unwrap().len(), 10);
        let again = place(&t, d.path(), &stop, &mut |_, _| {}).unwrap();
        assert_eq!(again.created, 0);
        // A link inside --dir that leads out is refused, and nothing is made.
        let out = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(out.path(), d.path().join("evil")).unwrap();
        let t2 = parse("file,offset,len\nevil/f,0,10\n", "t", None).unwrap();
        let e = place(&t2, d.path(), &stop, &mut |_, _| {}).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0);
        // A file too short is refused, not extended.
        std::fs::write(d.path().join("short"), b"abc").unwrap();
        let t3 = parse("file,offset,len\nshort,0,10\n", "t", None).unwrap();
        assert!(place(&t3, d.path(), &stop, &mut |_, _| {}).is_err());
        assert_eq!(std::fs::read(d.path().join("short")).unwrap(), b"abc");
    }
}
