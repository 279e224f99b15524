//! Stopping on SIGINT (Ctrl-C) and SIGTERM without a signal thread.
//!
//! [`install`] sets a handler that only raises a flag: the first signal asks
//! the run to stop (every loop that can block checks [`stop_flag`]); a
//! second one ends the process at once. The handler is installed without
//! `SA_RESTART`, so an `open` or `read` blocked in the main thread (a FIFO
//! with no writer, a stalled file system) returns `EINTR`, and the code
//! that made the call sees the flag and gives up.
//!
//! ```
//! let stop = iolab::signal::stop_flag();
//! assert!(!stop.load(std::sync::atomic::Ordering::Relaxed));
//! assert_eq!(iolab::signal::received(), None);
//! ```

use crate::sys::signal as imp;
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

/// Blocks SIGINT and SIGTERM in the calling thread (a helper thread such as
/// a watchdog), so they reach the thread whose blocked call they must end.
pub fn block_in_this_thread() -> std::io::Result<()> {
    imp::block_in_this_thread()
}
