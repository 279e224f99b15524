//! cuFile: `cuFileRead` from a file straight into device memory. With the
//! `nvidia-fs` kernel module loaded that is GPUDirect Storage (the disk
//! DMAs into the GPU, no host copy); without it cuFile runs its own
//! compatibility mode (bounce buffers of its own), which iolab only runs
//! when asked, to measure it as a peer.
//!
//! libcufile is loaded by hand, at first use: its soname is
//! `libcufile.so.0`, a name cudarc's loader does not try, and only five
//! functions are needed. The declarations follow `cufile.h`.

use super::driver::Device;
use super::memory::DeviceBuffer;
use crate::gpu::error::GpuError;
use crate::gpu::options::GpuOptions;
use crate::gpu::ranges::{Opened, Piece};
use crate::gpu::stats::Counters;
use crate::gpu::workers::{self, Shared};
use iolab::file::OpenSpec;
use libloading::Library;
use std::ffi::{c_int, c_void};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::sync::OnceLock;
use std::time::Instant;

/// `CUfileError_t`: cuFile's status and, for CUDA failures, the driver's.
#[repr(C)]
#[derive(Clone, Copy)]
struct Status {
    err: c_int,
    cu_err: c_int,
}

/// The handle part of `CUfileDescr_t`.
#[repr(C)]
union Handle {
    fd: c_int,
    handle: *mut c_void,
}

/// `CUfileDescr_t`.
#[repr(C)]
struct Descr {
    kind: c_int,
    handle: Handle,
    fs_ops: *const c_void,
}

/// `CU_FILE_HANDLE_TYPE_OPAQUE_FD`.
const OPAQUE_FD: c_int = 1;

type DriverOpen = unsafe extern "C" fn() -> Status;
type DriverClose = unsafe extern "C" fn() -> Status;
type HandleRegister = unsafe extern "C" fn(*mut *mut c_void, *mut Descr) -> Status;
type HandleDeregister = unsafe extern "C" fn(*mut c_void);
type Read =
    unsafe extern "C" fn(*mut c_void, *mut c_void, usize, libc::off_t, libc::off_t) -> isize;

/// The library and the functions iolab calls.
struct Api {
    _lib: Library,
    open: DriverOpen,
    close: DriverClose,
    register: HandleRegister,
    deregister: HandleDeregister,
    read: Read,
}

/// The library names tried, in order.
const NAMES: [&str; 2] = ["libcufile.so.0", "libcufile.so"];

/// libcufile, loaded once per process.
fn api() -> Result<&'static Api, GpuError> {
    static API: OnceLock<Result<Api, String>> = OnceLock::new();
    API.get_or_init(load)
        .as_ref()
        .map_err(|why| GpuError::Unavailable {
            technique: "cufile",
            why: why.clone(),
        })
}

/// Whether libcufile can be loaded here.
pub fn available() -> bool {
    api().is_ok()
}

fn load() -> Result<Api, String> {
    let mut why = String::new();
    for name in NAMES {
        // SAFETY: loading NVIDIA's cuFile library runs its initialisers,
        // which set up only its own state.
        match unsafe { Library::new(name) } {
            Ok(lib) => return symbols(lib).map_err(|e| format!("{name}: {e}")),
            Err(e) => why = format!("{name} could not be loaded ({e})"),
        }
    }
    Err(why)
}

/// The five functions, looked up in `lib` (kept alive with them).
fn symbols(lib: Library) -> Result<Api, libloading::Error> {
    // SAFETY: each symbol is declared with its type from cufile.h; the
    // function pointers are copied out and stay valid while `_lib`, stored
    // beside them, keeps the library loaded (for the process: the Api lives
    // in a static).
    unsafe {
        let open = *lib.get::<DriverOpen>(b"cuFileDriverOpen\0")?;
        let close = match lib.get::<DriverClose>(b"cuFileDriverClose_v2\0") {
            Ok(f) => *f,
            Err(_) => *lib.get::<DriverClose>(b"cuFileDriverClose\0")?,
        };
        let register = *lib.get::<HandleRegister>(b"cuFileHandleRegister\0")?;
        let deregister = *lib.get::<HandleDeregister>(b"cuFileHandleDeregister\0")?;
        let read = *lib.get::<Read>(b"cuFileRead\0")?;
        Ok(Api {
            _lib: lib,
            open,
            close,
            register,
            deregister,
            read,
        })
    }
}

/// `CU_FILE_HANDLE_NOT_REGISTERED`: cuFile refused the file.
pub const HANDLE_NOT_REGISTERED: c_int = 5027;

/// The udev record cuFile reads to learn what a file's block device
/// holds (`/run/udev/data/bMAJOR:MINOR`), when it is missing: cuFile then
/// cannot tell the volume's attributes and refuses to register the file,
/// even in compatibility mode (seen in a container without udev).
pub fn missing_udev_entry(file: &File) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let dev = file.metadata().ok()?.dev();
    let entry = format!("/run/udev/data/b{}:{}", libc::major(dev), libc::minor(dev));
    (!std::path::Path::new(&entry).exists()).then_some(entry)
}

/// `Ok` for `CU_FILE_SUCCESS`, else the call's error.
fn check(call: &'static str, s: Status) -> Result<(), GpuError> {
    if s.err == 0 {
        return Ok(());
    }
    Err(GpuError::CuFile {
        call,
        why: format!("status {} (CUDA error {})", s.err, s.cu_err),
    })
}

/// The cuFile driver opened for this process (closed on drop) and the
/// files registered with it.
pub(crate) struct Session {
    api: &'static Api,
    files: Vec<Registered>,
}

/// One file registered with cuFile (deregistered on drop, before its
/// descriptor closes).
struct Registered {
    handle: *mut c_void,
    api: &'static Api,
    _file: File,
}

// SAFETY: a cuFile handle may be used from any thread (cuFileRead is
// thread-safe per the cuFile API reference); it is only read here.
unsafe impl Sync for Registered {}
// SAFETY: as above.
unsafe impl Send for Registered {}

impl Drop for Registered {
    fn drop(&mut self) {
        // SAFETY: a handle from cuFileHandleRegister, deregistered once;
        // no read uses it any more (the session's reads have returned).
        unsafe { (self.api.deregister)(self.handle) }
    }
}

impl Session {
    /// Opens the cuFile driver on `device` and registers every file.
    /// Nothing has been read when this fails, so a caller may fall back.
    pub(crate) fn open(device: &Device, opened: &[Opened]) -> Result<Session, GpuError> {
        let api = api()?;
        let _in = device.enter()?;
        // SAFETY: takes no arguments; paired with close in Drop.
        check("cuFileDriverOpen", unsafe { (api.open)() })?;
        let mut s = Session {
            api,
            files: Vec::new(),
        };
        for o in opened {
            s.files.push(s.register(o)?);
        }
        Ok(s)
    }

    /// Registers one file, opened with O_DIRECT (GPUDirect Storage needs
    /// it) or, where refused, without (compatibility mode reads it).
    fn register(&self, o: &Opened) -> Result<Registered, GpuError> {
        let direct = OpenSpec {
            direct: true,
            write: false,
        };
        let file = match iolab::file::open(&o.path, direct) {
            Ok(f) => f,
            Err(iolab::Error::Unsupported { .. }) => o.file.try_clone().map_err(|e| {
                GpuError::Read(crate::ReadError::Open {
                    path: o.path.clone(),
                    source: e,
                })
            })?,
            Err(e) => return Err(GpuError::layer(&o.path, e)),
        };
        let mut d = Descr {
            kind: OPAQUE_FD,
            handle: Handle {
                fd: file.as_raw_fd(),
            },
            fs_ops: std::ptr::null(),
        };
        let mut handle: *mut c_void = std::ptr::null_mut();
        // SAFETY: d describes an open descriptor that outlives the handle
        // (both live in the returned Registered, deregistered first).
        let s = unsafe { (self.api.register)(&mut handle, &mut d) };
        if s.err == HANDLE_NOT_REGISTERED {
            if let Some(entry) = missing_udev_entry(&file) {
                return Err(GpuError::CuFile {
                    call: "cuFileHandleRegister",
                    why: format!(
                        "status {HANDLE_NOT_REGISTERED}: cuFile identifies a file's volume by udev's record of its device, and {entry} does not exist (no udev here): use --technique ring or threads"
                    ),
                });
            }
        }
        check("cuFileHandleRegister", s)?;
        Ok(Registered {
            handle,
            api: self.api,
            _file: file,
        })
    }

    /// Reads every piece into `buf` with `opts.threads` threads; returns the
    /// counts (the time in `cuFileRead` is counted as reading) and threads.
    pub(crate) fn read(
        &self,
        buf: &DeviceBuffer,
        opened: &[Opened],
        pieces: &[Piece],
        opts: &GpuOptions,
    ) -> Result<(Counters, usize), GpuError> {
        let threads = opts.threads.clamp(1, pieces.len().max(1));
        let c = workers::run(threads, pieces.len(), |shared| {
            self.worker(buf, opened, pieces, shared)
        })?;
        Ok((c, threads))
    }

    fn worker(
        &self,
        buf: &DeviceBuffer,
        opened: &[Opened],
        pieces: &[Piece],
        shared: &Shared,
    ) -> Result<Counters, GpuError> {
        let _in = buf.device().enter()?;
        let mut c = Counters::start();
        c.pinned = false;
        c.direct = true;
        while let Some(i) = shared.take() {
            let p = pieces[i];
            let t = Instant::now();
            self.read_piece(buf, &opened[p.src], p)?;
            c.read += t.elapsed();
            c.bytes += p.len as u64;
        }
        Ok(c)
    }

    /// One piece, resumed after short reads.
    fn read_piece(&self, buf: &DeviceBuffer, o: &Opened, p: Piece) -> Result<(), GpuError> {
        let end = p.at.checked_add(p.len as u64);
        if end.is_none_or(|e| e > buf.len()) {
            return Err(GpuError::OutOfBounds {
                at: p.at,
                len: p.len as u64,
                cap: buf.len(),
            });
        }
        let h = self.files[p.src].handle;
        let mut done = 0usize;
        while done < p.len {
            let off = p.offset + done as u64;
            // SAFETY: the destination, `at + done .. at + len` of the
            // allocation, lies inside it (checked above) and the allocation
            // is borrowed for the call; `h` is a live registered handle.
            let n = unsafe {
                (self.api.read)(
                    h,
                    buf.device_ptr() as usize as *mut c_void,
                    p.len - done,
                    off as libc::off_t,
                    (p.at + done as u64) as libc::off_t,
                )
            };
            match n {
                n if n > 0 => done += n as usize,
                0 => {
                    return Err(GpuError::ShortFile {
                        path: o.path.clone(),
                        at: off,
                        missing: (p.len - done) as u64,
                    })
                }
                -1 => {
                    let e = std::io::Error::last_os_error();
                    return Err(GpuError::io(&o.path, off, p.len - done, e));
                }
                n => {
                    return Err(GpuError::CuFile {
                        call: "cuFileRead",
                        why: format!("{} at offset {off}: status {}", o.path.display(), -n),
                    })
                }
            }
        }
        Ok(())
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.files.clear();
        // SAFETY: pairs the successful cuFileDriverOpen of `open`; every
        // handle was deregistered just above.
        unsafe {
            (self.api.close)();
        }
    }
}
