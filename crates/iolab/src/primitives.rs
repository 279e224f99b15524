//! Safe primitives over the kernel's basic operations, for measuring what
//! they cost (`iolab sys`): raw system calls, clocks and the time-stamp
//! counter, CPU pinning, fork / posix_spawn / waitpid, pipes, processes
//! that echo or read files, anonymous and file mappings, and a memory
//! balloon that shrinks the page cache without touching cgroups.
//!
//! ```
//! let pid = iolab::primitives::getpid_syscall();
//! assert_eq!(pid as u32, std::process::id());
//! ```

use crate::error::{Error, Result};
use crate::kernel::{mman, proc};
use std::ffi::CString;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// getpid through the real system call (`syscall(SYS_getpid)`).
#[inline]
pub fn getpid_syscall() -> i64 {
    proc::raw_getpid()
}

/// getuid through the real system call (`syscall(SYS_getuid)`).
#[inline]
pub fn getuid_syscall() -> i64 {
    proc::raw_getuid()
}

/// fstat of an open file; returns the size the kernel reports.
#[inline]
pub fn fstat_size(f: &File) -> Result<i64> {
    proc::fstat_size(f.as_raw_fd())
}

/// lseek(SEEK_SET) on an open file; returns the new offset.
#[inline]
pub fn lseek_set(f: &File, off: i64) -> Result<i64> {
    proc::lseek_set(f.as_raw_fd(), off)
}

/// Resolution of CLOCK_MONOTONIC as clock_getres reports it, ns.
pub fn monotonic_res_ns() -> Result<u64> {
    proc::clock_res_ns(libc::CLOCK_MONOTONIC)
}

/// CLOCK_MONOTONIC now, ns (clock_gettime, served by the vDSO).
#[inline]
pub fn monotonic_ns() -> u64 {
    proc::clock_ns(libc::CLOCK_MONOTONIC)
}

/// CPU time of the calling thread, ns (CLOCK_THREAD_CPUTIME_ID): what a
/// CPU-bound loop cost, without the time it spent descheduled.
#[inline]
pub fn thread_cpu_ns() -> u64 {
    proc::clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// Whether this CPU has the RDTSCP instruction (from /proc/cpuinfo flags).
pub fn has_rdtscp() -> bool {
    cfg!(target_arch = "x86_64")
        && std::fs::read_to_string("/proc/cpuinfo")
            .map(|s| {
                s.lines()
                    .find(|l| l.starts_with("flags"))
                    .is_some_and(|l| l.split_whitespace().any(|w| w == "rdtscp"))
            })
            .unwrap_or(false)
}

/// Reads the time-stamp counter with RDTSCP; `None` when the CPU lacks it.
/// Call [`has_rdtscp`] once and pass its answer.
#[inline]
pub fn rdtscp(available: bool) -> Option<u64> {
    if available {
        proc::rdtscp()
    } else {
        None
    }
}

/// Pins the calling thread to CPU `cpu`.
pub fn pin_to_cpu(cpu: usize) -> Result<()> {
    proc::pin_to_cpu(cpu)
}

/// Lets the calling thread run only on `cpus`.
pub fn pin_to_cpus(cpus: &[usize]) -> Result<()> {
    proc::pin_to_cpus(cpus)
}

/// The CPUs the calling thread may run on.
pub fn allowed_cpus() -> Result<Vec<usize>> {
    proc::allowed_cpus()
}

/// A close-on-exec pipe as two files: (read end, write end).
pub fn pipe() -> Result<(File, File)> {
    let (r, w) = proc::pipe()?;
    Ok((File::from(r), File::from(w)))
}

/// fork; the child exits at once with `_exit(0)`; waits for it.
pub fn fork_exit_wait() -> Result<()> {
    proc::fork_exit_wait()
}

/// posix_spawn of `program` (no arguments, empty environment) and waitpid;
/// returns its exit status.
pub fn spawn_wait(program: &Path) -> Result<i32> {
    let c = CString::new(program.as_os_str().as_bytes())
        .map_err(|_| Error::Invalid(format!("path {} contains a NUL byte", program.display())))?;
    proc::spawn_wait(&c)
}

/// A forked process that echoes single bytes from one pipe to another, for
/// a fixed number of rounds (the other end of a ping-pong).
#[derive(Debug)]
pub struct EchoProcess {
    pid: i32,
    waited: bool,
}

impl EchoProcess {
    /// Forks the echo process: it reads a byte from `rx` and writes it to
    /// `tx`, `rounds` times, optionally pinned to `cpu`, then exits.
    pub fn start(rx: &File, tx: &File, rounds: u64, cpu: Option<usize>) -> Result<Self> {
        let pid = proc::fork_echo_child(rx.as_raw_fd(), tx.as_raw_fd(), rounds, cpu)?;
        Ok(EchoProcess { pid, waited: false })
    }

    /// Waits for the process; returns its exit status.
    pub fn wait(mut self) -> Result<i32> {
        self.waited = true;
        proc::wait_pid(self.pid)
    }
}

impl Drop for EchoProcess {
    fn drop(&mut self) {
        if !self.waited {
            // The child exits when its pipes close or its rounds end; make
            // sure it does not outlive an error path.
            proc::kill_wait(self.pid);
        }
    }
}

/// One process's share of [`read_in_processes`]: an open file (possibly
/// O_DIRECT), a buffer of one block (aligned as the file needs) and the
/// offsets to read.
pub struct ReadShare<'a> {
    /// The file to read.
    pub file: &'a File,
    /// One block; its length is the read size.
    pub buf: &'a mut [u8],
    /// Offsets to read, in order.
    pub offsets: &'a [u64],
}

/// Forks one process per share; they start together, each reads its
/// offsets with pread, and each reports its elapsed time. Returns the
/// elapsed ns per share, in order.
pub fn read_in_processes(shares: &mut [ReadShare<'_>]) -> Result<Vec<u64>> {
    let mut jobs: Vec<proc::ReadJob<'_>> = shares
        .iter_mut()
        .map(|s| proc::ReadJob {
            fd: s.file.as_raw_fd(),
            buf: &mut *s.buf,
            offsets: s.offsets,
        })
        .collect();
    proc::fork_readers(&mut jobs)
}

/// A helper process holding locked (mlock) memory, so the page cache has
/// that much less room. It is killed when this value drops, and dies with
/// iolab if iolab is killed (PR_SET_PDEATHSIG); it volunteers to the OOM
/// killer first, so it cannot starve other processes.
pub struct Balloon {
    child: proc::BalloonChild,
    bytes: u64,
}

impl Balloon {
    /// Locks `bytes` of memory in a helper process; returns when locked.
    /// The helper is killed if the calling thread ends (that is how
    /// PR_SET_PDEATHSIG works), so keep the balloon on the thread that
    /// made it.
    pub fn inflate(bytes: u64) -> Result<Self> {
        let n = usize::try_from(bytes)
            .map_err(|_| Error::Invalid(format!("balloon of {bytes} bytes is too large")))?;
        Ok(Balloon {
            child: proc::BalloonChild::new(n)?,
            bytes,
        })
    }

    /// The locked size, bytes.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Whether the helper still holds its memory (it may be OOM-killed).
    pub fn alive(&self) -> bool {
        self.child.alive()
    }
}

/// Private anonymous memory from mmap, not touched yet (each first touch of
/// a page is a minor page fault); unmapped on drop.
pub struct AnonMemory {
    map: proc::AnonMap,
}

impl AnonMemory {
    /// Maps `len` bytes; `small_pages` forbids transparent huge pages so
    /// every 4 KiB page faults on its own.
    pub fn new(len: usize, small_pages: bool) -> Result<Self> {
        Ok(AnonMemory {
            map: proc::AnonMap::new(len, small_pages)?,
        })
    }

    /// The bytes (zero until written).
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        self.map.as_mut_slice()
    }
}

/// A read-only shared mapping of a file, with random-access advice (no
/// read-ahead), so each first touch of a page that is not cached is a major
/// page fault.
pub struct FileMapping {
    map: mman::Mapping,
}

impl FileMapping {
    /// Maps the first `len` bytes of `file` and advises random access.
    pub fn new_random(file: &File, len: usize) -> Result<Self> {
        let map = mman::Mapping::new(file, len)?;
        map.advise(mman::Advice::Random)?;
        Ok(FileMapping { map })
    }

    /// The mapped bytes (reading may fault pages in from the file).
    pub fn bytes(&self) -> &[u8] {
        self.map.bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_calls_agree_with_std() {
        assert_eq!(getpid_syscall() as u32, std::process::id());
        assert!(getuid_syscall() >= 0);
        assert!(monotonic_res_ns().unwrap() >= 1);
        let a = monotonic_ns();
        assert!(monotonic_ns() >= a);
        let f = File::open("/proc/self/exe").unwrap();
        assert!(fstat_size(&f).unwrap() > 0);
        assert_eq!(lseek_set(&f, 10).unwrap(), 10);
        assert!(!allowed_cpus().unwrap().is_empty());
    }

    #[test]
    fn processes_and_pipes() {
        fork_exit_wait().unwrap();
        if Path::new("/bin/true").exists() {
            assert_eq!(spawn_wait(Path::new("/bin/true")).unwrap(), 0);
        }
        assert!(spawn_wait(Path::new("/nonexistent/x")).is_err());
        let (r1, w1) = pipe().unwrap();
        let (r2, w2) = pipe().unwrap();
        let child = EchoProcess::start(&r1, &w2, 3, None).unwrap();
        use std::io::{Read, Write};
        let (mut w1, mut r2) = (&w1, &r2);
        for i in 0..3u8 {
            w1.write_all(&[i]).unwrap();
            let mut b = [0u8];
            r2.read_exact(&mut b).unwrap();
            assert_eq!(b[0], i);
        }
        assert_eq!(child.wait().unwrap(), 0);
    }

    #[test]
    fn readers_and_memory() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        std::fs::write(&p, vec![3u8; 16384]).unwrap();
        let f = File::open(&p).unwrap();
        let mut b1 = vec![0u8; 4096];
        let mut b2 = vec![0u8; 4096];
        let offs = [0u64, 4096, 8192];
        let mut shares = [
            ReadShare {
                file: &f,
                buf: &mut b1,
                offsets: &offs,
            },
            ReadShare {
                file: &f,
                buf: &mut b2,
                offsets: &offs,
            },
        ];
        let t = read_in_processes(&mut shares).unwrap();
        assert_eq!(t.len(), 2);
        let mut a = AnonMemory::new(1 << 16, true).unwrap();
        a.bytes_mut()[100] = 1;
        let m = FileMapping::new_random(&f, 16384).unwrap();
        assert_eq!(m.bytes()[5], 3);
        let b = Balloon::inflate(1 << 20).unwrap();
        assert!(b.alive());
        assert_eq!(b.bytes(), 1 << 20);
    }
}
