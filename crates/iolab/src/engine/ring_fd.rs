//! How the uring engine calls `io_uring_enter`: through a registered ring
//! descriptor (`IORING_REGISTER_RING_FDS`, Linux 5.18+), as t/io_uring
//! does, so the kernel skips the file-table lookup and reference of the
//! ring's descriptor on every call; and by a hand-written system call,
//! because the io-uring crate keeps a registered ring only in a
//! `Submitter` it makes anew for every `submit_and_wait`.
//!
//! A registered ring belongs to the thread that registered it. An engine
//! is built and driven by one worker thread, but should it be called from
//! another one, the call goes through the plain descriptor instead: the
//! other thread's table may hold a different ring at the same index.

use io_uring::{EnterFlags, IoUring};
use std::io;
use std::os::fd::AsRawFd;

/// `IORING_REGISTER_RING_FDS` and `IORING_UNREGISTER_RING_FDS`
/// (include/uapi/linux/io_uring.h; the crate does not export them).
const REGISTER_RING_FDS: libc::c_uint = 20;
const UNREGISTER_RING_FDS: libc::c_uint = 21;

/// `struct io_uring_rsrc_update`.
#[repr(C)]
struct RsrcUpdate {
    offset: u32,
    resv: u32,
    data: u64,
}

thread_local! {
    static HERE: u8 = const { 0 };
}

/// A token for the calling thread (the address of a thread-local): cheap
/// to read on every call, unlike `gettid`.
#[inline]
fn this_thread() -> usize {
    HERE.with(|h| h as *const u8 as usize)
}

/// The descriptor `io_uring_enter` is called with.
pub(super) struct EnterFd {
    raw: i32,
    /// The registered index and the thread it belongs to.
    registered: Option<(u32, usize)>,
}

impl EnterFd {
    /// Registers `ring`'s descriptor for the calling thread where the
    /// kernel can (else every call uses the plain descriptor).
    pub fn new(ring: &IoUring) -> EnterFd {
        let raw = ring.as_raw_fd();
        let mut up = RsrcUpdate {
            offset: u32::MAX,
            resv: 0,
            data: raw as u64,
        };
        // SAFETY: `up` is a valid io_uring_rsrc_update that lives across the
        // call; the kernel writes the index it chose into `up.offset`.
        let r = unsafe {
            libc::syscall(
                libc::SYS_io_uring_register,
                raw,
                REGISTER_RING_FDS,
                &mut up as *mut RsrcUpdate,
                1,
            )
        };
        EnterFd {
            raw,
            registered: (r == 1).then(|| (up.offset, this_thread())),
        }
    }

    /// Whether calls from this thread use the registered descriptor.
    pub fn is_registered(&self) -> bool {
        self.registered.is_some_and(|(_, t)| t == this_thread())
    }

    /// `io_uring_enter(to_submit, min_complete, flags)`; returns the SQEs
    /// the kernel consumed.
    #[inline]
    pub fn enter(&self, to_submit: u32, min_complete: u32, flags: u32) -> io::Result<u32> {
        let (fd, flags) = match self.registered {
            Some((idx, t)) if t == this_thread() => {
                (idx as i32, flags | EnterFlags::REGISTERED_RING.bits())
            }
            _ => (self.raw, flags),
        };
        // SAFETY: no pointer argument (no signal mask, size 0); the SQEs it
        // hands to the kernel were pushed under the engine's contract that
        // their buffers outlive the ops.
        let r = unsafe {
            libc::syscall(
                libc::SYS_io_uring_enter,
                fd,
                to_submit,
                min_complete,
                flags,
                std::ptr::null::<libc::c_void>(),
                0usize,
            )
        };
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(r as u32)
        }
    }
}

impl Drop for EnterFd {
    fn drop(&mut self) {
        // The registration holds a reference to the ring until the thread
        // exits: give it back (only the owning thread can).
        if let Some((idx, t)) = self.registered {
            if t == this_thread() {
                let up = RsrcUpdate {
                    offset: idx,
                    resv: 0,
                    data: 0,
                };
                // SAFETY: `up` is a valid io_uring_rsrc_update for the call.
                unsafe {
                    libc::syscall(
                        libc::SYS_io_uring_register,
                        self.raw,
                        UNREGISTER_RING_FDS,
                        &up as *const RsrcUpdate,
                        1,
                    )
                };
            }
        }
    }
}
