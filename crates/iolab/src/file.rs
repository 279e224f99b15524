//! Opening files for I/O, the `O_DIRECT` alignment rule, the block device
//! under a file, and creating test files that hold the verifiable pattern.

use crate::error::{Error, Result};
use crate::kernel::fs;
use crate::pattern::Pattern;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// Extended attribute that marks a file iolab created, holding the seed of
/// its pattern. Its presence is what lets iolab verify and overwrite it.
pub const SEED_XATTR: &str = "user.iolab.seed";

/// How to open a file for a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpenSpec {
    /// Bypass the page cache (O_DIRECT).
    pub direct: bool,
    /// Open for writing as well as reading.
    pub write: bool,
}

/// Opens `path` as `spec` says.
pub fn open(path: &Path, spec: OpenSpec) -> Result<File> {
    open_with(path, spec, SyncOpen::None)
}

/// When a write returns, beyond the page cache: the flags a file is
/// opened with (fio's `sync=1` is O_SYNC, `sync=dsync` O_DSYNC).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SyncOpen {
    /// Neither: writes return once in the page cache (or, with O_DIRECT,
    /// once the device has them).
    #[default]
    None,
    /// O_SYNC: data and metadata on stable storage.
    Sync,
    /// O_DSYNC: data on stable storage.
    Dsync,
}

/// [`open`], with `O_SYNC` or `O_DSYNC` as `sync` says.
pub fn open_with(path: &Path, spec: OpenSpec, sync: SyncOpen) -> Result<File> {
    let mut o = OpenOptions::new();
    o.read(true).write(spec.write);
    let sync_flag = match sync {
        SyncOpen::None => 0,
        SyncOpen::Sync => libc::O_SYNC,
        SyncOpen::Dsync => libc::O_DSYNC,
    };
    if spec.direct {
        o.custom_flags(libc::O_DIRECT | sync_flag);
    } else if sync_flag != 0 {
        o.custom_flags(sync_flag);
    }
    o.open(path).map_err(|e| {
        if spec.direct && e.raw_os_error() == Some(libc::EINVAL) {
            Error::Unsupported {
                feature: "--direct".into(),
                why: format!(
                    "the file system holding {} refuses O_DIRECT",
                    path.display()
                ),
            }
        } else {
            Error::io(format!("open {}", path.display()), e)
        }
    })
}

/// The block device a path lives on (or is), with its sysfs queue directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockDevice {
    /// Kernel name of the whole disk, e.g. `vda` or `nvme0n1`.
    pub name: String,
    /// `/sys/block/<name>` of the whole disk.
    pub sysfs: PathBuf,
}

impl BlockDevice {
    /// Reads one attribute under the disk's `queue/` directory, trimmed.
    pub fn queue_attr(&self, attr: &str) -> Option<String> {
        std::fs::read_to_string(self.sysfs.join("queue").join(attr))
            .ok()
            .map(|s| s.trim().to_string())
    }

    /// Reads a numeric queue attribute.
    pub fn queue_num(&self, attr: &str) -> Option<u64> {
        self.queue_attr(attr)?.parse().ok()
    }

    /// Requests the device has in flight (reads and writes) and requests
    /// it has completed so far, from its `stat` file; None where the
    /// kernel does not say.
    pub fn io_counts(&self) -> Option<(u64, u64)> {
        let s = std::fs::read_to_string(self.sysfs.join("stat")).ok()?;
        let f: Vec<u64> = s
            .split_whitespace()
            .map(|x| x.parse().ok())
            .collect::<Option<_>>()?;
        // Fields: reads completed (0), writes completed (4), in flight (8).
        Some((*f.get(8)?, f.first()? + f.get(4)?))
    }
}

/// Polls (every millisecond, for at most `max`) until none of `devices`
/// has had a request in flight or completed one for [`QUIET_POLLS`] polls
/// in a row; returns whether they went quiet. The in-flight count alone
/// misses requests still queued in the I/O scheduler, so the count of
/// completed requests must stand still too. A measurement that starts
/// "cold" must not start while the previous one's read-ahead is still on
/// its way: that read-ahead lands after the cache was emptied, and the
/// reads it races wait behind it.
pub fn wait_idle(devices: &[BlockDevice], max: std::time::Duration) -> bool {
    let t0 = std::time::Instant::now();
    let counts = || -> Vec<Option<(u64, u64)>> { devices.iter().map(|d| d.io_counts()).collect() };
    let mut last = counts();
    let mut quiet = 0;
    loop {
        std::thread::sleep(std::time::Duration::from_millis(1));
        let now = counts();
        let idle = now
            .iter()
            .all(|c| c.is_none_or(|(inflight, _)| inflight == 0));
        quiet = if idle && now == last { quiet + 1 } else { 0 };
        if quiet >= QUIET_POLLS {
            return true;
        }
        if t0.elapsed() >= max {
            return false;
        }
        last = now;
    }
}

/// Polls in a row (a millisecond apart) with nothing in flight and nothing
/// completed that make a device idle for [`wait_idle`].
pub const QUIET_POLLS: u32 = 5;

/// The `/sys/block/...` folder of the block device (disk, partition, md
/// or dm) holding `path` (or that `path` is), through
/// `/sys/dev/block/MAJ:MIN`. None for virtual file systems.
pub fn sys_block_dir(path: &Path) -> Option<PathBuf> {
    let md = std::fs::metadata(path).ok()?;
    let dev = if md.file_type().is_block_device() {
        md.rdev()
    } else {
        md.dev()
    };
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    std::fs::canonicalize(format!("/sys/dev/block/{major}:{minor}")).ok()
}

/// Finds the whole-disk block device holding `path` (or that `path` is),
/// through `/sys/dev/block/MAJ:MIN`. None for virtual file systems.
pub fn block_device_of(path: &Path) -> Option<BlockDevice> {
    let link = sys_block_dir(path)?;
    // A partition's directory has a `partition` file; its parent is the disk.
    let disk = if link.join("partition").exists() {
        link.parent()?.to_path_buf()
    } else {
        link
    };
    let name = disk.file_name()?.to_string_lossy().into_owned();
    // dm/md devices also have queue/; anything without it is not a disk.
    if !disk.join("queue").exists() {
        return None;
    }
    Some(BlockDevice {
        sysfs: PathBuf::from("/sys/block").join(&name),
        name,
    })
}

/// What `O_DIRECT` needs for one file, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DioAlign {
    /// Offset and length alignment the kernel reports (statx DIOALIGN, or
    /// the device's logical block size on kernels that do not say).
    pub kernel: usize,
    /// The device's physical block size (1 when unknown).
    pub physical: usize,
    /// What iolab requires: the larger of the two. I/O smaller than or
    /// straddling a physical block makes the device read-modify-write (for
    /// writes) or split the request, so iolab refuses it rather than
    /// measure that by accident.
    pub required: usize,
    /// Buffer memory alignment iolab uses (at least the kernel's, and a
    /// whole page so buffers can also be registered with io_uring).
    pub mem: usize,
}

/// Works out the `O_DIRECT` alignment for `path`.
pub fn dio_alignment(path: &Path) -> Result<DioAlign> {
    let dev = block_device_of(path);
    let logical = dev
        .as_ref()
        .and_then(|d| d.queue_num("logical_block_size"))
        .unwrap_or(512) as usize;
    let physical = dev
        .as_ref()
        .and_then(|d| d.queue_num("physical_block_size"))
        .unwrap_or(1) as usize;
    let (kmem, koff) = match fs::dio_align(path)? {
        Some((m, o)) => (m as usize, o as usize),
        None => (logical, logical),
    };
    let required = koff.max(physical).max(1);
    Ok(DioAlign {
        kernel: koff,
        physical,
        required,
        mem: kmem.max(crate::usage::page_size()),
    })
}

/// Free bytes (for unprivileged users) on the file system holding `dir`.
pub fn free_space(dir: &Path) -> Result<u64> {
    Ok(fs::statfs(dir)?.0)
}

/// Name of the file system type holding `path` (from its magic number).
pub fn fs_type(path: &Path) -> Option<&'static str> {
    let t = fs::statfs(path).ok()?.2;
    Some(match t {
        0xEF53 => "ext4",
        0x5846_5342 => "xfs",
        0x9123_683E => "btrfs",
        0x0102_1994 => "tmpfs",
        0x2FC1_2FC1 => "zfs",
        0x6969 => "nfs",
        0x794C_7630 => "overlayfs",
        0xF2F5_2010 => "f2fs",
        0x6573_5546 => "fuse",
        0x6264_6576 => "devtmpfs",
        _ => "other",
    })
}

/// The seed of an iolab-made file (from its extended attribute): the file
/// is iolab's to write into again.
pub fn iolab_seed(path: &Path) -> Option<u64> {
    let v = fs::get_xattr(path, SEED_XATTR)?;
    std::str::from_utf8(&v).ok()?.parse().ok()
}

/// Set on an iolab-made file whose bytes are no longer its pattern (a
/// `--write-fill once` run wrote into it): still iolab's, not verifiable.
pub const UNVERIFIED_XATTR: &str = "user.iolab.unverified";

/// The seed of an iolab-made file that still holds its pattern, so its
/// bytes can be checked.
pub fn verifiable_seed(path: &Path) -> Option<u64> {
    iolab_seed(path).filter(|_| fs::get_xattr(path, UNVERIFIED_XATTR).is_none())
}

/// Marks `path` [`UNVERIFIED_XATTR`]: what is about to be written into it
/// is not its pattern.
pub fn mark_unverified(path: &Path) -> Result<()> {
    let f = File::open(path).map_err(|e| Error::io(format!("open {}", path.display()), e))?;
    fs::set_xattr(&f, UNVERIFIED_XATTR, b"1")
}

/// Length of a regular file or block device in bytes.
pub fn length(path: &Path) -> Result<u64> {
    let md =
        std::fs::metadata(path).map_err(|e| Error::io(format!("stat {}", path.display()), e))?;
    if md.file_type().is_block_device() {
        use std::io::Seek;
        let mut f =
            File::open(path).map_err(|e| Error::io(format!("open {}", path.display()), e))?;
        return f
            .seek(std::io::SeekFrom::End(0))
            .map_err(|e| Error::io(format!("size of {}", path.display()), e));
    }
    Ok(md.len())
}

/// What a file of type `t` is, as an error names it ("a directory", "a
/// FIFO", ...); `None` for a regular file. One list of names, so every
/// refusal of a file that is not regular speaks alike.
pub fn special_kind(t: std::fs::FileType) -> Option<&'static str> {
    Some(if t.is_file() {
        return None;
    } else if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else {
        "not a regular file"
    })
}

/// Whether `path` is a block device.
pub fn is_block_device(path: &Path) -> bool {
    std::fs::metadata(path)
        .map(|m| m.file_type().is_block_device())
        .unwrap_or(false)
}

/// Creates `path` (which must not exist unless `overwrite`) holding `len`
/// bytes of `pattern`, marks it with [`SEED_XATTR`], and syncs it.
/// `progress` is told the bytes written so far; `cancel` stops the work
/// (the partial file is removed and [`Error::Cancelled`] returned).
pub fn create_pattern_file(
    path: &Path,
    len: u64,
    pattern: Pattern,
    overwrite: bool,
    cancel: &AtomicBool,
    progress: &mut dyn FnMut(u64),
) -> Result<()> {
    create_pattern_file_with(path, len, pattern, overwrite, cancel, progress, &mut |_| {})
}

/// The identity of a file: device, inode and (where the file system keeps
/// it) birth time, since a freed inode number is soon reused. A name can be
/// removed and reused; this says whether the name still means the file
/// iolab made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FileIdent {
    /// Device of the file system (st_dev).
    pub dev: u64,
    /// Inode number (st_ino).
    pub ino: u64,
    /// Birth time, ns since the epoch, when the file system reports it.
    pub born_ns: Option<u128>,
}

impl FileIdent {
    fn of(m: &std::fs::Metadata) -> FileIdent {
        FileIdent {
            dev: m.dev(),
            ino: m.ino(),
            born_ns: m
                .created()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| d.as_nanos()),
        }
    }

    /// Of the name itself (a symlink is not followed); None if absent.
    pub fn of_path(path: &Path) -> Option<FileIdent> {
        Some(Self::of(&std::fs::symlink_metadata(path).ok()?))
    }

    /// Of what `path` names, following symlinks; None if absent.
    pub fn of_target(path: &Path) -> Option<FileIdent> {
        Some(Self::of(&std::fs::metadata(path).ok()?))
    }

    /// Of an open file.
    pub fn of_file(f: &File) -> std::io::Result<FileIdent> {
        Ok(Self::of(&f.metadata()?))
    }
}

/// Removes `path` only if the name still refers to `ident` (the file iolab
/// made), so a file another process put there since is left alone.
/// Returns whether it removed something.
pub fn remove_if_same(path: &Path, ident: FileIdent) -> bool {
    match std::fs::symlink_metadata(path) {
        Ok(m) if FileIdent::of(&m) == ident => {
            if m.is_dir() {
                std::fs::remove_dir_all(path).is_ok()
            } else {
                std::fs::remove_file(path).is_ok()
            }
        }
        _ => false,
    }
}

/// Opens an existing character device or FIFO for writing in place (never
/// created, truncated or replaced). A FIFO with no reader blocks in `open`;
/// a signal interrupts it (the handler of [`crate::stop`] has no
/// `SA_RESTART`) and, once `stop` is set, this returns [`Error::Cancelled`].
pub fn open_in_place_for_write(path: &Path, stop: &AtomicBool) -> Result<File> {
    loop {
        match fs::open_write_once(path) {
            Ok(f) => return Ok(f),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {
                if stop.load(Ordering::SeqCst) {
                    return Err(Error::Cancelled);
                }
            }
            Err(e) => return Err(Error::io(format!("open {}", path.display()), e)),
        }
    }
}

/// Whether this process may write `path` (checked with the effective ids).
pub fn may_write(path: &Path) -> bool {
    fs::may_write(path)
}

/// Whether the file system holding `path` is mounted read-only.
pub fn on_read_only_fs(path: &Path) -> bool {
    fs::read_only(path)
}

/// The name of the kernel's virtual file system holding `path` (`proc`,
/// `sysfs`, ...), whose "files" are generated on read and have no size.
pub fn virtual_fs(path: &Path) -> Option<&'static str> {
    let t = fs::statfs(path).ok()?.2;
    Some(match t {
        0x9fa0 => "proc",
        0x6265_6572 => "sysfs",
        0x6367_7270 => "cgroup2",
        0x0027_e0eb => "cgroup",
        0x6462_6720 => "debugfs",
        0x7472_6163 => "tracefs",
        0x7363_6673 => "securityfs",
        0x6265_6570 => "configfs",
        0xcafe_4a11 => "bpf",
        0x6165_676c => "pstore",
        0xde5e_81e4 => "efivarfs",
        _ => return None,
    })
}

/// The most bytes read of a file of result records (JSON lines: resumed
/// runs, report inputs); a run's records are KiB to a few MiB.
pub const RECORDS_MAX_BYTES: u64 = 256 << 20;

/// Reads a small file that is not data (a profile, a job file, a trace, a
/// record file) whole, refusing what could hang or fill memory: anything
/// but a regular file (a FIFO waits for a writer, `/dev/zero` never ends)
/// and more than `max` bytes. `what` names the kind of file in the error
/// ("profile"); the error keeps the kernel's kind (a missing file is
/// still `NotFound`).
pub fn read_bounded(path: &Path, max: u64, what: &str) -> std::io::Result<Vec<u8>> {
    use std::io::{Error as IoError, ErrorKind, Read};
    // O_NONBLOCK: opening a FIFO with no writer returns at once instead of
    // waiting for one; it changes nothing for a regular file.
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    let m = f.metadata()?;
    if let Some(kind) = special_kind(m.file_type()) {
        return Err(IoError::new(
            ErrorKind::InvalidInput,
            format!("{kind}, not a regular file; a {what} is read from a regular file"),
        ));
    }
    let too_large = || {
        IoError::new(
            ErrorKind::InvalidData,
            format!(
                "larger than {} MiB, more than a {what} can be; name the right file",
                max >> 20
            ),
        )
    };
    if m.len() > max {
        return Err(too_large());
    }
    let mut v = Vec::with_capacity(m.len() as usize);
    // A file that grows while read (or a /proc file, size 0) stops at max.
    f.take(max + 1).read_to_end(&mut v)?;
    if v.len() as u64 > max {
        return Err(too_large());
    }
    Ok(v)
}

/// Like [`create_pattern_file`], and tells `on_created` the identity of
/// the file the moment it exists, so a caller can remove exactly that file
/// (and no other that later takes its name) if the run is interrupted.
pub fn create_pattern_file_with(
    path: &Path,
    len: u64,
    pattern: Pattern,
    overwrite: bool,
    cancel: &AtomicBool,
    progress: &mut dyn FnMut(u64),
    on_created: &mut dyn FnMut(FileIdent),
) -> Result<()> {
    let mut o = OpenOptions::new();
    o.write(true);
    if overwrite {
        o.create(true).truncate(true);
    } else {
        o.create_new(true);
    }
    let mut f = o
        .open(path)
        .map_err(|e| Error::io(format!("create {}", path.display()), e))?;
    let ident =
        FileIdent::of_file(&f).map_err(|e| Error::io(format!("fstat {}", path.display()), e))?;
    on_created(ident);
    let res = (|| -> Result<()> {
        const CHUNK: usize = 4 << 20;
        let mut buf = vec![0u8; CHUNK];
        let mut off = 0u64;
        while off < len {
            if cancel.load(Ordering::Relaxed) {
                return Err(Error::Cancelled);
            }
            let n = CHUNK.min((len - off) as usize);
            pattern.fill(&mut buf[..n], off);
            f.write_all(&buf[..n])
                .map_err(|e| Error::io(format!("write {}", path.display()), e))?;
            off += n as u64;
            progress(off);
        }
        f.sync_all()
            .map_err(|e| Error::io(format!("fsync {}", path.display()), e))?;
        // Best effort: a file system without user xattrs still gets a usable
        // file; it just cannot be recognised as iolab's later.
        let _ = fs::set_xattr(&f, SEED_XATTR, pattern.seed().to_string().as_bytes());
        // Writing filled the page cache; leave the file cold, as most runs
        // expect, without touching other files' pages.
        let _ = fs::fadvise(&f, libc::POSIX_FADV_DONTNEED);
        Ok(())
    })();
    if res.is_err() {
        drop(f);
        // Only the file made here: not whatever has the name by now.
        remove_if_same(path, ident);
    }
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_file_holds_pattern_and_seed() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        let pat = Pattern::new(77);
        let stop = AtomicBool::new(false);
        let mut last = 0;
        create_pattern_file(&p, 10_000, pat, false, &stop, &mut |n| last = n).unwrap();
        assert_eq!(last, 10_000);
        let data = std::fs::read(&p).unwrap();
        assert_eq!(data.len(), 10_000);
        assert!(pat.verify(&data, 0).is_ok());
        if let Some(s) = iolab_seed(&p) {
            assert_eq!(s, 77);
        }
        // Never clobbers without being told to.
        assert!(create_pattern_file(&p, 10, pat, false, &stop, &mut |_| {}).is_err());
        assert_eq!(std::fs::metadata(&p).unwrap().len(), 10_000);
    }

    #[test]
    fn waiting_for_the_device_outlasts_a_read_ahead_in_flight() {
        let d = tempfile::tempdir().unwrap();
        let dev = block_device_of(d.path());
        crate::require!(
            dev.is_some(),
            "{} is on no block device",
            d.path().display()
        );
        let dev = dev.unwrap();
        crate::require!(
            dev.io_counts().is_some(),
            "{} does not say what it has in flight",
            dev.name
        );
        let p = d.path().join("f");
        let len = 64u64 << 20;
        std::fs::write(&p, vec![3u8; len as usize]).unwrap();
        crate::cache::evict(&p).unwrap();
        // Queued, not waited for: the reads are in flight or done (one
        // call per 128 KiB: a call reads at most the read-ahead window or
        // the device's largest request).
        let f = std::fs::File::open(&p).unwrap();
        for at in (0..len).step_by(128 << 10) {
            crate::kernel::fs::fadvise_range(&f, at, 128 << 10, libc::POSIX_FADV_WILLNEED).unwrap();
        }
        assert!(wait_idle(
            std::slice::from_ref(&dev),
            std::time::Duration::from_secs(10)
        ));
        let cached = crate::cache::residency(&p, len).unwrap().fraction();
        assert!(
            cached > 0.99,
            "after the wait {:.0} % is cached",
            cached * 100.0
        );
    }

    #[test]
    fn cancelled_creation_leaves_nothing() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        let stop = AtomicBool::new(true);
        let r = create_pattern_file(&p, 1 << 20, Pattern::new(1), false, &stop, &mut |_| {});
        assert!(matches!(r, Err(Error::Cancelled)));
        assert!(!p.exists());
    }

    #[test]
    fn bounded_reads_refuse_streams_and_oversize_files() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("small");
        std::fs::write(&p, b"12345").unwrap();
        assert_eq!(read_bounded(&p, 5, "profile").unwrap(), b"12345");
        let e = read_bounded(&p, 4, "profile").unwrap_err();
        assert!(e.to_string().contains("more than a profile"), "{e}");
        let e = read_bounded(Path::new("/dev/zero"), 1 << 20, "profile").unwrap_err();
        assert!(e.to_string().contains("a character device"), "{e}");
        // A FIFO with no writer: refused at once, not waited on.
        let fifo = d.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: c is a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = read_bounded(&fifo, 1 << 20, "job file").unwrap_err();
        assert!(e.to_string().contains("a FIFO"), "{e}");
        let e = read_bounded(&d.path().join("none"), 1, "trace").unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
    }

    #[test]
    fn alignment_is_a_power_of_two_at_least_512() {
        let d = tempfile::tempdir().unwrap();
        let a = dio_alignment(d.path()).unwrap();
        assert!(a.required >= 512 && a.required.is_power_of_two(), "{a:?}");
        assert!(a.mem >= 4096);
    }
}
