//! Reading a file mapping without dying of SIGBUS.
//!
//! A page of a shared file mapping that the file system cannot supply (an
//! I/O error, or a file truncated after it was mapped) raises SIGBUS on the
//! load that touches it, which by default ends the process. [`guarded`]
//! runs a copy with the mapping registered for the calling thread; the
//! handler installed here then maps an anonymous zero page over the bad
//! page (mmap is async-signal-safe), notes where the fault was, and
//! returns, so the copy completes and the caller turns the fault into an
//! error. A fault outside a guarded copy goes to the handler that was there
//! before (Rust's own), or kills the process as it always did.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;

thread_local! {
    /// (start, len) of the mapping this thread is copying from; len 0: none.
    static GUARD: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
    /// Address of the first fault met inside the guard (usize::MAX: none).
    static FAULT: Cell<usize> = const { Cell::new(usize::MAX) };
}

static INSTALL: Once = Once::new();
static INSTALLED: AtomicBool = AtomicBool::new(false);
/// The action that was in place before ours; written once, before ours is
/// installed, and only read afterwards.
static mut PREVIOUS: Option<libc::sigaction> = None;

extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for an SA_SIGINFO handler.
    let addr = unsafe { (*info).si_addr() } as usize;
    let (start, len) = GUARD.with(|g| g.get());
    if len > 0 && addr >= start && addr < start + len {
        let page = super::mman::page_size();
        let at = addr & !(page - 1);
        // SAFETY: `at` is a page inside the live mapping this thread is
        // copying from (checked above); replacing it with a private zero
        // page only changes what the copy reads, which the caller discards.
        let p = unsafe {
            libc::mmap(
                at as *mut libc::c_void,
                page,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_FIXED | libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p != libc::MAP_FAILED {
            FAULT.with(|f| {
                if f.get() == usize::MAX {
                    f.set(addr)
                }
            });
            return;
        }
    }
    // Not ours: hand it to the previous handler, or die as before.
    // SAFETY: PREVIOUS was written before this handler was installed.
    let prev = unsafe { *std::ptr::addr_of!(PREVIOUS) };
    if let Some(old) = prev {
        let h = old.sa_sigaction;
        if h != libc::SIG_DFL && h != libc::SIG_IGN {
            if old.sa_flags & libc::SA_SIGINFO != 0 {
                // SAFETY: the previous handler was installed as SA_SIGINFO
                // with this signature.
                let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                    unsafe { std::mem::transmute(h) };
                f(sig, info, ctx);
            } else {
                // SAFETY: a plain handler takes only the signal number.
                let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(h) };
                f(sig);
            }
            return;
        }
    }
    // SAFETY: resetting to the default action is async-signal-safe; the
    // faulting load runs again and the default action ends the process.
    unsafe { libc::signal(libc::SIGBUS, libc::SIG_DFL) };
}

fn install() -> bool {
    INSTALL.call_once(|| {
        // SAFETY: all-zero sigaction is valid plain data, filled in below.
        let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
        sa.sa_sigaction = on_sigbus
            as extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void)
            as libc::sighandler_t;
        sa.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
        // SAFETY: sa.sa_mask is a valid sigset_t owned by this frame.
        unsafe { libc::sigemptyset(&mut sa.sa_mask) };
        // SAFETY: all-zero sigaction is valid plain data for the old action.
        let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: reading the current action into `old` changes nothing.
        if unsafe { libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut old) } != 0 {
            return;
        }
        // SAFETY: written once, inside call_once, before our handler (its
        // only reader) can run.
        unsafe { *std::ptr::addr_of_mut!(PREVIOUS) = Some(old) };
        // SAFETY: `sa` is fully initialised; the handler only maps a page
        // and touches thread-local cells, both async-signal-safe.
        if unsafe { libc::sigaction(libc::SIGBUS, &sa, std::ptr::null_mut()) } == 0 {
            INSTALLED.store(true, Ordering::SeqCst);
        }
    });
    INSTALLED.load(Ordering::SeqCst)
}

/// Runs `f`, which reads only from the mapping `start..start+len`; if a
/// page of it raised SIGBUS, returns `Err(offset)` of the first faulting
/// byte within the mapping (the page now reads as zeros: remap it before
/// reading it again). Without the handler, `f` runs unguarded.
pub(crate) fn guarded<R>(start: *const u8, len: usize, f: impl FnOnce() -> R) -> Result<R, usize> {
    if !install() {
        return Ok(f());
    }
    GUARD.with(|g| g.set((start as usize, len)));
    FAULT.with(|x| x.set(usize::MAX));
    std::sync::atomic::compiler_fence(Ordering::SeqCst);
    let r = f();
    std::sync::atomic::compiler_fence(Ordering::SeqCst);
    GUARD.with(|g| g.set((0, 0)));
    match FAULT.with(|x| x.replace(usize::MAX)) {
        usize::MAX => Ok(r),
        a => Err(a - start as usize),
    }
}
