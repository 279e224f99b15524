//! SIGINT/SIGTERM handling without a thread: a plain `sigaction` handler,
//! installed without `SA_RESTART`, that only touches atomics (the only
//! async-signal-safe thing a Rust handler may do); and the watchdog that
//! ends a run still blocked in the kernel a grace period after the first
//! signal, also without a thread, removing the files the run made.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

/// Set by the first SIGINT/SIGTERM.
pub static STOP: AtomicBool = AtomicBool::new(false);
/// The first signal received (0: none).
pub static FIRST: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    if FIRST
        .compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst)
        .is_err()
    {
        // A second signal while the first is handled. They often come in
        // pairs (`timeout -s INT` signals the process and then its group;
        // a double Ctrl-C): the run is already stopping, and with the
        // watchdog armed it ends within the grace period whatever happens,
        // so the second changes nothing. Without a watchdog, end now, but
        // only after removing the files this run made.
        if GRACE_S.load(Ordering::SeqCst) == 0 {
            end_now();
        }
        return;
    }
    STOP.store(true, Ordering::SeqCst);
    start_grace();
}

/// Installs `on_signal` for SIGINT and SIGTERM, without `SA_RESTART`, so a
/// system call blocked in the thread that takes the signal returns `EINTR`.
pub fn install() -> std::io::Result<()> {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        handle(sig, on_signal)?;
    }
    Ok(())
}

/// Sets `f` as the handler of `sig`, without `SA_RESTART` and with no
/// signal blocked while it runs. `f` must only make async-signal-safe calls.
fn handle(sig: libc::c_int, f: extern "C" fn(libc::c_int)) -> std::io::Result<()> {
    // SAFETY: sigaction is plain old data; all-zero is a valid value
    // (empty flags, no restorer) that the lines below fill in.
    let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
    sa.sa_sigaction = f as libc::sighandler_t;
    // No SA_RESTART: blocked calls return EINTR.
    sa.sa_flags = 0;
    // SAFETY: sa.sa_mask is a valid sigset_t owned by this frame.
    unsafe { libc::sigemptyset(&mut sa.sa_mask) };
    // SAFETY: `sa` is fully initialised and the handlers given here only
    // touch atomics and make async-signal-safe calls; the old action is
    // not wanted (null).
    if unsafe { libc::sigaction(sig, &sa, std::ptr::null_mut()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// The watchdog without a thread.
//
// A thread that waits for the stop flag would make every iolab process
// multi-threaded, and the kernel then takes a file reference on each
// `read`/`pread`. Instead the first signal arms `alarm(2)`;
// if the run is still going when SIGALRM arrives (a thread blocked in the
// kernel never saw the flag), its handler removes the files this run made
// and `_exit`s. Everything the handler touches is async-signal-safe: the
// slots below are atomics, the paths are NUL-terminated strings that are
// never freed, and the removal is raw system calls (statx, unlink, rmdir,
// getdents64) on stack buffers.

use std::ffi::{c_char, CString};
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicU8};

/// Files the handler can remember at once; a run that makes more (fio jobs
/// with many files) still removes them on the normal path.
const SLOTS: usize = 512;
/// Deepest directory tree the handler removes.
const MAX_DEPTH: u32 = 16;

const FREE: u8 = 0;
const BUSY: u8 = 1;
const READY: u8 = 2;

/// One file the handler must remove if it ends the process.
struct Slot {
    state: AtomicU8,
    /// Registration order: the handler removes newest first (files before
    /// the directory they were made in).
    seq: AtomicU64,
    path: AtomicPtr<c_char>,
    dev: AtomicU64,
    ino: AtomicU64,
    /// Birth time in ns + 1 (0: not known).
    born: AtomicU64,
}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: Slot = Slot {
    state: AtomicU8::new(FREE),
    seq: AtomicU64::new(0),
    path: AtomicPtr::new(std::ptr::null_mut()),
    dev: AtomicU64::new(0),
    ino: AtomicU64::new(0),
    born: AtomicU64::new(0),
};
static TABLE: [Slot; SLOTS] = [EMPTY; SLOTS];
static NEXT_SEQ: AtomicU64 = AtomicU64::new(1);
/// Seconds of grace after the first signal (0: no watchdog armed).
static GRACE_S: AtomicU32 = AtomicU32::new(0);
/// The line the handler writes before it exits (set once by `arm`).
static MESSAGE: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
static MESSAGE_LEN: AtomicU64 = AtomicU64::new(0);

/// Remembers `path` (with its identity) for the handler; returns the slot,
/// or None when the table is full or the path has a NUL byte.
pub fn remember(
    path: &std::path::Path,
    dev: u64,
    ino: u64,
    born_ns: Option<u128>,
) -> Option<usize> {
    use std::os::unix::ffi::OsStrExt;
    let c = CString::new(path.as_os_str().as_bytes()).ok()?;
    for (i, s) in TABLE.iter().enumerate() {
        if s.state
            .compare_exchange(FREE, BUSY, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            // Never freed: the handler may read it on another thread while
            // this one forgets it (a few bytes per file a run makes).
            s.path.store(c.into_raw(), Ordering::Relaxed);
            s.dev.store(dev, Ordering::Relaxed);
            s.ino.store(ino, Ordering::Relaxed);
            let born = born_ns.map_or(0, |b| u64::try_from(b).unwrap_or(u64::MAX - 1) + 1);
            s.born.store(born, Ordering::Relaxed);
            s.seq
                .store(NEXT_SEQ.fetch_add(1, Ordering::Relaxed), Ordering::Relaxed);
            s.state.store(READY, Ordering::Release);
            return Some(i);
        }
    }
    None
}

/// Forgets slot `i` (the file was removed or is to be kept).
pub fn forget(i: usize) {
    if let Some(s) = TABLE.get(i) {
        if s.state
            .compare_exchange(READY, BUSY, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            s.path.store(std::ptr::null_mut(), Ordering::Relaxed);
            s.state.store(FREE, Ordering::Release);
        }
    }
}

/// Arms the watchdog: after the first SIGINT/SIGTERM the process has
/// `grace_s` seconds to end by itself; then SIGALRM's handler removes the
/// remembered files, writes `message` to stderr and exits with 128 + the
/// first signal's number.
pub fn arm(grace_s: u32, message: &'static str) -> std::io::Result<()> {
    MESSAGE_LEN.store(message.len() as u64, Ordering::Relaxed);
    MESSAGE.store(message.as_ptr().cast_mut(), Ordering::Relaxed);
    handle(libc::SIGALRM, on_alarm)?;
    GRACE_S.store(grace_s.max(1), Ordering::SeqCst);
    Ok(())
}

/// Called from the first signal's handler: starts the grace period.
fn start_grace() {
    let g = GRACE_S.load(Ordering::SeqCst);
    if g > 0 {
        // SAFETY: alarm is async-signal-safe and has no preconditions.
        unsafe { libc::alarm(g) };
    }
}

extern "C" fn on_alarm(_sig: libc::c_int) {
    end_now();
}

/// Removes the remembered files that are still the ones made, writes the
/// armed message and exits with 128 + the first signal. Async-signal-safe.
fn end_now() -> ! {
    // Newest first: the files in a directory before the directory.
    let mut last = u64::MAX;
    loop {
        let mut pick: Option<&Slot> = None;
        let mut best = 0;
        for s in &TABLE {
            if s.state.load(Ordering::Acquire) != READY {
                continue;
            }
            let q = s.seq.load(Ordering::Relaxed);
            if q < last && q > best {
                best = q;
                pick = Some(s);
            }
        }
        let Some(s) = pick else { break };
        last = best;
        remove_if_same(s);
    }
    let msg = MESSAGE.load(Ordering::Relaxed);
    if !msg.is_null() {
        let len = MESSAGE_LEN.load(Ordering::Relaxed) as usize;
        // SAFETY: `msg` points to a 'static str of `len` bytes (set by
        // `arm`); write is async-signal-safe.
        unsafe { libc::write(2, msg.cast(), len) };
    }
    let first = FIRST.load(Ordering::SeqCst);
    // SAFETY: _exit is async-signal-safe and never returns.
    unsafe { libc::_exit(if first == 0 { 130 } else { 128 + first }) }
}

/// Removes the slot's path if it is still the file that was remembered.
fn remove_if_same(s: &Slot) {
    let p = s.path.load(Ordering::Relaxed);
    if p.is_null() {
        return;
    }
    // SAFETY: statx is plain data; zeroed is valid and the kernel fills it.
    let mut st: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: `p` is a NUL-terminated string that is never freed; `st` is
    // a valid statx buffer owned by this frame. statx is a system call.
    let r = unsafe {
        libc::statx(
            libc::AT_FDCWD,
            p,
            libc::AT_SYMLINK_NOFOLLOW,
            libc::STATX_BASIC_STATS | libc::STATX_BTIME,
            &mut st,
        )
    };
    if r != 0 {
        return;
    }
    let dev = libc::makedev(st.stx_dev_major, st.stx_dev_minor);
    let born = s.born.load(Ordering::Relaxed);
    let same_born = born == 0
        || st.stx_mask & libc::STATX_BTIME == 0
        || born - 1
            == (st.stx_btime.tv_sec as u64)
                .saturating_mul(1_000_000_000)
                .saturating_add(u64::from(st.stx_btime.tv_nsec));
    if dev != s.dev.load(Ordering::Relaxed)
        || st.stx_ino != s.ino.load(Ordering::Relaxed)
        || !same_born
    {
        return;
    }
    if u32::from(st.stx_mode) & libc::S_IFMT == libc::S_IFDIR {
        // SAFETY: `p` is a valid path; open is async-signal-safe.
        let fd = unsafe {
            libc::open(
                p,
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        };
        if fd >= 0 {
            empty_dir(fd, 0);
            // SAFETY: fd was opened above and is closed once.
            unsafe { libc::close(fd) };
        }
        // SAFETY: `p` is a valid path.
        unsafe { libc::rmdir(p) };
    } else {
        // SAFETY: `p` is a valid path.
        unsafe { libc::unlink(p) };
    }
}

/// Removes everything inside the open directory `dir`, with raw system
/// calls only (no allocation: the handler may have interrupted malloc).
fn empty_dir(dir: libc::c_int, depth: u32) {
    if depth >= MAX_DEPTH {
        return;
    }
    #[repr(C, align(8))]
    struct Buf([u8; 2048]);
    let mut buf = Buf([0; 2048]);
    // Entries removed while reading can make getdents skip others: read
    // again from the start until a pass removes nothing.
    for _ in 0..64 {
        let mut removed = false;
        // SAFETY: dir is an open directory.
        unsafe { libc::lseek(dir, 0, libc::SEEK_SET) };
        loop {
            // SAFETY: buf is writable for its length; getdents64 fills it
            // with linux_dirent64 records.
            let n = unsafe {
                libc::syscall(libc::SYS_getdents64, dir, buf.0.as_mut_ptr(), buf.0.len())
            };
            if n <= 0 {
                break;
            }
            let mut off = 0usize;
            while off + 19 < n as usize {
                // linux_dirent64: d_ino u64, d_off i64, d_reclen u16,
                // d_type u8, then the NUL-terminated name at byte 19.
                let reclen = u16::from_ne_bytes([buf.0[off + 16], buf.0[off + 17]]) as usize;
                let dtype = buf.0[off + 18];
                let name = buf.0[off + 19..].as_ptr().cast::<c_char>();
                if reclen == 0 {
                    break;
                }
                let dot = buf.0[off + 19] == b'.'
                    && (buf.0[off + 20] == 0 || (buf.0[off + 20] == b'.' && buf.0[off + 21] == 0));
                if !dot {
                    removed |= remove_entry(dir, name, dtype, depth);
                }
                off += reclen;
            }
        }
        if !removed {
            break;
        }
    }
}

/// Removes one entry of `dir` (a directory's contents first). A file
/// system that does not report types (DT_UNKNOWN) answers EISDIR.
fn remove_entry(dir: libc::c_int, name: *const c_char, dtype: u8, depth: u32) -> bool {
    if dtype != libc::DT_DIR {
        // SAFETY: `name` is NUL-terminated inside the getdents buffer.
        if unsafe { libc::unlinkat(dir, name, 0) } == 0 {
            return true;
        }
        // SAFETY: errno is this thread's; reading it is signal-safe.
        if unsafe { *libc::__errno_location() } != libc::EISDIR {
            return false;
        }
    }
    // SAFETY: `name` is NUL-terminated inside the getdents buffer.
    let sub = unsafe {
        libc::openat(
            dir,
            name,
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    if sub >= 0 {
        empty_dir(sub, depth + 1);
        // SAFETY: sub was opened above and is closed once.
        unsafe { libc::close(sub) };
    }
    // SAFETY: as above.
    unsafe { libc::unlinkat(dir, name, libc::AT_REMOVEDIR) == 0 }
}
