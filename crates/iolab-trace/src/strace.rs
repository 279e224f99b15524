//! Converts an `strace -f -tt -T -y` log into a [`Trace`].
//!
//! The log names each call's file (`-y`), but not the offset a `read` or
//! `readv` reads at: that is tracked here per *open file description*, as
//! the kernel does. An open (`open`, `openat`, `openat2`, `creat`) makes a
//! description at offset 0; `dup`, `dup2`, `dup3` and `fcntl(F_DUPFD*)`
//! share it; `lseek` sets it (its result is the new offset); `read`,
//! `readv`, `write`, `writev`, `preadv2(-1)` and the offset-less sides of
//! `sendfile` / `copy_file_range` advance it; a write with `O_APPEND` moves
//! it to the end (known from `fstat` / earlier writes, else unknown).
//! `close`, `close_range` and, for close-on-exec descriptors, `execve` end
//! it. Threads made with `CLONE_FILES` share a descriptor table; `fork` and
//! a `clone` without it copy the table (sharing the descriptions, as the
//! kernel does). Calls split into `<unfinished ...>` and `<... resumed>`
//! lines are joined. Reads of pipes, sockets, terminals, devices, /proc and
//! /sys are left out and counted by kind, as are reads at an offset that
//! cannot be known (a descriptor inherited from before the trace began).
//!
//! Hand-written parsing: strace's output is not a grammar any crate parses.

use super::{Trace, TraceBuilder, TraceError, TraceFormat, TraceOp};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

/// The system calls `iolab record` asks strace to trace (`?`: fine if this
/// architecture lacks it).
pub const TRACED: &str =
    "?open,openat,?openat2,?creat,close,?close_range,dup,?dup2,?dup3,fcntl,lseek,\
read,pread64,readv,preadv,?preadv2,write,writev,pwrite64,?sendfile,?copy_file_range,mmap,\
?fstat,?newfstatat,clone,?clone3,?fork,?vfork,execve,?execveat";

/// Whether `line` looks like a line of an strace log.
pub fn looks_like(line: &str) -> bool {
    let (_, _, rest) = prefix(line);
    let rest = rest.trim_start();
    if rest.starts_with("<... ") {
        return true;
    }
    match rest.find('(') {
        Some(i) if i > 0 => rest[..i]
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
        _ => false,
    }
}

/// Splits off the optional pid (`123 ` or `[pid 123] `) and time
/// (`HH:MM:SS[.frac]` or `SECS.frac`), returning (pid, time ns, rest).
fn prefix(line: &str) -> (Option<u64>, Option<u64>, &str) {
    let mut s = line.trim_start();
    let mut pid = None;
    if let Some(r) = s.strip_prefix("[pid ") {
        if let Some(i) = r.find(']') {
            pid = r[..i].trim().parse().ok();
            s = r[i + 1..].trim_start();
        }
    } else {
        let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
        if end > 0 && s[end..].starts_with(' ') {
            pid = s[..end].parse().ok();
            s = s[end..].trim_start();
        }
    }
    let tok_end = s.find(' ').unwrap_or(s.len());
    let tok = &s[..tok_end];
    let t = time_ns(tok);
    if t.is_some() {
        s = s[tok_end..].trim_start();
    }
    (pid, t, s)
}

fn frac_ns(f: &str) -> Option<u64> {
    if f.is_empty() || f.len() > 9 || !f.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    format!("{f:0<9}").parse().ok()
}

fn time_ns(tok: &str) -> Option<u64> {
    let (whole, frac) = match tok.split_once('.') {
        Some((w, f)) => (w, frac_ns(f)?),
        None => (tok, 0),
    };
    let parts: Vec<&str> = whole.split(':').collect();
    let secs = match parts.as_slice() {
        [h, m, s] if h.len() == 2 && m.len() == 2 && s.len() == 2 => {
            h.parse::<u64>().ok()? * 3600 + m.parse::<u64>().ok()? * 60 + s.parse::<u64>().ok()?
        }
        // -ttt: seconds since the epoch (needs a fraction to be told apart
        // from a pid).
        [s] if tok.contains('.') && !s.is_empty() => s.parse().ok()?,
        _ => return None,
    };
    Some(secs * 1_000_000_000 + frac)
}

/// Splits a call's argument text at top-level commas.
fn split_args(s: &str) -> Vec<&str> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let (mut depth, mut start, mut i) = (0i32, 0usize, 0usize);
    while i < b.len() {
        match b[i] {
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            // An fd's path annotation: `3</a, b>`.
            b'<' if i > 0 && b[i - 1].is_ascii_digit() => {
                if let Some(j) = s[i..].find('>') {
                    i += j;
                }
            }
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            b',' if depth == 0 => {
                out.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    let last = s[start..].trim();
    if !last.is_empty() || !out.is_empty() {
        out.push(last);
    }
    out
}

/// `3</path>` → (3, Some("/path")); `3` → (3, None); `AT_FDCWD` → None.
fn fd_arg(a: &str) -> Option<(i64, Option<String>)> {
    let a = a.trim();
    let end = a
        .char_indices()
        .find(|&(i, c)| !(c.is_ascii_digit() || (i == 0 && c == '-')))
        .map(|(i, _)| i)
        .unwrap_or(a.len());
    let fd: i64 = a[..end].parse().ok()?;
    let rest = &a[end..];
    let path = rest
        .strip_prefix('<')
        .and_then(|r| r.strip_suffix('>'))
        .map(clean_path);
    Some((fd, path))
}

fn clean_path(p: &str) -> String {
    p.strip_suffix(" (deleted)").unwrap_or(p).to_string()
}

/// A quoted string argument, unescaped (None when truncated by `-s`).
fn string_arg(a: &str) -> Option<String> {
    let a = a.trim();
    if a.ends_with("...") {
        return None;
    }
    let inner = a.strip_prefix('"')?.strip_suffix('"')?;
    if inner.is_empty() {
        return None;
    }
    let mut out = Vec::new();
    let b = inner.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 1 < b.len() {
            i += 1;
            match b[i] {
                b'n' => out.push(b'\n'),
                b't' => out.push(b'\t'),
                b'x' if i + 2 < b.len() + 1 => {
                    let h = inner.get(i + 1..i + 3)?;
                    out.push(u8::from_str_radix(h, 16).ok()?);
                    i += 2;
                }
                c => out.push(c),
            }
        } else {
            out.push(b[i]);
        }
        i += 1;
    }
    Some(String::from_utf8_lossy(&out).into_owned())
}

/// `[4096]` or `[4096] => [8192]` → 4096; `NULL` → None.
fn offset_ptr(a: &str) -> Option<u64> {
    let a = a.trim();
    let inner = a.strip_prefix('[')?;
    let end = inner.find(']')?;
    inner[..end].trim().parse().ok()
}

/// What kind of thing a `-y` path names, when it is not a file on storage.
fn kind_of(path: &str) -> Option<&'static str> {
    const SOCK: [&str; 8] = [
        "socket:", "UNIX", "TCP", "UDP", "NETLINK", "RAW", "SCTP", "PACKET",
    ];
    Some(if path.starts_with("pipe:") {
        "pipe"
    } else if SOCK.iter().any(|p| path.starts_with(p)) {
        "socket"
    } else if path.starts_with("/dev/pts/")
        || path.starts_with("/dev/tty")
        || path == "/dev/console"
        || path == "/dev/ptmx"
    {
        "tty"
    } else if path.starts_with("/proc/") || path == "/proc" {
        "proc"
    } else if path.starts_with("/sys/") {
        "sys"
    } else if path.starts_with("/dev/") {
        "device"
    } else if path.starts_with("anon_inode:") {
        "anon_inode"
    } else if path.starts_with("/memfd:") {
        "memfd"
    } else {
        return None;
    })
}

/// An open file description.
#[derive(Debug)]
struct Ofd {
    path: Option<String>,
    offset: Option<u64>,
    append: bool,
}

#[derive(Clone, Debug)]
struct FdEntry {
    ofd: Rc<RefCell<Ofd>>,
    cloexec: bool,
}

type Table = Rc<RefCell<HashMap<i64, FdEntry>>>;

/// One complete call.
#[derive(Clone, Debug)]
struct Call {
    tid: u64,
    t_ns: Option<u64>,
    line: usize,
    name: String,
    args: String,
    /// The result text after `= `.
    result: String,
}

impl Call {
    /// The numeric result, None for errors and `?`.
    fn ret(&self) -> Option<i64> {
        let r = self.result.trim();
        let end = r
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .unwrap_or(r.len());
        let tok = &r[..end];
        if tok.starts_with('-') {
            return None;
        }
        if let Some(h) = tok.strip_prefix("0x") {
            return i64::from_str_radix(h, 16).ok().or(Some(1));
        }
        tok.parse().ok()
    }

    /// The `-y` path annotation of an fd result (`3</path>`).
    fn ret_path(&self) -> Option<String> {
        let r = self.result.trim();
        let i = r.find('<')?;
        let s = &r[i + 1..];
        let end = s
            .rfind("> <")
            .or_else(|| s.strip_suffix('>').map(|x| x.len()))?;
        Some(clean_path(&s[..end]))
    }
}

/// The interesting calls, so others are skipped without parsing their args.
const HANDLED: [&str; 32] = [
    "open",
    "openat",
    "openat2",
    "creat",
    "close",
    "close_range",
    "dup",
    "dup2",
    "dup3",
    "fcntl",
    "fcntl64",
    "lseek",
    "read",
    "pread64",
    "readv",
    "preadv",
    "preadv2",
    "write",
    "writev",
    "pwrite64",
    "sendfile",
    "sendfile64",
    "copy_file_range",
    "mmap",
    "fstat",
    "newfstatat",
    "clone",
    "clone3",
    "fork",
    "vfork",
    "execve",
    "execveat",
];

struct Converter<'a> {
    name: &'a str,
    b: TraceBuilder,
    tables: HashMap<u64, Table>,
    /// Calls of tasks seen before the clone that made them returned.
    waiting: HashMap<u64, Vec<Call>>,
    waiting_order: Vec<u64>,
    /// Known file sizes (for O_APPEND), by path.
    sizes: HashMap<String, u64>,
}

impl<'a> Converter<'a> {
    fn err(&self, line: usize, msg: impl Into<String>) -> TraceError {
        TraceError::at(self.name, line, msg)
    }

    fn arg<'c>(&self, c: &Call, args: &[&'c str], i: usize) -> Result<&'c str, TraceError> {
        args.get(i).copied().ok_or_else(|| {
            self.err(
                c.line,
                format!("{}: expected at least {} arguments", c.name, i + 1),
            )
        })
    }

    fn fd(&self, c: &Call, args: &[&str], i: usize) -> Result<(i64, Option<String>), TraceError> {
        let a = self.arg(c, args, i)?;
        fd_arg(a).ok_or_else(|| {
            self.err(
                c.line,
                format!("{}: '{a}' is not a file descriptor", c.name),
            )
        })
    }

    fn num(&self, c: &Call, args: &[&str], i: usize) -> Result<i64, TraceError> {
        let a = self.arg(c, args, i)?;
        let v = if let Some(h) = a.strip_prefix("0x") {
            i64::from_str_radix(h, 16).ok()
        } else {
            a.parse().ok()
        };
        v.ok_or_else(|| self.err(c.line, format!("{}: '{a}' is not a number", c.name)))
    }

    /// Handles a call: runs it now if its task's table is known, else
    /// keeps it until the clone that made the task returns.
    fn call(&mut self, c: Call) -> Result<(), TraceError> {
        if !self.tables.contains_key(&c.tid) {
            if self.tables.is_empty() && self.waiting.is_empty() {
                // The first task of the log: the traced program itself.
                self.tables.insert(c.tid, Rc::default());
            } else {
                if !self.waiting.contains_key(&c.tid) {
                    self.waiting_order.push(c.tid);
                }
                self.waiting.entry(c.tid).or_default().push(c);
                return Ok(());
            }
        }
        self.run(c)
    }

    /// A new task `child` of `parent`, sharing or copying its table.
    fn spawn(&mut self, parent: u64, child: u64, share: bool) -> Result<(), TraceError> {
        let pt = self.tables.get(&parent).cloned().unwrap_or_default();
        let t = if share {
            pt
        } else {
            Rc::new(RefCell::new(pt.borrow().clone()))
        };
        self.tables.insert(child, t);
        if let Some(calls) = self.waiting.remove(&child) {
            self.waiting_order.retain(|&x| x != child);
            for c in calls {
                self.call(c)?;
            }
        }
        Ok(())
    }

    fn entry(&self, tid: u64, fd: i64) -> Option<FdEntry> {
        self.tables.get(&tid)?.borrow().get(&fd).cloned()
    }

    fn set(&self, tid: u64, fd: i64, e: FdEntry) {
        if let Some(t) = self.tables.get(&tid) {
            t.borrow_mut().insert(fd, e);
        }
    }

    /// The description behind `fd`, creating one at an unknown offset for
    /// a descriptor opened before the trace began.
    fn ofd(&self, tid: u64, fd: i64, path: &Option<String>) -> Rc<RefCell<Ofd>> {
        if let Some(e) = self.entry(tid, fd) {
            if let (Some(p), true) = (path, e.ofd.borrow().path.is_none()) {
                e.ofd.borrow_mut().path = Some(p.clone());
            }
            return e.ofd;
        }
        let ofd = Rc::new(RefCell::new(Ofd {
            path: path.clone(),
            offset: None,
            append: false,
        }));
        self.set(
            tid,
            fd,
            FdEntry {
                ofd: ofd.clone(),
                cloexec: false,
            },
        );
        ofd
    }

    /// Records a read of `n` bytes from `fd` at `at` (None: at the
    /// description's offset, which then advances).
    fn read(
        &mut self,
        c: &Call,
        fd: i64,
        path: Option<String>,
        at: Option<u64>,
        n: u64,
        op: TraceOp,
    ) {
        let ofd = self.ofd(c.tid, fd, &path);
        let path = path.or_else(|| ofd.borrow().path.clone());
        let offset = match at {
            Some(o) => Some(o),
            None => {
                let mut d = ofd.borrow_mut();
                let o = d.offset;
                d.offset = o.map(|o| o + n);
                o
            }
        };
        let Some(path) = path else {
            self.b.skip("unknown file");
            return;
        };
        if let Some(kind) = kind_of(&path) {
            self.b.skip(kind);
            return;
        }
        match offset {
            Some(o) => self.b.read(&path, o, n, op, c.tid, c.t_ns),
            None => self.b.skip("unknown offset"),
        }
    }

    /// A write of `n` bytes to `fd` (None: at the description's offset).
    fn write(&mut self, c: &Call, fd: i64, path: Option<String>, at: Option<u64>, n: u64) {
        let ofd = self.ofd(c.tid, fd, &path);
        let mut d = ofd.borrow_mut();
        let path = path.or_else(|| d.path.clone());
        let size = path.as_ref().and_then(|p| self.sizes.get(p).copied());
        let end = match at {
            Some(o) => Some(o + n),
            None if d.append => {
                let e = size.map(|s| s + n);
                d.offset = e;
                e
            }
            None => {
                d.offset = d.offset.map(|o| o + n);
                d.offset
            }
        };
        if let (Some(p), Some(e)) = (path, end) {
            let s = self.sizes.entry(p).or_insert(0);
            *s = (*s).max(e);
        }
    }

    /// Applies one call to the descriptor tables and the trace; the
    /// larger cases each have their own method.
    // Long on purpose: one arm per system call, the table of what each
    // does to the descriptors read in one place.
    fn run(&mut self, c: Call) -> Result<(), TraceError> {
        let args_text = c.args.clone();
        let args = split_args(&args_text);
        let ret = c.ret();
        let tid = c.tid;
        match c.name.as_str() {
            "open" | "openat" | "openat2" | "creat" => self.on_open(&c, &args, ret)?,
            "close" => {
                let (fd, _) = self.fd(&c, &args, 0)?;
                if let Some(t) = self.tables.get(&tid) {
                    t.borrow_mut().remove(&fd);
                }
            }
            "close_range" => self.on_close_range(&c, &args, ret)?,
            "dup" | "dup2" | "dup3" => {
                let Some(new) = ret else { return Ok(()) };
                let (old, path) = self.fd(&c, &args, 0)?;
                let ofd = self.ofd(tid, old, &path);
                let cloexec = c.name == "dup3" && self.arg(&c, &args, 2)?.contains("O_CLOEXEC");
                self.set(tid, new, FdEntry { ofd, cloexec });
            }
            "fcntl" | "fcntl64" => self.on_fcntl(&c, &args, ret)?,
            "lseek" => {
                let Some(off) = ret else { return Ok(()) };
                let (fd, path) = self.fd(&c, &args, 0)?;
                self.ofd(tid, fd, &path).borrow_mut().offset = Some(off as u64);
            }
            "read" | "readv" => {
                let Some(n) = ret else { return Ok(()) };
                let (fd, path) = self.fd(&c, &args, 0)?;
                let op = if c.name == "read" {
                    TraceOp::Read
                } else {
                    TraceOp::Readv
                };
                self.read(&c, fd, path, None, n as u64, op);
            }
            "pread64" | "preadv" | "preadv2" => self.on_pread(&c, &args, ret)?,
            "write" | "writev" | "pwrite64" => {
                let Some(n) = ret else { return Ok(()) };
                let (fd, path) = self.fd(&c, &args, 0)?;
                let at = if c.name == "pwrite64" {
                    Some(self.num(&c, &args, 3)? as u64)
                } else {
                    None
                };
                self.write(&c, fd, path, at, n as u64);
            }
            "sendfile" | "sendfile64" => {
                let Some(n) = ret else { return Ok(()) };
                let (out, out_path) = self.fd(&c, &args, 0)?;
                let (inp, in_path) = self.fd(&c, &args, 1)?;
                let at = offset_ptr(self.arg(&c, &args, 2)?);
                self.read(&c, inp, in_path, at, n as u64, TraceOp::Sendfile);
                self.write(&c, out, out_path, None, n as u64);
            }
            "copy_file_range" => self.on_copy_file_range(&c, &args, ret)?,
            "mmap" => self.on_mmap(&c, &args, ret)?,
            "fstat" | "newfstatat" => self.on_fstat(&c, &args, ret)?,
            "clone" | "clone3" | "fork" | "vfork" => {
                if let Some(child) = ret.filter(|&v| v > 0) {
                    let share = c.args.contains("CLONE_FILES");
                    self.spawn(tid, child as u64, share)?;
                }
            }
            "execve" | "execveat" if ret == Some(0) => {
                if let Some(t) = self.tables.get(&tid) {
                    t.borrow_mut().retain(|_, e| !e.cloexec);
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// `open`, `openat`, `openat2`, `creat`: a new descriptor on a new open file.
    fn on_open(&mut self, c: &Call, args: &[&str], ret: Option<i64>) -> Result<(), TraceError> {
        let tid = c.tid;
        let Some(fd) = ret else { return Ok(()) };
        let (path_i, flags) = match c.name.as_str() {
            "open" => (0, self.arg(c, args, 1)?.to_string()),
            "creat" => (0, "O_CREAT|O_WRONLY|O_TRUNC".to_string()),
            _ => (1, self.arg(c, args, 2)?.to_string()),
        };
        let path = c
            .ret_path()
            .or_else(|| string_arg(args.get(path_i).copied().unwrap_or("")));
        if flags.contains("O_TRUNC") {
            if let Some(p) = &path {
                self.sizes.insert(p.clone(), 0);
            }
        }
        let ofd = Rc::new(RefCell::new(Ofd {
            path,
            offset: Some(0),
            append: flags.contains("O_APPEND"),
        }));
        self.set(
            tid,
            fd,
            FdEntry {
                ofd,
                cloexec: flags.contains("O_CLOEXEC"),
            },
        );
        Ok(())
    }

    /// `close_range`: closes (or marks close-on-exec) a range of descriptors.
    fn on_close_range(
        &mut self,
        c: &Call,
        args: &[&str],
        ret: Option<i64>,
    ) -> Result<(), TraceError> {
        let tid = c.tid;
        if ret.is_none() {
            return Ok(());
        }
        let lo = self.num(c, args, 0)?;
        let hi = self.arg(c, args, 1)?;
        let hi: i64 = if hi.starts_with('~') || hi.starts_with("4294967295") {
            i64::MAX
        } else {
            self.num(c, args, 1)?
        };
        let cloexec = self.arg(c, args, 2).unwrap_or("0").contains("CLOEXEC");
        if let Some(t) = self.tables.get(&tid) {
            let mut t = t.borrow_mut();
            if cloexec {
                for (_, e) in t.iter_mut().filter(|(fd, _)| (lo..=hi).contains(*fd)) {
                    e.cloexec = true;
                }
            } else {
                t.retain(|fd, _| !(lo..=hi).contains(fd));
            }
        }
        Ok(())
    }

    /// `fcntl`: duplicates, close-on-exec and append mode.
    fn on_fcntl(&mut self, c: &Call, args: &[&str], ret: Option<i64>) -> Result<(), TraceError> {
        let tid = c.tid;
        let Some(r) = ret else { return Ok(()) };
        let (fd, path) = self.fd(c, args, 0)?;
        let cmd = self.arg(c, args, 1)?;
        if cmd.starts_with("F_DUPFD") {
            let ofd = self.ofd(tid, fd, &path);
            self.set(
                tid,
                r,
                FdEntry {
                    ofd,
                    cloexec: cmd == "F_DUPFD_CLOEXEC",
                },
            );
        } else if cmd == "F_SETFD" {
            let v = self.arg(c, args, 2)?;
            let on = v.contains("FD_CLOEXEC") || v == "1";
            if let Some(t) = self.tables.get(&tid) {
                if let Some(e) = t.borrow_mut().get_mut(&fd) {
                    e.cloexec = on;
                }
            }
        } else if cmd == "F_SETFL" {
            let v = self.arg(c, args, 2)?.contains("O_APPEND");
            self.ofd(tid, fd, &path).borrow_mut().append = v;
        }
        Ok(())
    }

    /// `pread64`, `preadv`, `preadv2`: reads at an offset (-1: the file's own).
    fn on_pread(&mut self, c: &Call, args: &[&str], ret: Option<i64>) -> Result<(), TraceError> {
        let Some(n) = ret else { return Ok(()) };
        let (fd, path) = self.fd(c, args, 0)?;
        let off = self.num(c, args, 3)?;
        let op = match c.name.as_str() {
            "pread64" => TraceOp::Pread,
            "preadv" => TraceOp::Preadv,
            _ => TraceOp::Preadv2,
        };
        let at = if off < 0 { None } else { Some(off as u64) };
        self.read(c, fd, path, at, n as u64, op);
        Ok(())
    }

    /// `copy_file_range`: a read from one file and a write to another.
    fn on_copy_file_range(
        &mut self,
        c: &Call,
        args: &[&str],
        ret: Option<i64>,
    ) -> Result<(), TraceError> {
        let Some(n) = ret else { return Ok(()) };
        let (inp, in_path) = self.fd(c, args, 0)?;
        let at = offset_ptr(self.arg(c, args, 1)?);
        let (out, out_path) = self.fd(c, args, 2)?;
        let out_at = offset_ptr(self.arg(c, args, 3)?);
        self.read(c, inp, in_path, at, n as u64, TraceOp::CopyFileRange);
        self.write(c, out, out_path, out_at, n as u64);
        Ok(())
    }

    /// `mmap` of a regular file: a mapping.
    fn on_mmap(&mut self, c: &Call, args: &[&str], ret: Option<i64>) -> Result<(), TraceError> {
        let tid = c.tid;
        if ret.is_none() {
            return Ok(());
        }
        let (fd, path) = self.fd(c, args, 4)?;
        if fd < 0 {
            return Ok(());
        }
        let len = self.num(c, args, 1)? as u64;
        let off = self.num(c, args, 5)? as u64;
        let path = path.or_else(|| {
            self.entry(tid, fd)
                .and_then(|e| e.ofd.borrow().path.clone())
        });
        match path {
            Some(p) if kind_of(&p).is_none() => self.b.map(&p, off, len, tid, c.t_ns),
            _ => {}
        }
        Ok(())
    }

    /// `fstat` of a regular file: its size.
    fn on_fstat(&mut self, c: &Call, args: &[&str], ret: Option<i64>) -> Result<(), TraceError> {
        if ret != Some(0) {
            return Ok(());
        }
        let Some((_, Some(path))) = args.first().and_then(|a| fd_arg(a)) else {
            return Ok(());
        };
        if !(c.name == "fstat" || args.get(1) == Some(&"\"\"")) {
            return Ok(());
        }
        if c.args.contains("S_IFREG") {
            if let Some(i) = c.args.find("st_size=") {
                let s = &c.args[i + 8..];
                let end = s.find(|ch: char| !ch.is_ascii_digit()).unwrap_or(s.len());
                if let Ok(v) = s[..end].parse::<u64>() {
                    self.sizes.insert(path, v);
                }
            }
        }
        Ok(())
    }
}

/// One complete call line `text` (begun on line `first_line` at `t_ns`)
/// as NAME(ARGS) = RESULT; None for calls the trace ignores and calls that
/// never returned.
fn split_call(
    name: &str,
    n: usize,
    text: &str,
    tid: u64,
    t_ns: Option<u64>,
    first_line: usize,
) -> Result<Option<Call>, TraceError> {
    let bad = || TraceError::at(name, n, format!("'{text}': expected NAME(ARGS) = RESULT"));
    let open = text.find('(').ok_or_else(bad)?;
    let sys = &text[..open];
    if sys.is_empty() || !sys.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return Err(bad());
    }
    if !HANDLED.contains(&sys) {
        return Ok(None);
    }
    // strace pads short calls' results to a column: `close(-1)   = -1 EBADF`.
    let split = text.rfind(" = ").and_then(|i| {
        let head = text[..i].trim_end();
        head.ends_with(')').then(|| (head.len() - 1, i + 3))
    });
    let Some((close, result)) = split else {
        // A call that never returned (the task exited): `= ?` lines too.
        if text.ends_with("= ?") || text.contains(") = ?") {
            return Ok(None);
        }
        return Err(TraceError::at(
            name,
            n,
            format!("'{text}': no result ') = ...' on this line"),
        ));
    };
    Ok(Some(Call {
        tid,
        t_ns,
        line: first_line,
        name: sys.to_string(),
        args: text[open + 1..close].to_string(),
        result: text[result..].to_string(),
    }))
}

/// Parses an strace log.
// Long on purpose: one pass over the lines whose state (unfinished calls,
// the clock across midnight) lives in this loop's locals.
pub fn parse(text: &str, name: &str) -> Result<Trace, TraceError> {
    let mut cv = Converter {
        name,
        b: TraceBuilder::new(TraceFormat::Strace),
        tables: HashMap::new(),
        waiting: HashMap::new(),
        waiting_order: Vec::new(),
        sizes: HashMap::new(),
    };
    // Unfinished calls by task: (text so far, start time, line).
    let mut pending: HashMap<u64, (String, Option<u64>, usize)> = HashMap::new();
    let mut t0: Option<u64> = None;
    let mut last_raw: Option<u64> = None;
    let mut day: u64 = 0;
    const DAY: u64 = 86_400 * 1_000_000_000;
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.trim_end();
        if line.trim().is_empty() || line.starts_with("strace: ") {
            continue;
        }
        let (pid, t, rest) = prefix(line);
        let tid = pid.unwrap_or(0);
        // Time relative to the first line, across midnight.
        let t_ns = t.map(|raw_t| {
            if let Some(l) = last_raw {
                if raw_t + DAY / 2 < l {
                    day += DAY;
                }
            }
            last_raw = Some(raw_t);
            let abs = raw_t + day;
            abs - *t0.get_or_insert(abs)
        });
        if rest.starts_with("---") || rest.starts_with("+++") || rest.is_empty() {
            continue;
        }
        let (text, start, first_line) = if let Some(r) = rest.strip_prefix("<... ") {
            let Some(k) = r.find(" resumed>") else {
                return Err(TraceError::at(
                    name,
                    n,
                    format!("'{rest}': expected '<... NAME resumed>'"),
                ));
            };
            match pending.remove(&tid) {
                Some((head, st, l)) => (format!("{head}{}", &r[k + 9..]), st, l),
                // The call began before the log did.
                None => continue,
            }
        } else {
            (rest.to_string(), t_ns, n)
        };
        if let Some(head) = text.strip_suffix("<unfinished ...>") {
            pending.insert(tid, (head.trim_end().to_string(), start, first_line));
            continue;
        }
        let Some(call) = split_call(name, n, &text, tid, start, first_line)? else {
            continue;
        };
        cv.call(call)?;
    }
    // Tasks whose clone never appeared (attached later): fresh tables.
    for tid in std::mem::take(&mut cv.waiting_order) {
        if let Some(calls) = cv.waiting.remove(&tid) {
            cv.tables.insert(tid, Rc::default());
            for c in calls {
                cv.run(c)?;
            }
        }
    }
    cv.b.sort_by_time();
    Ok(cv.b.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reads(t: &Trace) -> Vec<(String, u64, u64, TraceOp, u64)> {
        t.reads
            .iter()
            .map(|r| {
                (
                    t.files[r.file as usize].clone(),
                    r.offset,
                    r.len,
                    r.op,
                    r.thread,
                )
            })
            .collect()
    }

    #[test]
    fn tracks_offsets_through_open_lseek_dup_and_close() {
        let log = r#"100 10:00:00.000001 openat(AT_FDCWD</w>, "/d/a", O_RDONLY|O_CLOEXEC) = 3</d/a> <0.000010>
100 10:00:00.000002 read(3</d/a>, ""..., 100) = 100 <0.000010>
100 10:00:00.000003 read(3</d/a>, ""..., 100) = 50 <0.000010>
100 10:00:00.000004 lseek(3</d/a>, 4096, SEEK_SET) = 4096 <0.000010>
100 10:00:00.000005 dup(3</d/a>) = 4</d/a> <0.000010>
100 10:00:00.000006 read(4</d/a>, ""..., 10) = 10 <0.000010>
100 10:00:00.000007 read(3</d/a>, ""..., 10) = 10 <0.000010>
100 10:00:00.000008 pread64(3</d/a>, ""..., 512, 65536) = 512 <0.000010>
100 10:00:00.000009 readv(3</d/a>, [{iov_base=""..., iov_len=8}, {iov_base=""..., iov_len=8}], 2) = 16 <0.000010>
100 10:00:00.000010 preadv(3</d/a>, [{iov_base=""..., iov_len=8}], 1, 100) = 8 <0.000010>
100 10:00:00.000011 preadv2(3</d/a>, [{iov_base=""..., iov_len=8}], 1, -1, RWF_NOWAIT) = 8 <0.000010>
100 10:00:00.000012 close(3</d/a>)           = 0 <0.000010>
100 10:00:00.000012 close(-1)                 = -1 EBADF (Bad file descriptor) <0.000010>
100 10:00:00.000013 read(4</d/a>, ""..., 4) = 4 <0.000010>
100 10:00:00.000014 read(0</dev/pts/0>, ""..., 4) = 4 <0.000010>
100 10:00:00.000015 read(5<pipe:[123]>, ""..., 4) = 4 <0.000010>
100 10:00:00.000016 read(6</proc/self/stat>, ""..., 4) = 4 <0.000010>
100 10:00:00.000017 read(7<socket:[9]>, ""..., 4) = 4 <0.000010>
100 10:00:00.000018 read(8</d/inherited>, ""..., 4) = 4 <0.000010>
100 10:00:00.000019 mmap(NULL, 8192, PROT_READ, MAP_PRIVATE, 4</d/a>, 0x1000) = 0x7f0000000000 <0.000010>
100 10:00:00.000020 read(9</d/missing>, ""..., 4) = -1 EBADF (Bad file descriptor) <0.000010>
"#;
        let t = parse(log, "s").unwrap();
        let a = "/d/a".to_string();
        use TraceOp::*;
        assert_eq!(
            reads(&t),
            vec![
                (a.clone(), 0, 100, Read, 100),
                (a.clone(), 100, 50, Read, 100),
                (a.clone(), 4096, 10, Read, 100),
                (a.clone(), 4106, 10, Read, 100),
                (a.clone(), 65536, 512, Pread, 100),
                (a.clone(), 4116, 16, Readv, 100),
                (a.clone(), 100, 8, Preadv, 100),
                (a.clone(), 4132, 8, Preadv2, 100),
                (a.clone(), 4140, 4, Read, 100),
            ]
        );
        // Times count from the log's first line.
        assert_eq!(t.reads[0].t_ns, Some(1000));
        assert_eq!(t.reads[1].t_ns, Some(2000));
        for (k, v) in [
            ("tty", 1),
            ("pipe", 1),
            ("proc", 1),
            ("socket", 1),
            ("unknown offset", 1),
        ] {
            assert_eq!(t.skipped.get(k), Some(&v), "{k}: {:?}", t.skipped);
        }
        assert_eq!(t.mappings.len(), 1);
        assert_eq!((t.mappings[0].offset, t.mappings[0].len), (4096, 8192));
    }

    #[test]
    fn unfinished_resumed_threads_fork_and_exec() {
        let log = r#"200 00:00:01.000000 openat(AT_FDCWD, "/d/b", O_RDONLY) = 3</d/b>
200 00:00:01.000001 openat(AT_FDCWD, "/d/c", O_RDONLY|O_CLOEXEC) = 4</d/c>
200 00:00:01.000002 clone(child_stack=0x1, flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_THREAD <unfinished ...>
201 00:00:01.000003 read(3</d/b>, ""..., 10) = 10
200 00:00:01.000004 <... clone resumed>, parent_tid=[201]) = 201
200 00:00:01.000005 read(3</d/b>,  <unfinished ...>
201 00:00:01.000006 read(4</d/c>, ""..., 7) = 7
200 00:00:01.000007 <... read resumed>""..., 10) = 10
200 00:00:01.000008 clone(child_stack=NULL, flags=CLONE_CHILD_SETTID|SIGCHLD) = 202
202 00:00:01.000009 read(3</d/b>, ""..., 5) = 5
200 00:00:01.000010 read(3</d/b>, ""..., 5) = 5
202 00:00:01.000011 fcntl(3</d/b>, F_DUPFD_CLOEXEC, 10) = 10</d/b>
202 00:00:01.000012 execve("/bin/x", [], 0x0 /* 0 vars */) = 0
202 00:00:01.000013 read(4, ""..., 5) = 5
202 00:00:01.000014 read(3</d/b>, ""..., 5) = 5
202 00:00:01.000015 +++ exited with 0 +++
"#;
        let t = parse(log, "s").unwrap();
        let (b, c) = ("/d/b".to_string(), "/d/c".to_string());
        use TraceOp::Read;
        assert_eq!(
            reads(&t),
            vec![
                (b.clone(), 0, 10, Read, 201),
                (b.clone(), 10, 10, Read, 200),
                (c.clone(), 0, 7, Read, 201),
                (b.clone(), 20, 5, Read, 202),
                (b.clone(), 25, 5, Read, 200),
                (b.clone(), 30, 5, Read, 202),
            ]
        );
        // fd 4 was close-on-exec: after execve its read has no known file.
        assert_eq!(t.skipped.get("unknown file"), Some(&1), "{:?}", t.skipped);
    }

    #[test]
    fn a_vforked_child_and_its_threads_share_its_descriptors() {
        // `sh -c 'zstd ...'`: the shell vforks, the child execs and opens
        // the file, and a thread of the child (clone3, CLONE_FILES) reads it.
        let log = r#"100 00:00:01.000000 execve("/bin/sh", [], 0x1 /* 1 vars */) = 0
100 00:00:01.000001 vfork( <unfinished ...>
101 00:00:01.000002 execve("/bin/zstd", [], 0x2 /* 1 vars */ <unfinished ...>
100 00:00:01.000003 <... vfork resumed>) = 101
101 00:00:01.000004 <... execve resumed>) = 0
101 00:00:01.000005 clone3({flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD, child_tid=0x1, parent_tid=0x1, exit_signal=0, stack=0x1, stack_size=0x7fff80, tls=0x1} => {parent_tid=[102]}, 88) = 102
101 00:00:01.000006 openat(AT_FDCWD</d>, "s.bin", O_RDONLY) = 3</d/s.bin>
102 00:00:01.000007 read(3</d/s.bin>, ""..., 131072) = 131072
102 00:00:01.000008 read(3</d/s.bin>, ""..., 131072) = 131072
"#;
        let t = parse(log, "s").unwrap();
        let f = "/d/s.bin".to_string();
        assert_eq!(
            reads(&t),
            vec![
                (f.clone(), 0, 131072, TraceOp::Read, 102),
                (f, 131072, 131072, TraceOp::Read, 102),
            ]
        );
        assert!(t.skipped.is_empty(), "{:?}", t.skipped);
    }

    #[test]
    fn sendfile_copy_file_range_and_append() {
        let log = r#"1 00:00:00.1 openat(AT_FDCWD, "/d/s", O_RDONLY) = 3</d/s>
1 00:00:00.2 sendfile(1</dev/pts/0>, 3</d/s>, NULL, 100) = 100
1 00:00:00.3 sendfile(1</dev/pts/0>, 3</d/s>, [1000] => [1050], 50) = 50
1 00:00:00.4 copy_file_range(3</d/s>, NULL, 5</d/out>, NULL, 20, 0) = 20
1 00:00:00.5 openat(AT_FDCWD, "/d/log", O_RDWR|O_APPEND) = 6</d/log>
1 00:00:00.6 newfstatat(6</d/log>, "", {st_mode=S_IFREG|0644, st_size=300, ...}, AT_EMPTY_PATH) = 0
1 00:00:00.7 write(6</d/log>, ""..., 10) = 10
1 00:00:00.8 read(6</d/log>, ""..., 10) = 0
1 00:00:00.9 lseek(6</d/log>, -10, SEEK_CUR) = 300
1 00:00:01.0 read(6</d/log>, ""..., 10) = 10
"#;
        let t = parse(log, "s").unwrap();
        let r = reads(&t);
        assert_eq!((r[0].1, r[0].2, r[0].3), (0, 100, TraceOp::Sendfile));
        assert_eq!((r[1].1, r[1].2), (1000, 50));
        assert_eq!((r[2].1, r[2].2, r[2].3), (100, 20, TraceOp::CopyFileRange));
        assert_eq!((r[3].0.as_str(), r[3].1, r[3].2), ("/d/log", 300, 10));
        assert_eq!(r.len(), 4);
    }

    #[test]
    fn malformed_lines_name_their_number() {
        let e = parse(
            "1 00:00:00.1 read(3</a>, \"\"..., 4) = 4\n1 00:00:00.2 read(x, 1) = 4\n",
            "l",
        )
        .unwrap_err();
        assert!(e.to_string().starts_with("l:2:"), "{e}");
        let e = parse(
            "1 00:00:00.1 read(3</a>, \"\"..., 4) = 4\n1 00:00:00.2 ??\n",
            "l",
        )
        .unwrap_err();
        assert!(e.to_string().starts_with("l:2:"), "{e}");
        assert!(looks_like(
            "12 10:00:00.000001 execve(\"/bin/true\", [], 0x0) = 0"
        ));
        assert!(!looks_like("file,offset,len"));
    }
}
