//! Stopping on SIGINT (Ctrl-C) and SIGTERM without a signal thread.
//!
//! [`install`] sets a handler that only raises a flag: the first signal asks
//! the run to stop (every loop that can block checks [`stop_flag`]). A
//! second one (signals often come in pairs: `timeout -s INT` signals the
//! process and its group) changes nothing once [`arm_watchdog`] has armed
//! the watchdog, which ends the process within its grace period anyway;
//! without it, the second signal ends the process at once, after removing
//! the files given to [`remove_at_forced_exit`]. The handler is installed without
//! `SA_RESTART`, so an `open` or `read` blocked in the main thread (a FIFO
//! with no writer, a stalled file system) returns `EINTR`, and the code
//! that made the call sees the flag and gives up.
//!
//! ```
//! let stop = iolab::stop::stop_flag();
//! assert!(!stop.load(std::sync::atomic::Ordering::Relaxed));
//! assert_eq!(iolab::stop::received(), None);
//! ```

use crate::kernel::signal as imp;
use std::sync::atomic::{AtomicBool, Ordering};

/// Installs the SIGINT/SIGTERM handler and returns the flag it raises.
pub fn install() -> std::io::Result<&'static AtomicBool> {
    imp::install()?;
    Ok(&imp::STOP)
}

/// The flag the handler raises (also usable before [`install`]).
pub fn stop_flag() -> &'static AtomicBool {
    &imp::STOP
}

/// The first signal received (`libc::SIGINT` or `libc::SIGTERM`), if any.
pub fn received() -> Option<i32> {
    match imp::FIRST.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// The exit status a process stopped by the signal should use: 130 for
/// SIGINT, 143 for SIGTERM (128 + the signal number, as shells report).
pub fn exit_status() -> Option<i32> {
    received().map(|s| 128 + s)
}

/// A file the watchdog removes if it has to end the process (see
/// [`arm_watchdog`]); give it back with [`forget_at_forced_exit`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ForcedExitSlot(usize);

/// Remembers a file (or directory tree) this process made, by identity, so
/// the watchdog can remove it from its signal handler; None when the
/// handler's fixed table is full (the normal exit path still removes it).
pub fn remove_at_forced_exit(
    path: &std::path::Path,
    ident: crate::file::FileIdent,
) -> Option<ForcedExitSlot> {
    imp::remember(path, ident.dev, ident.ino, ident.born_ns).map(ForcedExitSlot)
}

/// Forgets a file given to [`remove_at_forced_exit`] (removed, or kept).
pub fn forget_at_forced_exit(slot: ForcedExitSlot) {
    imp::forget(slot.0)
}

/// Arms the watchdog, with no thread: once the first SIGINT/SIGTERM has
/// asked the run to stop, a process still running `grace_s` seconds later
/// has a thread blocked in the kernel that never sees the flag. SIGALRM then
/// removes the files given to [`remove_at_forced_exit`] that are still the
/// ones made, writes `message` to stderr and exits with 128 + the signal.
pub fn arm_watchdog(grace_s: u32, message: &'static str) -> std::io::Result<()> {
    imp::arm(grace_s, message)
}
