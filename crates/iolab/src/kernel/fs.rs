//! File-level system calls std does not offer: fadvise, statx alignment,
//! preadv2/pwritev2, extended attributes, statvfs, hole punching.

use crate::error::{Errno, Error, Result};
use std::ffi::CString;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

fn cpath(p: &Path) -> Result<CString> {
    CString::new(p.as_os_str().as_bytes())
        .map_err(|_| Error::Invalid(format!("path {} contains a NUL byte", p.display())))
}

/// posix_fadvise over the whole file.
pub fn fadvise(file: &impl AsRawFd, advice: libc::c_int) -> Result<()> {
    // SAFETY: no memory is passed; the fd is valid while borrowed.
    let r = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, advice) };
    if r != 0 {
        return Err(Error::io(
            "posix_fadvise",
            std::io::Error::from_raw_os_error(r),
        ));
    }
    Ok(())
}

/// Sets O_NOATIME on an open file (as t/io_uring opens its files): its
/// reads no longer check or update the access time. Only the file's owner
/// (or a process with CAP_FOWNER) may; anyone else gets an error that says
/// so.
pub fn set_noatime(file: &impl AsRawFd, path: &Path) -> Result<()> {
    let fd = file.as_raw_fd();
    // SAFETY: F_GETFL and F_SETFL take no pointer; the fd is valid while
    // borrowed.
    let r = unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags < 0 {
            flags
        } else {
            libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NOATIME)
        }
    };
    match r {
        0.. => Ok(()),
        _ => match std::io::Error::last_os_error() {
            e if e.raw_os_error() == Some(libc::EPERM) => Err(Error::Unsupported {
                feature: "--noatime".into(),
                why: format!(
                    "only the owner of {} (or root) may read it without access times",
                    path.display()
                ),
            }),
            e => Err(Error::io(format!("fcntl O_NOATIME {}", path.display()), e)),
        },
    }
}

/// Frees the blocks of `len` bytes from `offset`, keeping the file's
/// size: `fallocate(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE)`, a trim of
/// a file (fio trims files so). Reads of the range then return zeros.
pub fn punch_hole(file: &impl AsRawFd, offset: u64, len: u64) -> std::io::Result<()> {
    // SAFETY: no memory is passed; the fd is valid while borrowed.
    let r = unsafe {
        libc::fallocate(
            file.as_raw_fd(),
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            offset as libc::off_t,
            len as libc::off_t,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// posix_fadvise over `len` bytes from `offset` (a length of 0 means to the
/// end of the file).
pub fn fadvise_range(
    file: &impl AsRawFd,
    offset: u64,
    len: u64,
    advice: libc::c_int,
) -> Result<()> {
    let (Ok(o), Ok(l)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len)) else {
        return Err(Error::Invalid(format!(
            "range {offset}+{len} does not fit a file offset"
        )));
    };
    // SAFETY: no memory is passed; the fd is valid while borrowed.
    let r = unsafe { libc::posix_fadvise(file.as_raw_fd(), o, l, advice) };
    if r != 0 {
        return Err(Error::io(
            "posix_fadvise",
            std::io::Error::from_raw_os_error(r),
        ));
    }
    Ok(())
}

/// O_DIRECT alignment from statx(STATX_DIOALIGN): (memory, offset), or None
/// when the kernel or file system does not report it.
pub fn dio_align(path: &Path) -> Result<Option<(u32, u32)>> {
    let c = cpath(path)?;
    // SAFETY: statx is plain old data.
    let mut st: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: c is a NUL-terminated path, st a valid out-pointer.
    let r = unsafe { libc::statx(libc::AT_FDCWD, c.as_ptr(), 0, libc::STATX_DIOALIGN, &mut st) };
    if r != 0 {
        return Err(Error::last_os(format!("statx {}", path.display())));
    }
    if st.stx_mask & libc::STATX_DIOALIGN == 0 || st.stx_dio_offset_align == 0 {
        return Ok(None);
    }
    Ok(Some((st.stx_dio_mem_align, st.stx_dio_offset_align)))
}

/// Free bytes for unprivileged users, file system block size, and f_type
/// of the file system holding `path`.
pub fn statfs(path: &Path) -> Result<(u64, u64, i64)> {
    let c = cpath(path)?;
    // SAFETY: statfs is plain old data.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: valid path and out-pointer.
    let r = unsafe { libc::statfs(c.as_ptr(), &mut st) };
    if r != 0 {
        return Err(Error::last_os(format!("statfs {}", path.display())));
    }
    Ok((
        st.f_bavail * st.f_bsize as u64,
        st.f_bsize as u64,
        st.f_type as i64,
    ))
}

/// cachestat(2)'s number (Linux 6.5; the same on every architecture).
const SYS_CACHESTAT: libc::c_long = 451;

/// Pages of `file` in the page cache among those holding `len` bytes from
/// `off`, by cachestat(2): no I/O (a `RWF_NOWAIT` read starts read-ahead
/// when the page is missing). `None` where the kernel lacks it.
pub fn cached_pages(file: &impl AsRawFd, off: u64, len: u64) -> Option<u64> {
    #[repr(C)]
    struct Range {
        off: u64,
        len: u64,
    }
    #[repr(C)]
    #[derive(Default)]
    struct Stat {
        nr_cache: u64,
        nr_dirty: u64,
        nr_writeback: u64,
        nr_evicted: u64,
        nr_recently_evicted: u64,
    }
    let range = Range { off, len };
    let mut st = Stat::default();
    // SAFETY: cachestat reads `range` and writes `st`, both live repr(C)
    // values of the layout the kernel's uapi declares
    // (struct cachestat_range, struct cachestat); flags must be 0.
    let r = unsafe {
        libc::syscall(
            SYS_CACHESTAT,
            file.as_raw_fd(),
            &range as *const Range,
            &mut st as *mut Stat,
            0u32,
        )
    };
    (r == 0).then_some(st.nr_cache)
}

/// preadv2 of one buffer with RWF flags; returns bytes read.
pub fn preadv2(
    file: &impl AsRawFd,
    buf: &mut [u8],
    off: u64,
    flags: i32,
) -> std::result::Result<usize, Errno> {
    let iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: one iovec describing `buf`, which is exclusively borrowed for
    // the duration of the call.
    let r = unsafe { libc::preadv2(file.as_raw_fd(), &iov, 1, off as libc::off_t, flags) };
    if r < 0 {
        Err(Errno::last())
    } else {
        Ok(r as usize)
    }
}

/// pwritev2 of one buffer with RWF flags; returns bytes written.
pub fn pwritev2(
    file: &impl AsRawFd,
    buf: &[u8],
    off: u64,
    flags: i32,
) -> std::result::Result<usize, Errno> {
    let iov = libc::iovec {
        iov_base: buf.as_ptr() as *mut libc::c_void,
        iov_len: buf.len(),
    };
    // SAFETY: the kernel only reads from the iovec's buffer, which is
    // borrowed for the duration of the call.
    let r = unsafe { libc::pwritev2(file.as_raw_fd(), &iov, 1, off as libc::off_t, flags) };
    if r < 0 {
        Err(Errno::last())
    } else {
        Ok(r as usize)
    }
}

/// Sets a user extended attribute on a file.
pub fn set_xattr(file: &impl AsRawFd, name: &str, value: &[u8]) -> Result<()> {
    let n = CString::new(name).map_err(|_| Error::Invalid("xattr name".into()))?;
    // SAFETY: valid fd, NUL-terminated name, value pointer/length pair.
    let r = unsafe {
        libc::fsetxattr(
            file.as_raw_fd(),
            n.as_ptr(),
            value.as_ptr().cast(),
            value.len(),
            0,
        )
    };
    if r != 0 {
        return Err(Error::last_os("fsetxattr"));
    }
    Ok(())
}

/// Reads a user extended attribute; None if absent or unsupported.
pub fn get_xattr(path: &Path, name: &str) -> Option<Vec<u8>> {
    let c = cpath(path).ok()?;
    let n = CString::new(name).ok()?;
    let mut buf = vec![0u8; 256];
    // SAFETY: valid path and name; buf is writable for its length.
    let r = unsafe { libc::getxattr(c.as_ptr(), n.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    if r < 0 {
        return None;
    }
    buf.truncate(r as usize);
    Some(buf)
}

/// Flushes all file systems' dirty data (sync(2)).
pub fn sync_all() {
    // SAFETY: sync takes no arguments and cannot fail.
    unsafe { libc::sync() };
}

/// One `open(2)` of an existing path for writing, never creating or
/// truncating it, and without retrying on `EINTR` (std's `File::open`
/// retries, which would block for ever on a FIFO with no reader even after
/// Ctrl-C).
pub fn open_write_once(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::fd::FromRawFd;
    let c = cpath(path).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    // SAFETY: c is a NUL-terminated path; no O_CREAT, so no mode argument.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_WRONLY | libc::O_CLOEXEC | libc::O_NOCTTY,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd was just returned by open and is owned by nobody else.
    Ok(unsafe { std::fs::File::from_raw_fd(fd) })
}

/// Whether the calling process may write `path` (faccessat with the
/// effective ids, as the kernel will check them).
pub fn may_write(path: &Path) -> bool {
    let Ok(c) = cpath(path) else { return false };
    // SAFETY: c is a NUL-terminated path; no memory is written.
    unsafe { libc::faccessat(libc::AT_FDCWD, c.as_ptr(), libc::W_OK, libc::AT_EACCESS) == 0 }
}

/// Whether the file system holding `path` is mounted read-only.
pub fn read_only(path: &Path) -> bool {
    let Ok(c) = cpath(path) else { return false };
    // SAFETY: statvfs is plain old data.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: valid path and out-pointer.
    let r = unsafe { libc::statvfs(c.as_ptr(), &mut st) };
    r == 0 && st.f_flag & libc::ST_RDONLY != 0
}

/// An anonymous in-memory file (`memfd_create`, close-on-exec): page-cache
/// pages with no path and nothing left behind, for probing the kernel's
/// copy out of the page cache.
pub fn memfd(name: &str) -> std::io::Result<std::fs::File> {
    use std::os::fd::FromRawFd;
    let name = CString::new(name).map_err(|_| std::io::Error::other("NUL in memfd name"))?;
    // SAFETY: `name` is a valid NUL-terminated string for the call's duration.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by memfd_create, is open, and nothing
    // else owns it.
    Ok(unsafe { std::fs::File::from_raw_fd(fd) })
}
