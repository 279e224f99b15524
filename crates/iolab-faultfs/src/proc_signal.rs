//! Whether a thread blocked in our file system has a SIGINT, SIGTERM or
//! SIGKILL pending (SIGKILL: its process is exiting). fuser ignores FUSE_INTERRUPT, so a stalled read looks here
//! instead, the way a kernel file system's wait would be cut short.

/// Whether thread `tid` (or its process) has SIGINT, SIGTERM or SIGKILL
/// pending.
pub fn stop_pending(tid: u32) -> bool {
    let Ok(s) = std::fs::read_to_string(format!("/proc/{tid}/status")) else {
        return false;
    };
    let mask = [libc::SIGINT, libc::SIGTERM, libc::SIGKILL]
        .iter()
        .fold(0u64, |m, s| m | 1u64 << (s - 1));
    s.lines()
        .filter(|l| l.starts_with("SigPnd:") || l.starts_with("ShdPnd:"))
        .filter_map(|l| u64::from_str_radix(l.split_whitespace().nth(1)?, 16).ok())
        .any(|bits| bits & mask != 0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn nothing_pending_here() {
        assert!(!super::stop_pending(std::process::id()));
        // A thread that does not exist has nothing pending.
        assert!(!super::stop_pending(u32::MAX));
    }
}
