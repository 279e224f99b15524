//! SIGINT/SIGTERM handling without a thread: a plain `sigaction` handler,
//! installed without `SA_RESTART`, that only touches atomics (the only
//! async-signal-safe thing a Rust handler may do) and `_exit`s on a second
//! signal.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

/// Set by the first SIGINT/SIGTERM.
pub(crate) static STOP: AtomicBool = AtomicBool::new(false);
/// The first signal received (0: none).
pub(crate) static FIRST: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    if FIRST
        .compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst)
        .is_err()
    {
        // A second signal: end the process now, with the status of the
        // signal that ends it (128 + signal number, as a shell reports).
        // SAFETY: _exit is async-signal-safe and never returns.
        unsafe { libc::_exit(128 + sig) };
    }
    STOP.store(true, Ordering::SeqCst);
}

/// Installs `on_signal` for SIGINT and SIGTERM, without `SA_RESTART`, so a
/// system call blocked in the thread that takes the signal returns `EINTR`.
pub(crate) fn install() -> std::io::Result<()> {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: sigaction is plain old data; all-zero is a valid value
        // (empty flags, no restorer) that the lines below fill in.
        let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
        sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        sa.sa_flags = 0; // no SA_RESTART: blocked calls return EINTR
                         // SAFETY: sa.sa_mask is a valid sigset_t owned by this frame.
        unsafe { libc::sigemptyset(&mut sa.sa_mask) };
        // SAFETY: `sa` is fully initialised and the handler only touches
        // atomics and calls _exit, both async-signal-safe; the old action
        // is not wanted (null).
        let r = unsafe { libc::sigaction(sig, &sa, std::ptr::null_mut()) };
        if r != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Blocks SIGINT and SIGTERM in the calling thread only, so the kernel
/// delivers them to a thread that acts on them (the main thread).
pub(crate) fn block_in_this_thread() -> std::io::Result<()> {
    // SAFETY: sigset_t is plain data; sigemptyset initialises it.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid sigset_t owned by this frame.
    unsafe {
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
    }
    // SAFETY: `set` is initialised; the old mask is not wanted (null).
    let r = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if r != 0 {
        return Err(std::io::Error::from_raw_os_error(r));
    }
    Ok(())
}
