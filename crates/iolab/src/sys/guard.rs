//! A copy out of a file mapping that survives the file being truncated
//! underneath it.
//!
//! Touching a page of a `MAP_SHARED` mapping beyond the file's current end
//! raises SIGBUS, which by default kills the process. iolab copies from
//! mappings only through [`guarded_copy`]: a tiny assembly routine
//! (`rep movsb`) whose one faulting instruction has a known address. A
//! process-wide SIGBUS handler, installed once, checks the faulting
//! instruction pointer: when it is that instruction, it moves the
//! instruction pointer to a fix-up that returns the number of bytes not
//! copied (`rep movsb` keeps its count in `rcx`, so the count is exact).
//! Any other SIGBUS is passed to the handler that was there before, or, if
//! there was none, the default action is restored and the fault re-raised,
//! so real bugs still crash as they would have.
//!
//! This is the "SIGBUS handler around a guarded copy with a fault fix-up"
//! mechanism; on targets other than x86_64 the mapping is not used and
//! reads go through `pread` instead (see [`available`]).

#[cfg(target_arch = "x86_64")]
mod imp {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::OnceLock;

    // The copy routine. System V ABI: rdi = dst, rsi = src, rdx = len;
    // returns in rax the bytes not copied. The direction flag is clear on
    // entry by the ABI. If `rep movsb` faults, the handler resumes at
    // `iolab_guarded_copy_fixup` with rcx = bytes left.
    std::arch::global_asm!(
        ".pushsection .text.iolab_guarded_copy,\"ax\",@progbits",
        ".globl iolab_guarded_copy",
        ".hidden iolab_guarded_copy",
        ".type iolab_guarded_copy,@function",
        "iolab_guarded_copy:",
        "mov rcx, rdx",
        ".globl iolab_guarded_copy_insn",
        ".hidden iolab_guarded_copy_insn",
        "iolab_guarded_copy_insn:",
        "rep movsb",
        "xor eax, eax",
        "ret",
        ".globl iolab_guarded_copy_fixup",
        ".hidden iolab_guarded_copy_fixup",
        "iolab_guarded_copy_fixup:",
        "mov rax, rcx",
        "ret",
        ".size iolab_guarded_copy, .-iolab_guarded_copy",
        ".popsection",
    );

    extern "C" {
        fn iolab_guarded_copy(dst: *mut u8, src: *const u8, len: usize) -> usize;
        static iolab_guarded_copy_insn: u8;
        static iolab_guarded_copy_fixup: u8;
    }

    /// The SIGBUS action in place before ours, to chain to.
    struct Old(libc::sigaction);
    // SAFETY: a sigaction is plain data (a handler address, flags, a mask);
    // it is written once before the handler is installed and only read after.
    unsafe impl Sync for Old {}
    // SAFETY: as above.
    unsafe impl Send for Old {}
    static OLD: OnceLock<Old> = OnceLock::new();
    static INSTALLED: AtomicBool = AtomicBool::new(false);

    extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
        // SAFETY: with SA_SIGINFO the kernel passes a valid ucontext_t that
        // we may modify; the addresses taken are of our own asm labels.
        unsafe {
            let uc = ctx.cast::<libc::ucontext_t>();
            let rip = &mut (*uc).uc_mcontext.gregs[libc::REG_RIP as usize];
            if *rip as usize == std::ptr::addr_of!(iolab_guarded_copy_insn) as usize {
                *rip = std::ptr::addr_of!(iolab_guarded_copy_fixup) as i64;
                return;
            }
            // Not ours: behave as if we were never installed.
            match OLD.get() {
                Some(Old(old))
                    if old.sa_sigaction != libc::SIG_DFL && old.sa_sigaction != libc::SIG_IGN =>
                {
                    if old.sa_flags & libc::SA_SIGINFO != 0 {
                        let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                            std::mem::transmute(old.sa_sigaction);
                        f(sig, info, ctx);
                    } else {
                        let f: extern "C" fn(libc::c_int) = std::mem::transmute(old.sa_sigaction);
                        f(sig);
                    }
                }
                _ => {
                    // Restore the default action; returning re-executes the
                    // faulting instruction, which now kills the process as
                    // it would have without us.
                    let mut sa: libc::sigaction = std::mem::zeroed();
                    sa.sa_sigaction = libc::SIG_DFL;
                    libc::sigaction(libc::SIGBUS, &sa, std::ptr::null_mut());
                }
            }
        }
    }

    /// Installs the handler once per process.
    pub(crate) fn install() -> std::io::Result<()> {
        if INSTALLED.load(Ordering::Acquire) {
            return Ok(());
        }
        static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
        if INSTALLED.load(Ordering::Acquire) {
            return Ok(());
        }
        // SAFETY: sigaction is plain data; all-zero is valid and filled in
        // below. The handler only edits the ucontext or chains.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_sigbus
                as extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void)
                as libc::sighandler_t;
            sa.sa_flags = libc::SA_SIGINFO | libc::SA_NODEFER | libc::SA_ONSTACK;
            libc::sigemptyset(&mut sa.sa_mask);
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut old) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            let _ = OLD.set(Old(old));
            if libc::sigaction(libc::SIGBUS, &sa, std::ptr::null_mut()) != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        INSTALLED.store(true, Ordering::Release);
        Ok(())
    }

    /// Copies `src` (inside a live read-only mapping) into `dst`; returns
    /// the bytes NOT copied (0 on success) if a page faulted with SIGBUS.
    pub(crate) fn copy(dst: &mut [u8], src: *const u8) -> usize {
        debug_assert!(INSTALLED.load(Ordering::Relaxed));
        // SAFETY: the caller guarantees src..src+dst.len() lies in a live
        // mapping (it may fault, which the handler fixes up); dst is a
        // valid exclusive slice; the routine touches nothing else.
        unsafe { iolab_guarded_copy(dst.as_mut_ptr(), src, dst.len()) }
    }
}

/// Whether guarded copies work on this target (and the handler installs).
pub(crate) fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        imp::install().is_ok()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Copies `dst.len()` bytes starting `off` bytes into `map` into `dst`.
/// Returns how many bytes were copied: fewer than asked when the file was
/// truncated underneath the mapping. Only call after [`available`] said yes.
pub(crate) fn guarded_copy(map: &super::mman::Mapping, off: usize, dst: &mut [u8]) -> usize {
    assert!(off.checked_add(dst.len()).is_some_and(|e| e <= map.len()));
    #[cfg(target_arch = "x86_64")]
    {
        let left = imp::copy(dst, map.ptr().wrapping_add(off));
        dst.len() - left
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (map, off, dst);
        unreachable!("guarded_copy without available()")
    }
}
