//! getrusage for the whole process.

/// Raw resource usage of the process (all threads).
pub fn getrusage_self() -> libc::rusage {
    // SAFETY: rusage is plain old data; zeroed is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: ru is a valid out-pointer; RUSAGE_SELF cannot fail.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    ru
}

/// Raw resource usage of the calling thread only (RUSAGE_THREAD).
pub fn getrusage_thread() -> libc::rusage {
    // SAFETY: rusage is plain old data; zeroed is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: ru is a valid out-pointer; RUSAGE_THREAD exists since Linux
    // 2.6.26 and cannot fail for the calling thread.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    ru
}
