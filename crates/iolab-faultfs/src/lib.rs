//! A fault-injecting FUSE file system for iolab's tests.
//!
//! This kernel has no device-mapper, no fault injection and no null_blk, so
//! storage that fails can only be had from a file system of our own. A
//! [`Mounted`] file system serves one flat directory of files whose bytes are
//! iolab's verifiable [`Pattern`] (with the `user.iolab.seed` attribute
//! iolab reads, so `--verify` works), and per file injects the [`Faults`]
//! asked for: EIO on a byte range, short reads, reads that stall (answering
//! signals like a kernel file system would), ENOSPC after N bytes written, a
//! file that shrinks after N bytes read, and EACCES on open.
//!
//! It is mounted by the test itself (root, or `fusermount3`) and unmounted
//! when the [`Mounted`] is dropped, which also happens while a failing test
//! unwinds. [`available`] says whether this machine can mount it at all.

use fuser::{
    FileAttr, FileType, Filesystem, MountOption, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory,
    ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, ReplyXattr, Request, TimeOrNow,
};
use iolab::pattern::Pattern;
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

mod proc_signal;

/// What goes wrong with one file. Every field is off by default.
#[derive(Clone, Debug, Default)]
pub struct Faults {
    /// Reads that touch this byte range fail with EIO.
    pub eio: Option<Range<u64>>,
    /// Every read returns at most this many bytes (a short read).
    pub short_read: Option<u32>,
    /// Reads that touch this byte range wait this long before answering; a
    /// SIGINT/SIGTERM sent to the reader ends the wait with EINTR.
    pub stall: Option<(Range<u64>, Duration)>,
    /// Writes fail with ENOSPC once the file system holds this many bytes
    /// written since mount.
    pub enospc_after: Option<u64>,
    /// After this many bytes have been read from the file, it becomes the
    /// second number of bytes long (a file truncated by someone else mid-run).
    pub shrink_after: Option<(u64, u64)>,
    /// `open` fails with EACCES (a file the user may not read).
    pub eacces: bool,
    /// Serve reads directly (FOPEN_DIRECT_IO): every `read` call reaches the
    /// file system with its own offset and length, unmerged by the page
    /// cache. Without it the kernel reads whole pages (and read-ahead).
    pub direct_io: bool,
}

/// One file served by the file system: `size` bytes of pattern `seed`.
#[derive(Clone, Debug)]
pub struct FaultFile {
    /// Name in the mount's directory.
    pub name: String,
    /// Length in bytes.
    pub size: u64,
    /// Seed of its [`Pattern`], announced in `user.iolab.seed`.
    pub seed: u64,
    /// The faults it injects.
    pub faults: Faults,
}

impl FaultFile {
    /// A healthy pattern file.
    pub fn new(name: &str, size: u64, seed: u64) -> Self {
        FaultFile {
            name: name.into(),
            size,
            seed,
            faults: Faults::default(),
        }
    }

    /// The same file with these faults.
    pub fn with(mut self, faults: Faults) -> Self {
        self.faults = faults;
        self
    }
}

/// What the file system saw, for tests to check against what iolab reports.
#[derive(Debug, Default)]
pub struct Stats {
    /// Read requests answered (any outcome).
    pub reads: AtomicU64,
    /// Read requests answered with EIO.
    pub eio: AtomicU64,
    /// Read requests answered short.
    pub short: AtomicU64,
    /// Read requests that stalled.
    pub stalled: AtomicU64,
    /// Stalls ended early by a signal (answered EINTR).
    pub interrupted: AtomicU64,
    /// Write requests answered with ENOSPC.
    pub enospc: AtomicU64,
    /// Files shrunk.
    pub shrunk: AtomicU64,
    /// Offset of the first read answered with EIO (u64::MAX: none).
    pub first_eio_offset: AtomicU64,
}

/// Whether a FUSE file system can be mounted here: `Err` says why not.
pub fn available() -> Result<(), String> {
    if !Path::new("/dev/fuse").exists() {
        return Err("no /dev/fuse (FUSE is not available in this kernel or container)".into());
    }
    let root = {
        // SAFETY: geteuid has no preconditions and cannot fail.
        unsafe { libc::geteuid() == 0 }
    };
    if !root && which("fusermount3").is_none() && which("fusermount").is_none() {
        return Err("not root and no fusermount3 (Debian package fuse3)".into());
    }
    Ok(())
}

fn which(bin: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join(bin))
            .find(|c| c.is_file())
    })
}

const ROOT: u64 = fuser::FUSE_ROOT_ID;
const SEED_XATTR: &str = "user.iolab.seed";

struct Node {
    name: String,
    size: u64,
    seed: Option<u64>,
    faults: Faults,
    /// Bytes written by clients (files created through the mount); files
    /// served from a pattern have none and generate their bytes.
    data: Option<Vec<u8>>,
    read_bytes: u64,
    mode: u16,
    xattrs: BTreeMap<String, Vec<u8>>,
    mtime: SystemTime,
}

struct State {
    nodes: BTreeMap<u64, Node>,
    next_ino: u64,
    written: u64,
    enospc_after: Option<u64>,
}

/// The file system served to the kernel (see the crate documentation).
pub struct FaultFs {
    state: Arc<Mutex<State>>,
    stats: Arc<Stats>,
    release: Arc<AtomicBool>,
    uid: u32,
    gid: u32,
}

const TTL: Duration = Duration::ZERO;

impl FaultFs {
    /// A stalled read's reply, `d` from now, on a thread of its own so the
    /// file system keeps answering other requests (and the unmount)
    /// meanwhile: EIO if the file system is released first, EINTR if the
    /// reading thread `tid` gets a signal (fuser drops FUSE_INTERRUPT; a
    /// kernel file system would end the wait, so we look for the signal).
    fn reply_after(&self, d: Duration, tid: u32, buf: Vec<u8>, reply: ReplyData) {
        let (stats, release) = (self.stats.clone(), self.release.clone());
        std::thread::spawn(move || {
            let end = Instant::now() + d;
            while Instant::now() < end {
                if release.load(Ordering::Relaxed) {
                    return reply.error(libc::EIO);
                }
                if proc_signal::stop_pending(tid) {
                    stats.interrupted.fetch_add(1, Ordering::Relaxed);
                    return reply.error(libc::EINTR);
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            reply.data(&buf);
        });
    }

    fn new(files: Vec<FaultFile>, stats: Arc<Stats>, release: Arc<AtomicBool>) -> Self {
        let mut nodes = BTreeMap::new();
        let mut enospc_after = None;
        for (i, f) in files.into_iter().enumerate() {
            if let Some(n) = f.faults.enospc_after {
                enospc_after = Some(n);
            }
            nodes.insert(
                ROOT + 1 + i as u64,
                Node {
                    name: f.name,
                    size: f.size,
                    seed: Some(f.seed),
                    faults: f.faults,
                    data: None,
                    read_bytes: 0,
                    mode: 0o644,
                    xattrs: BTreeMap::new(),
                    mtime: SystemTime::now(),
                },
            );
        }
        let next_ino = ROOT + 1 + nodes.len() as u64;
        FaultFs {
            state: Arc::new(Mutex::new(State {
                nodes,
                next_ino,
                written: 0,
                enospc_after,
            })),
            stats,
            release,
            // SAFETY: getuid/getgid have no preconditions and cannot fail.
            uid: unsafe { libc::getuid() },
            // SAFETY: as above.
            gid: unsafe { libc::getgid() },
        }
    }

    /// The bytes a read of `size` at `off` gets from `n` after its faults:
    /// EIO on the fault's range, at most `short_read` bytes, and the file
    /// shrinking once enough was read. Err is the errno to answer.
    fn read_node(&self, n: &mut Node, off: u64, size: u64) -> Result<Vec<u8>, i32> {
        let f = &n.faults;
        if let Some(r) = &f.eio {
            if overlaps(r, off, size) {
                self.stats.eio.fetch_add(1, Ordering::Relaxed);
                let _ = self.stats.first_eio_offset.compare_exchange(
                    u64::MAX,
                    off,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                );
                return Err(libc::EIO);
            }
        }
        let mut len = size.min(n.size.saturating_sub(off));
        if let Some(s) = f.short_read {
            if len > s as u64 {
                len = s as u64;
                self.stats.short.fetch_add(1, Ordering::Relaxed);
            }
        }
        let shrink_after = f.shrink_after;
        let mut buf = vec![0u8; len as usize];
        match (&n.data, n.seed) {
            (Some(d), _) => buf.copy_from_slice(&d[off as usize..(off + len) as usize]),
            (None, Some(seed)) => Pattern::new(seed).fill(&mut buf, off),
            (None, None) => {}
        }
        n.read_bytes += len;
        if let Some((after, to)) = shrink_after {
            if n.read_bytes >= after && n.size > to {
                n.size = to;
                self.stats.shrunk.fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok(buf)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn attr(&self, ino: u64, n: Option<&Node>) -> FileAttr {
        let (kind, size, perm, mtime) = match n {
            None => (FileType::Directory, 0, 0o755, SystemTime::UNIX_EPOCH),
            Some(n) => (FileType::RegularFile, n.size, n.mode, n.mtime),
        };
        FileAttr {
            ino,
            size,
            blocks: size.div_ceil(512),
            atime: mtime,
            mtime,
            ctime: mtime,
            crtime: mtime,
            kind,
            perm,
            nlink: if n.is_none() { 2 } else { 1 },
            uid: self.uid,
            gid: self.gid,
            rdev: 0,
            blksize: 4096,
            flags: 0,
        }
    }
}

fn overlaps(r: &Range<u64>, off: u64, len: u64) -> bool {
    off < r.end && r.start < off.saturating_add(len)
}

impl Filesystem for FaultFs {
    fn lookup(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEntry) {
        let st = self.lock();
        if parent != ROOT {
            return reply.error(libc::ENOENT);
        }
        match st.nodes.iter().find(|(_, n)| OsStr::new(&n.name) == name) {
            Some((&ino, n)) => reply.entry(&TTL, &self.attr(ino, Some(n)), 0),
            None => reply.error(libc::ENOENT),
        }
    }

    fn getattr(&mut self, _req: &Request<'_>, ino: u64, _fh: Option<u64>, reply: ReplyAttr) {
        let st = self.lock();
        if ino == ROOT {
            return reply.attr(&TTL, &self.attr(ROOT, None));
        }
        match st.nodes.get(&ino) {
            Some(n) => reply.attr(&TTL, &self.attr(ino, Some(n))),
            None => reply.error(libc::ENOENT),
        }
    }

    fn setattr(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<u64>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<u32>,
        reply: ReplyAttr,
    ) {
        let mut st = self.lock();
        let Some(n) = st.nodes.get_mut(&ino) else {
            return reply.error(libc::ENOENT);
        };
        if let Some(m) = mode {
            n.mode = (m & 0o7777) as u16;
        }
        if let Some(s) = size {
            n.size = s;
            if let Some(d) = n.data.as_mut() {
                d.resize(s as usize, 0);
            }
        }
        let a = self.attr(ino, Some(n));
        reply.attr(&TTL, &a);
    }

    fn open(&mut self, _req: &Request<'_>, ino: u64, _flags: i32, reply: ReplyOpen) {
        let st = self.lock();
        match st.nodes.get(&ino) {
            Some(n) if n.faults.eacces => reply.error(libc::EACCES),
            Some(n) => reply.opened(
                0,
                if n.faults.direct_io {
                    fuser::consts::FOPEN_DIRECT_IO
                } else {
                    0
                },
            ),
            None => reply.error(libc::ENOENT),
        }
    }

    fn read(
        &mut self,
        req: &Request<'_>,
        ino: u64,
        _fh: u64,
        offset: i64,
        size: u32,
        _flags: i32,
        _lock: Option<u64>,
        reply: ReplyData,
    ) {
        self.stats.reads.fetch_add(1, Ordering::Relaxed);
        let off = offset.max(0) as u64;
        if std::env::var_os("IOLAB_FAULTFS_LOG").is_some() {
            eprintln!("faultfs: read ino {ino} offset {off} size {size}");
        }
        let mut st = self.lock();
        let Some(n) = st.nodes.get_mut(&ino) else {
            return reply.error(libc::ENOENT);
        };
        let stall = n.faults.stall.clone();
        let buf = match self.read_node(n, off, size as u64) {
            Ok(buf) => buf,
            Err(errno) => return reply.error(errno),
        };
        drop(st);
        match stall {
            Some((r, d)) if overlaps(&r, off, size as u64) => {
                self.stats.stalled.fetch_add(1, Ordering::Relaxed);
                self.reply_after(d, req.pid(), buf, reply);
            }
            _ => reply.data(&buf),
        }
    }

    fn write(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        offset: i64,
        data: &[u8],
        _write_flags: u32,
        _flags: i32,
        _lock_owner: Option<u64>,
        reply: ReplyWrite,
    ) {
        let off = offset.max(0) as u64;
        let mut st = self.lock();
        if let Some(limit) = st.enospc_after {
            if st.written + data.len() as u64 > limit {
                self.stats.enospc.fetch_add(1, Ordering::Relaxed);
                return reply.error(libc::ENOSPC);
            }
        }
        st.written += data.len() as u64;
        let Some(n) = st.nodes.get_mut(&ino) else {
            return reply.error(libc::ENOENT);
        };
        let end = off + data.len() as u64;
        if n.data.is_none() {
            // Materialize a pattern file before changing it.
            let mut d = vec![0u8; n.size as usize];
            if let Some(seed) = n.seed {
                Pattern::new(seed).fill(&mut d, 0);
            }
            n.data = Some(d);
        }
        let d = n.data.as_mut().expect("materialized");
        if d.len() < end as usize {
            d.resize(end as usize, 0);
        }
        d[off as usize..end as usize].copy_from_slice(data);
        n.size = n.size.max(end);
        n.mtime = SystemTime::now();
        reply.written(data.len() as u32);
    }

    fn create(
        &mut self,
        _req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let mut st = self.lock();
        if parent != ROOT {
            return reply.error(libc::ENOENT);
        }
        let Some(name) = name.to_str() else {
            return reply.error(libc::EINVAL);
        };
        if st.nodes.values().any(|n| n.name == name) {
            if flags & libc::O_EXCL != 0 {
                return reply.error(libc::EEXIST);
            }
            return reply.error(libc::EEXIST);
        }
        let ino = st.next_ino;
        st.next_ino += 1;
        let node = Node {
            name: name.into(),
            size: 0,
            seed: None,
            faults: Faults::default(),
            data: Some(Vec::new()),
            read_bytes: 0,
            mode: (mode & 0o7777) as u16,
            xattrs: BTreeMap::new(),
            mtime: SystemTime::now(),
        };
        let a = self.attr(ino, Some(&node));
        st.nodes.insert(ino, node);
        reply.created(&TTL, &a, 0, 0, 0);
    }

    fn unlink(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEmpty) {
        let mut st = self.lock();
        if parent != ROOT {
            return reply.error(libc::ENOENT);
        }
        let ino = st
            .nodes
            .iter()
            .find(|(_, n)| OsStr::new(&n.name) == name)
            .map(|(&i, _)| i);
        match ino {
            Some(i) => {
                st.nodes.remove(&i);
                reply.ok()
            }
            None => reply.error(libc::ENOENT),
        }
    }

    fn flush(&mut self, _req: &Request<'_>, _ino: u64, _fh: u64, _lock: u64, reply: ReplyEmpty) {
        reply.ok()
    }

    fn fsync(&mut self, _req: &Request<'_>, _ino: u64, _fh: u64, _data: bool, reply: ReplyEmpty) {
        reply.ok()
    }

    fn readdir(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        offset: i64,
        mut reply: ReplyDirectory,
    ) {
        if ino != ROOT {
            return reply.error(libc::ENOTDIR);
        }
        let st = self.lock();
        let mut entries: Vec<(u64, FileType, String)> = vec![
            (ROOT, FileType::Directory, ".".into()),
            (ROOT, FileType::Directory, "..".into()),
        ];
        for (&i, n) in &st.nodes {
            entries.push((i, FileType::RegularFile, n.name.clone()));
        }
        for (k, (i, t, name)) in entries.into_iter().enumerate().skip(offset.max(0) as usize) {
            if reply.add(i, (k + 1) as i64, t, name) {
                break;
            }
        }
        reply.ok();
    }

    fn statfs(&mut self, _req: &Request<'_>, _ino: u64, reply: ReplyStatfs) {
        let st = self.lock();
        let total: u64 = st.nodes.values().map(|n| n.size).sum();
        // The ENOSPC limit is not announced (like a quota or a thinly
        // provisioned volume), so a free-space check cannot foresee it.
        let room: u64 = 1 << 40;
        let bs = 4096u64;
        reply.statfs(
            (total + room) / bs,
            room / bs,
            room / bs,
            1 << 20,
            1 << 20,
            bs as u32,
            255,
            bs as u32,
        );
    }

    fn getxattr(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        name: &OsStr,
        size: u32,
        reply: ReplyXattr,
    ) {
        let st = self.lock();
        let Some(n) = st.nodes.get(&ino) else {
            return reply.error(libc::ENODATA);
        };
        let v: Option<Vec<u8>> = match name.to_str() {
            Some(k) if n.xattrs.contains_key(k) => n.xattrs.get(k).cloned(),
            Some(SEED_XATTR) => n.seed.map(|s| s.to_string().into_bytes()),
            _ => None,
        };
        match v {
            None => reply.error(libc::ENODATA),
            Some(v) if size == 0 => reply.size(v.len() as u32),
            Some(v) if (size as usize) < v.len() => reply.error(libc::ERANGE),
            Some(v) => reply.data(&v),
        }
    }

    fn setxattr(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        name: &OsStr,
        value: &[u8],
        _flags: i32,
        _position: u32,
        reply: ReplyEmpty,
    ) {
        let mut st = self.lock();
        let Some(n) = st.nodes.get_mut(&ino) else {
            return reply.error(libc::ENOENT);
        };
        let Some(k) = name.to_str() else {
            return reply.error(libc::EINVAL);
        };
        n.xattrs.insert(k.into(), value.to_vec());
        reply.ok()
    }

    fn listxattr(&mut self, _req: &Request<'_>, ino: u64, size: u32, reply: ReplyXattr) {
        let st = self.lock();
        let mut list = Vec::new();
        if let Some(n) = st.nodes.get(&ino) {
            if n.seed.is_some() {
                list.extend_from_slice(SEED_XATTR.as_bytes());
                list.push(0);
            }
            for k in n.xattrs.keys() {
                list.extend_from_slice(k.as_bytes());
                list.push(0);
            }
        }
        if size == 0 {
            reply.size(list.len() as u32)
        } else if (size as usize) < list.len() {
            reply.error(libc::ERANGE)
        } else {
            reply.data(&list)
        }
    }

    fn fallocate(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        _fh: u64,
        _offset: i64,
        _length: i64,
        _mode: i32,
        reply: ReplyEmpty,
    ) {
        // Like many network file systems: callers fall back to writing.
        reply.error(libc::EOPNOTSUPP)
    }
}

/// A mounted fault file system; unmounted (lazily, so a stalled reader
/// cannot keep it) when dropped, including while a failing test unwinds.
pub struct Mounted {
    dir: PathBuf,
    session: Option<fuser::BackgroundSession>,
    stats: Arc<Stats>,
    release: Arc<AtomicBool>,
}

static MOUNTS: AtomicU64 = AtomicU64::new(0);

impl Mounted {
    /// Mounts a file system serving `files` on a new directory under the
    /// system's temporary directory.
    pub fn mount(files: Vec<FaultFile>) -> std::io::Result<Mounted> {
        let dir = std::env::temp_dir().join(format!(
            "iolab-faultfs-{}-{}",
            std::process::id(),
            MOUNTS.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir)?;
        let stats = Arc::new(Stats {
            first_eio_offset: AtomicU64::new(u64::MAX),
            ..Stats::default()
        });
        let release = Arc::new(AtomicBool::new(false));
        let fs = FaultFs::new(files, stats.clone(), release.clone());
        let opts = [
            MountOption::FSName("iolab-faultfs".into()),
            MountOption::Subtype("iolabfault".into()),
            MountOption::RW,
        ];
        let session = match fuser::spawn_mount2(fs, &dir, &opts) {
            Ok(s) => s,
            Err(e) => {
                let _ = std::fs::remove_dir(&dir);
                return Err(e);
            }
        };
        Ok(Mounted {
            dir,
            session: Some(session),
            stats,
            release,
        })
    }

    /// The mount point.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The path of a file in the mount.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// What the file system has seen so far.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        // Stalled replies answer at once, then the session unmounts.
        self.release.store(true, Ordering::SeqCst);
        if let Some(s) = self.session.take() {
            drop(s);
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// Mounts `files`, or skips the calling test when this machine cannot:
/// under `CI=true` a missing FUSE fails the test; otherwise it prints
/// `SKIPPED: <test>: <reason>` on stderr and returns from the test.
/// (A local equivalent of `iolab::require!`, which is not on main yet.)
#[macro_export]
macro_rules! mount_or_skip {
    ($test:expr, $files:expr) => {{
        let why = match $crate::available() {
            Ok(()) => match $crate::Mounted::mount($files) {
                Ok(m) => Ok(m),
                Err(e) => Err(format!("cannot mount a FUSE file system: {e}")),
            },
            Err(why) => Err(why),
        };
        match why {
            Ok(m) => m,
            Err(why) => {
                if std::env::var("CI").is_ok_and(|v| v == "true") {
                    panic!("{}: needs FUSE under CI=true: {}", $test, why);
                }
                eprintln!("SKIPPED: {}: {}", $test, why);
                return;
            }
        }
    }};
}
