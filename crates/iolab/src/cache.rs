//! Page-cache control: evict a file's pages, warm them, and measure how much
//! of a file is resident (mincore), so a run states its cache state rather
//! than assuming it.

use crate::error::{Error, Result};
use crate::kernel::{fs, mman::Mapping};
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// How much of a file is in the page cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Residency {
    /// Pages resident.
    pub resident_pages: u64,
    /// Pages in the file.
    pub total_pages: u64,
}

impl Residency {
    /// Resident fraction, 0.0..=1.0 (1.0 for an empty file).
    pub fn fraction(&self) -> f64 {
        if self.total_pages == 0 {
            1.0
        } else {
            self.resident_pages as f64 / self.total_pages as f64
        }
    }
}

/// Measures residency of the first `len` bytes of `path` with mincore.
pub fn residency(path: &Path, len: u64) -> Result<Residency> {
    residency_sampled(path, len, usize::MAX)
}

/// Pages per window of [`residency_sampled`]: 64 KiB with 4 KiB pages.
const SAMPLE_PAGES: usize = 16;

/// Estimates residency of the first `len` bytes of `path` from `windows`
/// evenly spaced runs of 16 pages (all of it when the file has no more
/// pages than that; `total_pages` is then the pages looked at). mincore's
/// cost grows with the pages asked about: 42 ms for a 4 GiB file here, 7 %
/// of reading it whole from the cache.
pub fn residency_sampled(path: &Path, len: u64, windows: usize) -> Result<Residency> {
    let f = File::open(path).map_err(|e| Error::io(format!("open {}", path.display()), e))?;
    let pages = len.div_ceil(crate::usage::page_size() as u64);
    let m = match Mapping::new(&f, len as usize) {
        Ok(m) => m,
        Err(e) => return not_mapped(e, len),
    };
    let pages = pages as usize;
    let (mut r, mut t) = (0, 0);
    if pages / SAMPLE_PAGES <= windows {
        (r, t) = m.residency()?;
    } else {
        let step = pages / windows;
        for w in 0..windows {
            let (a, b) = m.residency_pages(w * step, SAMPLE_PAGES)?;
            r += a;
            t += b;
        }
    }
    Ok(Residency {
        resident_pages: r,
        total_pages: t,
    })
}

/// The residency of `len` bytes whose mapping failed with `e`: a file the
/// file system will not map shared (FUSE with direct I/O) has no pages in
/// the page cache, so none of it is resident; any other error is one.
fn not_mapped(e: Error, len: u64) -> Result<Residency> {
    match e {
        Error::Io { source, .. } if source.raw_os_error() == Some(libc::ENODEV) => Ok(Residency {
            resident_pages: 0,
            total_pages: len.div_ceil(crate::usage::page_size() as u64),
        }),
        e => Err(e),
    }
}

/// Evicts `path`'s pages: writes back dirty pages (fdatasync) and asks the
/// kernel to drop the clean ones (POSIX_FADV_DONTNEED). Pages mapped by a
/// running process may stay; check with [`residency`].
pub fn evict(path: &Path) -> Result<()> {
    let f = File::open(path).map_err(|e| Error::io(format!("open {}", path.display()), e))?;
    f.sync_data()
        .map_err(|e| Error::io(format!("fdatasync {}", path.display()), e))?;
    fs::fadvise(&f, libc::POSIX_FADV_DONTNEED)
}

/// Drops `path`'s clean pages (POSIX_FADV_DONTNEED) without writing back
/// dirty ones first: what fio does when it reopens a file for another pass
/// with `invalidate=1`. Unlike [`evict`], it adds no sync to a run that
/// writes; dirty pages stay until the kernel writes them back.
pub fn drop_clean(path: &Path) -> Result<()> {
    let f = File::open(path).map_err(|e| Error::io(format!("open {}", path.display()), e))?;
    fs::fadvise(&f, libc::POSIX_FADV_DONTNEED)
}

/// Tells the kernel how `file` will be read (POSIX_FADV_RANDOM stops
/// read-ahead, so a random 4 KiB read brings in one page, not 128 KiB;
/// SEQUENTIAL doubles the read-ahead window). fio does the same by default
/// (`fadvise_hint=1`). The advice belongs to this open file, not the inode.
pub fn advise(file: &File, hint: crate::engine::AccessHint) -> Result<()> {
    use crate::engine::AccessHint;
    let advice = match hint {
        AccessHint::Normal => libc::POSIX_FADV_NORMAL,
        AccessHint::Random => libc::POSIX_FADV_RANDOM,
        AccessHint::Sequential => libc::POSIX_FADV_SEQUENTIAL,
    };
    fs::fadvise(file, advice)
}

/// Measures residency of `len` bytes of `path` from `offset` (rounded out to
/// whole pages) with mincore: one rank's region of a shared file, say.
pub fn residency_range(path: &Path, offset: u64, len: u64) -> Result<Residency> {
    if len == 0 {
        return Ok(Residency {
            resident_pages: 0,
            total_pages: 0,
        });
    }
    let page = crate::kernel::mman::page_size() as u64;
    let start = offset / page * page;
    let f = File::open(path).map_err(|e| Error::io(format!("open {}", path.display()), e))?;
    let m = match Mapping::new_at(&f, start, (offset + len - start) as usize) {
        Ok(m) => m,
        Err(e) => return not_mapped(e, offset + len - start),
    };
    let (r, t) = m.residency()?;
    Ok(Residency {
        resident_pages: r,
        total_pages: t,
    })
}

/// Evicts `len` bytes of `path` from `offset`: writes back the file's dirty
/// pages, then drops the range's clean ones (POSIX_FADV_DONTNEED), leaving
/// the rest of the file's cache alone. Check with [`residency_range`].
pub fn evict_range(path: &Path, offset: u64, len: u64) -> Result<()> {
    let f = File::open(path).map_err(|e| Error::io(format!("open {}", path.display()), e))?;
    f.sync_data()
        .map_err(|e| Error::io(format!("fdatasync {}", path.display()), e))?;
    fs::fadvise_range(&f, offset, len, libc::POSIX_FADV_DONTNEED)
}

/// Drops the whole page cache, dentries and inodes (root only): `sync`, then
/// `3 > /proc/sys/vm/drop_caches`.
pub fn drop_caches() -> Result<()> {
    fs::sync_all();
    std::fs::write("/proc/sys/vm/drop_caches", b"3").map_err(|e| {
        if e.kind() == std::io::ErrorKind::PermissionDenied {
            Error::Unsupported {
                feature: "--drop-caches".into(),
                why: "writing /proc/sys/vm/drop_caches needs root".into(),
            }
        } else {
            Error::io("write /proc/sys/vm/drop_caches", e)
        }
    })
}

/// Reads the first `len` bytes of `path` through the page cache so they are
/// resident (1 MiB reads after a WILLNEED hint).
pub fn warm(path: &Path, len: u64) -> Result<()> {
    let f = File::open(path).map_err(|e| Error::io(format!("open {}", path.display()), e))?;
    let _ = fs::fadvise(&f, libc::POSIX_FADV_WILLNEED);
    // No larger than the file: warming thousands of small files zeroed a
    // whole MiB for each.
    let mut buf = vec![0u8; len.clamp(1, 1 << 20) as usize];
    let mut off = 0u64;
    while off < len {
        let n = f
            .read_at(&mut buf, off)
            .map_err(|e| Error::io(format!("read {}", path.display()), e))?;
        if n == 0 {
            break;
        }
        off += n as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warm_then_evict_changes_residency() {
        let d = tempfile::tempdir().unwrap();
        crate::require!(
            crate::file::fs_type(d.path()) != Some("tmpfs"),
            "tmpfs pages cannot be evicted"
        );
        let p = d.path().join("f");
        std::fs::write(&p, vec![7u8; 1 << 20]).unwrap();
        warm(&p, 1 << 20).unwrap();
        let w = residency(&p, 1 << 20).unwrap();
        assert_eq!(w.total_pages, (1 << 20) / crate::usage::page_size() as u64);
        assert!(w.fraction() > 0.99, "{w:?}");
        evict(&p).unwrap();
        let c = residency(&p, 1 << 20).unwrap();
        assert!(c.fraction() < 0.01, "{c:?}");
    }

    #[test]
    fn sampled_residency_sees_which_part_is_cached() {
        let d = tempfile::tempdir().unwrap();
        crate::require!(
            crate::file::fs_type(d.path()) != Some("tmpfs"),
            "tmpfs pages cannot be evicted"
        );
        let p = d.path().join("f");
        let len = 32u64 << 20;
        std::fs::write(&p, vec![7u8; len as usize]).unwrap();
        evict(&p).unwrap();
        // The first quarter cached (read with read-ahead off, and without
        // warm's whole-file WILLNEED), the rest not.
        let f = File::open(&p).unwrap();
        fs::fadvise(&f, libc::POSIX_FADV_RANDOM).unwrap();
        let mut buf = vec![0u8; (len / 4) as usize];
        f.read_exact_at(&mut buf, 0).unwrap();
        let page = crate::usage::page_size() as u64;
        let s = residency_sampled(&p, len, 64).unwrap();
        // 64 windows of 16 pages, not the file's 8192 pages.
        assert_eq!(s.total_pages, 64 * 16, "{s:?}");
        assert!((s.fraction() - 0.25).abs() < 0.05, "{s:?}");
        // Few pages: all of them are looked at.
        let all = residency_sampled(&p, len, 1 << 20).unwrap();
        assert_eq!(all.total_pages, len / page);
        assert!((all.fraction() - 0.25).abs() < 0.01, "{all:?}");
    }
}
