//! Processes, CPU pinning, raw system calls, clocks and anonymous memory:
//! the kernel entry points the system microbenchmarks (`iolab sys`) need.
//!
//! Code that runs in a forked child of a (possibly multi-threaded) parent may
//! only make async-signal-safe calls: no allocation, no locks, no panics. The
//! child bodies below use raw `libc` calls on memory prepared before `fork`
//! and end with `_exit`.

use crate::error::{Error, Result};
use std::ffi::CStr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// getpid through the real system call (glibc would not cache it, but the
/// raw `syscall` makes the intent explicit).
pub fn raw_getpid() -> i64 {
    // SAFETY: SYS_getpid takes no arguments and touches no memory.
    unsafe { libc::syscall(libc::SYS_getpid) as i64 }
}

/// getuid through the real system call.
pub fn raw_getuid() -> i64 {
    // SAFETY: SYS_getuid takes no arguments and touches no memory.
    unsafe { libc::syscall(libc::SYS_getuid) as i64 }
}

/// The effective user id: whose permissions this process acts with.
pub fn euid() -> u32 {
    // SAFETY: geteuid takes no arguments, touches no memory, cannot fail.
    unsafe { libc::geteuid() }
}

/// fstat of `fd`; returns the size the kernel reports.
pub fn fstat_size(fd: RawFd) -> Result<i64> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: st is a writable stat buffer of the right size; the caller
    // keeps fd open for the call.
    let r = unsafe { libc::fstat(fd, st.as_mut_ptr()) };
    if r != 0 {
        return Err(Error::last_os("fstat"));
    }
    // SAFETY: fstat returned 0, so it filled st.
    Ok(unsafe { st.assume_init() }.st_size)
}

/// lseek(fd, off, SEEK_SET).
pub fn lseek_set(fd: RawFd, off: i64) -> Result<i64> {
    // SAFETY: lseek touches no user memory.
    let r = unsafe { libc::lseek(fd, off, libc::SEEK_SET) };
    if r < 0 {
        return Err(Error::last_os("lseek"));
    }
    Ok(r)
}

/// clock_getres of `clock`, ns.
pub fn clock_res_ns(clock: libc::clockid_t) -> Result<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid, writable timespec.
    let r = unsafe { libc::clock_getres(clock, &mut ts) };
    if r != 0 {
        return Err(Error::last_os("clock_getres"));
    }
    Ok(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// clock_gettime of `clock` (through the vDSO for the usual clocks), ns.
#[inline]
pub fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid, writable timespec; a bad clock id only
    // returns an error, leaving ts zero.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The time-stamp counter read with RDTSCP (waits for earlier instructions).
#[cfg(target_arch = "x86_64")]
#[inline]
pub fn rdtscp() -> Option<u64> {
    let mut aux = 0u32;
    // SAFETY: RDTSCP exists on every x86_64 CPU Linux supports with the
    // rdtscp flag; callers check /proc/cpuinfo first (see prim::has_rdtscp).
    Some(unsafe { core::arch::x86_64::__rdtscp(&mut aux) })
}

/// The time-stamp counter is x86 only.
#[cfg(not(target_arch = "x86_64"))]
pub fn rdtscp() -> Option<u64> {
    None
}

/// Pins the calling thread to one CPU.
pub fn pin_to_cpu(cpu: usize) -> Result<()> {
    pin_to_cpus(&[cpu])
}

/// Lets the calling thread run only on `cpus` (sched_setaffinity).
pub fn pin_to_cpus(cpus: &[usize]) -> Result<()> {
    // SAFETY: cpu_set_t is plain data; zeroed is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus {
        if cpu >= libc::CPU_SETSIZE as usize {
            return Err(Error::Invalid(format!("cpu {cpu} is out of range")));
        }
        // SAFETY: cpu < CPU_SETSIZE was checked just above.
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    // SAFETY: set is a valid cpu_set_t of the size passed.
    let r = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if r != 0 {
        return Err(Error::last_os(format!("sched_setaffinity cpus {cpus:?}")));
    }
    Ok(())
}

/// The CPUs the calling thread may run on.
pub fn allowed_cpus() -> Result<Vec<usize>> {
    // SAFETY: cpu_set_t is plain data; zeroed is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: set is a valid, writable cpu_set_t of the size passed.
    let r = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if r != 0 {
        return Err(Error::last_os("sched_getaffinity"));
    }
    Ok((0..libc::CPU_SETSIZE as usize)
        // SAFETY: every index is below CPU_SETSIZE.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect())
}

/// A pipe with both ends close-on-exec: (read end, write end).
pub fn pipe() -> Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: fds is a writable array of two ints, as pipe2 requires.
    let r = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    if r != 0 {
        return Err(Error::last_os("pipe2"));
    }
    // SAFETY: pipe2 succeeded, so both fds are fresh and owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Waits for child `pid`; returns its exit status (or 128 + signal).
pub fn wait_pid(pid: libc::pid_t) -> Result<i32> {
    let mut status = 0;
    loop {
        // SAFETY: status is a valid int to write to.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == pid {
            break;
        }
        if r < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        return Err(Error::last_os(format!("waitpid {pid}")));
    }
    if libc::WIFEXITED(status) {
        Ok(libc::WEXITSTATUS(status))
    } else if libc::WIFSIGNALED(status) {
        Ok(128 + libc::WTERMSIG(status))
    } else {
        Ok(255)
    }
}

/// Kills our child `pid` (SIGKILL) and reaps it.
pub fn kill_wait(pid: libc::pid_t) {
    // SAFETY: kill with an integer pid and signal touches no memory; pid is
    // a child this process forked and has not reaped yet.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let _ = wait_pid(pid);
}

fn fork() -> Result<libc::pid_t> {
    // SAFETY: fork itself is always safe to call; what the child may do
    // afterwards is restricted by each caller (async-signal-safe only).
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(Error::last_os("fork"));
    }
    Ok(pid)
}

/// Ends the calling (child) process at once, without running atexit handlers
/// or destructors.
fn child_exit(code: i32) -> ! {
    // SAFETY: _exit is async-signal-safe and never returns.
    unsafe { libc::_exit(code) }
}

/// fork; the child calls `_exit(0)` at once; the parent waits for it.
pub fn fork_exit_wait() -> Result<()> {
    let pid = fork()?;
    if pid == 0 {
        child_exit(0);
    }
    match wait_pid(pid)? {
        0 => Ok(()),
        s => Err(Error::Invalid(format!(
            "forked child exited with status {s}"
        ))),
    }
}

/// posix_spawn of `path` with no arguments and an empty environment, then
/// waitpid; returns the program's exit status.
pub fn spawn_wait(path: &CStr) -> Result<i32> {
    let argv = [path.as_ptr() as *mut libc::c_char, std::ptr::null_mut()];
    let envp = [std::ptr::null_mut::<libc::c_char>()];
    let mut pid: libc::pid_t = 0;
    // SAFETY: path is NUL-terminated; argv and envp are NULL-terminated
    // arrays that outlive the call; null file actions and attributes mean
    // defaults.
    let r = unsafe {
        libc::posix_spawn(
            &mut pid,
            path.as_ptr(),
            std::ptr::null(),
            std::ptr::null(),
            argv.as_ptr(),
            envp.as_ptr(),
        )
    };
    if r != 0 {
        return Err(Error::io(
            format!("posix_spawn {}", path.to_string_lossy()),
            std::io::Error::from_raw_os_error(r),
        ));
    }
    wait_pid(pid)
}

fn raw_read1(fd: RawFd, b: &mut u8) -> bool {
    loop {
        // SAFETY: b is one writable byte.
        let r = unsafe { libc::read(fd, (b as *mut u8).cast(), 1) };
        if r == 1 {
            return true;
        }
        // SAFETY: __errno_location returns this thread's errno slot.
        if r < 0 && unsafe { *libc::__errno_location() } == libc::EINTR {
            continue;
        }
        return false;
    }
}

fn raw_write_all(fd: RawFd, bytes: &[u8]) -> bool {
    let mut done = 0;
    while done < bytes.len() {
        // SAFETY: the pointer and length stay inside `bytes`.
        let r = unsafe { libc::write(fd, bytes.as_ptr().add(done).cast(), bytes.len() - done) };
        if r > 0 {
            done += r as usize;
            continue;
        }
        // SAFETY: __errno_location returns this thread's errno slot.
        if r < 0 && unsafe { *libc::__errno_location() } == libc::EINTR {
            continue;
        }
        return false;
    }
    true
}

/// Forks a child that (optionally pinned to `cpu`) reads one byte from
/// `rx` and writes it to `tx`, `rounds` times, then exits. Returns its pid.
pub fn fork_echo_child(
    rx: RawFd,
    tx: RawFd,
    rounds: u64,
    cpu: Option<usize>,
) -> Result<libc::pid_t> {
    let pid = fork()?;
    if pid == 0 {
        // Child: raw system calls only.
        if let Some(c) = cpu {
            if c < libc::CPU_SETSIZE as usize {
                // SAFETY: plain data, zeroed is the empty set; c < CPU_SETSIZE.
                let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
                // SAFETY: as above.
                unsafe { libc::CPU_SET(c, &mut set) };
                // SAFETY: set is valid for the size passed.
                unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
            }
        }
        let mut b = 0u8;
        for _ in 0..rounds {
            if !raw_read1(rx, &mut b) || !raw_write_all(tx, &[b]) {
                child_exit(1);
            }
        }
        child_exit(0);
    }
    Ok(pid)
}

/// One child's reading job for [`fork_readers`]: an open file, a buffer of
/// `block` bytes (aligned for O_DIRECT) and the offsets to read, all made
/// before the fork.
pub struct ReadJob<'a> {
    /// The open file the child reads.
    pub fd: RawFd,
    /// Where each read lands (one block, reused).
    pub buf: &'a mut [u8],
    /// File offsets, one read of the buffer's length each.
    pub offsets: &'a [u64],
}

/// Forks one child per job. The children wait until all are forked, then
/// each preads its offsets into its buffer and reports its elapsed
/// CLOCK_MONOTONIC ns through a pipe. Returns the elapsed ns per child (in
/// job order).
pub fn fork_readers(jobs: &mut [ReadJob<'_>]) -> Result<Vec<u64>> {
    let (go_r, go_w) = pipe()?;
    let (res_r, res_w) = pipe()?;
    let mut pids = Vec::with_capacity(jobs.len());
    for (i, job) in jobs.iter_mut().enumerate() {
        let pid = match fork() {
            Ok(p) => p,
            Err(e) => {
                drop(go_w);
                for p in pids {
                    let _ = wait_pid(p);
                }
                return Err(e);
            }
        };
        if pid == 0 {
            child_read(i, job, go_r.as_raw_fd(), res_w.as_raw_fd());
        }
        pids.push(pid);
    }
    drop(res_w);
    drop(go_r);
    let go = vec![1u8; jobs.len()];
    let wrote = raw_write_all(go_w.as_raw_fd(), &go);
    drop(go_w);
    let (out, got) = if wrote {
        collect_times(res_r, jobs.len())
    } else {
        (vec![0u64; jobs.len()], 0)
    };
    let mut bad = None;
    for p in pids {
        match wait_pid(p) {
            Ok(0) => {}
            Ok(s) => bad = Some(s),
            Err(e) => return Err(e),
        }
    }
    if let Some(s) = bad {
        return Err(Error::Invalid(format!(
            "a reader process exited with status {s}"
        )));
    }
    if got < jobs.len() {
        return Err(Error::Invalid("a reader process reported no time".into()));
    }
    Ok(out)
}

/// In the child of job `i`: waits for the go byte on `go`, preads the
/// job's offsets, writes (i, elapsed ns) to `res` and exits; never returns.
fn child_read(i: usize, job: &mut ReadJob<'_>, go: RawFd, res: RawFd) -> ! {
    let mut b = 0u8;
    if !raw_read1(go, &mut b) {
        child_exit(2);
    }
    let t0 = clock_ns(libc::CLOCK_MONOTONIC);
    let len = job.buf.len();
    for &off in job.offsets {
        // SAFETY: buf is a writable region of len bytes owned by the
        // (copied) job; fd was opened by the parent.
        let r =
            unsafe { libc::pread(job.fd, job.buf.as_mut_ptr().cast(), len, off as libc::off_t) };
        if r < 0 {
            child_exit(3);
        }
    }
    let dt = clock_ns(libc::CLOCK_MONOTONIC).saturating_sub(t0);
    let mut msg = [0u8; 16];
    msg[..8].copy_from_slice(&(i as u64).to_le_bytes());
    msg[8..].copy_from_slice(&dt.to_le_bytes());
    // A 16-byte write to a pipe is atomic (below PIPE_BUF).
    if !raw_write_all(res, &msg) {
        child_exit(4);
    }
    child_exit(0)
}

/// Reads up to `n` (job, elapsed ns) messages from the children's pipe:
/// the times by job, and how many came.
fn collect_times(res: OwnedFd, n: usize) -> (Vec<u64>, usize) {
    use std::io::Read;
    let mut out = vec![0u64; n];
    let mut got = 0;
    let mut msg = [0u8; 16];
    let mut res_file = std::fs::File::from(res);
    while got < n {
        if res_file.read_exact(&mut msg).is_err() {
            break;
        }
        let i = u64::from_le_bytes(msg[..8].try_into().unwrap_or_default()) as usize;
        if let Some(slot) = out.get_mut(i) {
            *slot = u64::from_le_bytes(msg[8..].try_into().unwrap_or_default());
        }
        got += 1;
    }
    (out, got)
}

/// A child process holding `bytes` of locked anonymous memory until it is
/// killed; it dies with the thread that forked it (PR_SET_PDEATHSIG) and
/// offers itself to the OOM killer first (oom_score_adj 1000).
pub struct BalloonChild {
    pid: libc::pid_t,
    _ctl: OwnedFd,
}

impl BalloonChild {
    /// Forks the helper and waits until its memory is locked.
    pub fn new(bytes: usize) -> Result<Self> {
        let (ready_r, ready_w) = pipe()?;
        let (ctl_r, ctl_w) = pipe()?;
        // SAFETY: getpid has no preconditions.
        let parent = unsafe { libc::getpid() };
        let pid = fork()?;
        if pid == 0 {
            // Child: raw system calls only.
            // SAFETY: prctl with integer arguments touches no memory.
            unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) };
            // SAFETY: getppid has no preconditions.
            if unsafe { libc::getppid() } != parent {
                child_exit(5);
            }
            let path = c"/proc/self/oom_score_adj";
            // SAFETY: path is NUL-terminated.
            let fd = unsafe { libc::open(path.as_ptr(), libc::O_WRONLY) };
            if fd >= 0 {
                raw_write_all(fd, b"1000");
                // SAFETY: fd was just opened by this process.
                unsafe { libc::close(fd) };
            }
            // SAFETY: a fresh private anonymous mapping at a kernel-chosen address.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    bytes.max(1),
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            if p != libc::MAP_FAILED {
                // Huge pages make locking many GiB far faster (fewer faults).
                // SAFETY: advice on exactly the mapping just made.
                unsafe { libc::madvise(p, bytes.max(1), libc::MADV_HUGEPAGE) };
            }
            let ok = p != libc::MAP_FAILED
                // SAFETY: p..p+bytes is the mapping just made; mlock faults it in.
                && unsafe { libc::mlock(p, bytes.max(1)) } == 0;
            raw_write_all(ready_w.as_raw_fd(), &[ok as u8]);
            let mut b = 0u8;
            // Blocks until the parent closes the control pipe (or dies).
            raw_read1(ctl_r.as_raw_fd(), &mut b);
            child_exit(0);
        }
        drop(ready_w);
        drop(ctl_r);
        let mut b = 0u8;
        let got = raw_read1(ready_r.as_raw_fd(), &mut b);
        let me = BalloonChild { pid, _ctl: ctl_w };
        if !got || b != 1 {
            return Err(Error::Unsupported {
                feature: "memory balloon".into(),
                why: format!("could not mmap+mlock {bytes} bytes (RLIMIT_MEMLOCK or memory)"),
            });
        }
        Ok(me)
    }

    /// Whether the helper is still alive (it may have been OOM-killed).
    pub fn alive(&self) -> bool {
        let mut status = 0;
        // SAFETY: status is a valid int; WNOHANG does not block.
        let r = unsafe { libc::waitpid(self.pid, &mut status, libc::WNOHANG) };
        r == 0
    }
}

impl Drop for BalloonChild {
    fn drop(&mut self) {
        kill_wait(self.pid);
    }
}

/// A private anonymous read-write mapping, unmapped on drop.
pub struct AnonMap {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: uniquely owned plain memory, like a Vec<u8>.
unsafe impl Send for AnonMap {}
// SAFETY: shared access hands out only &[u8].
unsafe impl Sync for AnonMap {}

impl AnonMap {
    /// Maps `len` bytes (not yet touched, so not yet backed); `small_pages`
    /// asks for 4 KiB pages only (MADV_NOHUGEPAGE).
    pub fn new(len: usize, small_pages: bool) -> Result<Self> {
        let len = len.max(1);
        // SAFETY: a fresh private anonymous mapping at a kernel-chosen address.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(Error::last_os(format!("mmap {len} anonymous bytes")));
        }
        if small_pages {
            // SAFETY: the range is exactly the mapping just made; advice only.
            unsafe { libc::madvise(p, len, libc::MADV_NOHUGEPAGE) };
        }
        Ok(AnonMap { ptr: p.cast(), len })
    }

    /// The mapped bytes (zero until written).
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: ptr..ptr+len is a live read-write mapping owned by self,
        // borrowed mutably through &mut self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for AnonMap {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the region mmap returned; no borrow of it
        // outlives self.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}
