//! The one writer of output files (`--csv`, `--jsonl`, and every future
//! output of every command). Nothing else in iolab opens a file to write
//! results.
//!
//! Use it in two steps:
//! 1. [`OutputTarget::check`] before anything is measured: it looks at the
//!    path and refuses (exit status 2, one line naming the flag) whatever
//!    would harm what is not iolab's. It has no side effects.
//! 2. [`OutputTarget::write_all_atomically`] (the whole contents, rewritten
//!    after each configuration) or [`OutputTarget::append_jsonl`] (one more
//!    record line) as results come in.
//!
//! The rules:
//! - an existing regular file is replaced only with `--overwrite`
//!   ([`Mode::Replace`]); [`Mode::Append`] appends only to an empty file or
//!   one whose lines are all iolab records;
//! - a character device or FIFO (`/dev/stdout`, `/dev/null`, a named pipe)
//!   is opened for writing in place: never created, truncated or renamed
//!   over; a socket, a directory or a block device is refused;
//! - a symlink is followed (its target is written), never replaced, and a
//!   link whose target does not exist is refused: no file is created
//!   through a link;
//! - an existing file is written only if this user may write that file
//!   itself (replacing by rename needs only the directory's permission),
//!   and replacing never gives a file to another owner;
//! - `-` is stdout;
//! - a missing parent directory, no write permission or a read-only file
//!   system is reported before measuring;
//! - the output may not be a file the run measures (same inode, or the
//!   same path for a file still to be created);
//! - regular files are written to a temporary file next to them and
//!   renamed into place; the temporary file is registered with
//!   [`crate::cleanup`] by inode, so a failure or Ctrl-C removes it.

use crate::cleanup;
use crate::error::usage;
use iolab::file::FileIdent;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// Where a streamed output's pieces go (see [`OutputTarget::write_streamed`]).
pub type Sink<'a> = dyn FnMut(&[u8]) -> anyhow::Result<()> + 'a;

/// How the output is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The whole contents are rewritten each time (CSV, sys JSONL documents).
    Replace,
    /// Lines are appended (`--jsonl`: several runs collect into one file).
    Append,
}

/// What the path turned out to be when checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dest {
    /// Nothing there yet: iolab creates it.
    New,
    /// A regular file that may be replaced (Replace + --overwrite) or
    /// appended to (Append, holding only iolab records).
    Existing,
    /// A character device or FIFO: written in place.
    Stream,
}

/// A checked output destination. See the module documentation.
#[derive(Debug)]
pub struct OutputTarget {
    flag: &'static str,
    given: PathBuf,
    path: PathBuf,
    mode: Mode,
    dest: Dest,
    overwrite: bool,
    /// The regular file this run last put in place (ours to replace again).
    ours: Option<FileIdent>,
    /// Open handle for streams and append mode.
    file: Option<File>,
    /// What a stream has been sent so far (rewrites send only the new tail).
    sent: Vec<u8>,
    /// Append mode: the existing file lacks a final newline.
    needs_newline: bool,
    stop: &'static AtomicBool,
}

/// Follows symlinks from `p` to the path that will really be written.
fn resolve(flag: &str, given: &Path) -> anyhow::Result<PathBuf> {
    let mut p = given.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let t = std::fs::read_link(&p).map_err(|e| {
                    usage(format!(
                        "{flag} {}: cannot read the link: {e}",
                        given.display()
                    ))
                })?;
                p = match p.parent() {
                    Some(d) if t.is_relative() => d.join(t),
                    _ => t,
                };
            }
            Ok(_) => return Ok(p),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(p),
            Err(e) => {
                return Err(usage(format!(
                    "{flag} {}: {}",
                    given.display(),
                    one_line_io(&e)
                )))
            }
        }
    }
    Err(usage(format!(
        "{flag} {}: too many levels of symbolic links",
        given.display()
    )))
}

fn one_line_io(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// The directory a (resolved) path lives in.
fn parent_of(p: &Path) -> PathBuf {
    match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// An absolute, symlink-free spelling of a path whose last component may
/// not exist yet (for comparing outputs with files still to be created).
fn normalize(p: &Path) -> Option<PathBuf> {
    let real = resolve("", p).ok()?;
    if let Ok(c) = std::fs::canonicalize(&real) {
        return Some(c);
    }
    let dir = std::fs::canonicalize(parent_of(&real)).ok()?;
    Some(dir.join(real.file_name()?))
}

/// Whether `bytes` are empty or JSON lines that are all iolab records
/// (objects with a numeric `schema_version`). Never panics on any input.
#[cfg(test)]
pub fn is_iolab_jsonl(bytes: &[u8]) -> bool {
    if bytes.is_empty() {
        return true;
    }
    // A lone newline is one empty line, not an empty file (as the reader
    // that checks real files counts it).
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    body.split(|&b| b == b'\n').all(is_record_line)
}

fn is_record_line(line: &[u8]) -> bool {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    matches!(
        serde_json::from_slice::<serde_json::Value>(line),
        Ok(serde_json::Value::Object(m)) if m.get("schema_version").is_some_and(|v| v.is_u64())
    )
}

/// What `path` names now, followed as open(2) follows it (`/dev/stdout` is
/// a link to a link to a pipe that has no name); None if nothing.
fn existing(flag: &str, given: &Path, path: &Path) -> anyhow::Result<Option<std::fs::Metadata>> {
    match std::fs::metadata(path) {
        Ok(m) => Ok(Some(m)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            refuse_dangling_link(flag, given, path)?;
            Ok(None)
        }
        Err(e) => Err(usage(format!(
            "{flag} {}: {}",
            given.display(),
            one_line_io(&e)
        ))),
    }
}

/// Refuses a symbolic link whose target does not exist: no output file is
/// created through a link (whoever made the link chose where it points).
fn refuse_dangling_link(flag: &str, given: &Path, path: &Path) -> anyhow::Result<()> {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        let to = std::fs::read_link(path).unwrap_or_default();
        return Err(usage(format!(
            "{flag} {}: a symbolic link to {}, which does not exist; iolab creates no file through a link (name the file itself)",
            given.display(),
            to.display()
        )));
    }
    Ok(())
}

/// Refuses an output that is one of the files the run measures (same
/// inode, or the same path for a file still to be created).
fn refuse_measured(
    flag: &str,
    given: &Path,
    real: &Path,
    measured: &[PathBuf],
) -> anyhow::Result<()> {
    let out_norm = normalize(real);
    let out_id = FileIdent::of_target(real);
    for m in measured {
        let same_inode = out_id.is_some() && out_id == FileIdent::of_target(m);
        let same_name = out_norm.is_some() && out_norm == normalize(m);
        if same_inode || same_name {
            return Err(usage(format!(
                "{flag} {}: that is the file being measured ({}); choose another name",
                given.display(),
                m.display()
            )));
        }
    }
    Ok(())
}

/// What an existing destination is, refusing what iolab may not write: a
/// directory, socket or block device; a file that exists without
/// `--overwrite`; a file this user could not write itself, or one that
/// replacing would give to another owner.
fn classify(
    flag: &str,
    given: &Path,
    real: &Path,
    m: &std::fs::Metadata,
    mode: Mode,
    overwrite: bool,
) -> anyhow::Result<Dest> {
    let shown = given.display();
    let t = m.file_type();
    let refuse = |why: &str| Err(usage(format!("{flag} {shown}: {why}")));
    if t.is_dir() {
        return refuse("is a directory; name a file");
    } else if t.is_socket() {
        return refuse(
            "is a socket; iolab writes results only to files, FIFOs and character devices",
        );
    } else if t.is_block_device() {
        return refuse("is a block device; iolab never writes to block devices");
    }
    // Replacing by rename needs only the directory's permission: the file's
    // own is checked here, as writing into it would.
    if !iolab::file::may_write(real) {
        return refuse("permission denied (this user may not write that file)");
    }
    if t.is_char_device() || t.is_fifo() {
        return Ok(Dest::Stream);
    }
    if mode == Mode::Replace {
        if !overwrite {
            return refuse("the file exists; choose a new name or pass --overwrite");
        }
        let me = iolab::kernel::proc::euid();
        if me != 0 && m.uid() != me {
            return refuse(&format!(
                "belongs to user {}; replacing it would make it yours (choose a new name)",
                m.uid()
            ));
        }
    }
    Ok(Dest::Existing)
}

/// The directory a file is made or replaced in: it exists, is writable and
/// not on a read-only file system.
fn check_dir(flag: &str, given: &Path, real: &Path, dest: Dest, mode: Mode) -> anyhow::Result<()> {
    let shown = given.display();
    let dir = parent_of(real);
    if !dir.is_dir() {
        return Err(usage(format!(
            "{flag} {shown}: directory {} does not exist",
            dir.display()
        )));
    }
    if iolab::file::on_read_only_fs(&dir) {
        return Err(usage(format!(
            "{flag} {shown}: {} is on a read-only file system",
            dir.display()
        )));
    }
    // Replace renames into the directory; a new file is created there.
    if (dest == Dest::New || mode == Mode::Replace) && !iolab::file::may_write(&dir) {
        return Err(usage(format!(
            "{flag} {shown}: permission denied: cannot create files in {}",
            dir.display()
        )));
    }
    Ok(())
}

/// Checks an existing regular file for appending, reading it line by line.
fn check_jsonl_file(flag: &str, given: &Path, path: &Path) -> anyhow::Result<bool> {
    let f = File::open(path)
        .map_err(|e| usage(format!("{flag} {}: {}", given.display(), one_line_io(&e))))?;
    let mut r = std::io::BufReader::new(f);
    let mut line = Vec::new();
    let mut n = 0usize;
    let mut ends_with_newline = true;
    loop {
        line.clear();
        let got = r
            .read_until(b'\n', &mut line)
            .map_err(|e| usage(format!("{flag} {}: {}", given.display(), one_line_io(&e))))?;
        if got == 0 {
            break;
        }
        n += 1;
        ends_with_newline = line.last() == Some(&b'\n');
        let body = line.strip_suffix(b"\n").unwrap_or(&line);
        if !is_record_line(body) {
            return Err(usage(format!(
                "{flag} {}: line {n} is not an iolab record; --jsonl appends only to an empty file or one written by iolab (choose a new name)",
                given.display()
            )));
        }
    }
    Ok(!ends_with_newline)
}

/// Gives the file about to replace another that file's owner, group and
/// permissions: replacing a file's contents does not change whose it is.
/// (The check refused another user's file unless this process is root,
/// which may give it any owner; a group is kept where this user may.)
fn keep_owner_and_mode(f: &File, old: &std::fs::Metadata) {
    if let Ok(new) = f.metadata() {
        if new.uid() != old.uid() {
            let _ = std::os::unix::fs::fchown(f, Some(old.uid()), Some(old.gid()));
        } else if new.gid() != old.gid() {
            let _ = std::os::unix::fs::fchown(f, None, Some(old.gid()));
        }
    }
    // After chown, which clears set-id bits.
    let _ = f.set_permissions(std::fs::Permissions::from_mode(old.mode() & 0o7777));
}

impl OutputTarget {
    /// Checks `path` as the destination of `flag` (e.g. `"--csv"`) before
    /// anything is measured. `overwrite` is the user's `--overwrite`;
    /// `measured` are the files the run reads or writes (an output may not
    /// be one of them). `-` means stdout. Errors are usage errors (exit
    /// status 2), one line.
    pub fn check(
        flag: &'static str,
        path: &Path,
        overwrite: bool,
        mode: Mode,
        measured: &[PathBuf],
    ) -> anyhow::Result<OutputTarget> {
        let given = path;
        if path.as_os_str().is_empty() {
            return Err(usage(format!("{flag}: empty path; name a file")));
        }
        let path = if path.as_os_str() == "-" {
            Path::new("/dev/stdout")
        } else {
            path
        };
        let meta = existing(flag, given, path)?;
        let stream = meta
            .as_ref()
            .is_some_and(|m| m.file_type().is_char_device() || m.file_type().is_fifo());
        let real = if stream {
            path.to_path_buf()
        } else {
            resolve(flag, path)?
        };
        refuse_measured(flag, given, &real, measured)?;
        let dest = match &meta {
            Some(m) => classify(flag, given, &real, m, mode, overwrite)?,
            None => Dest::New,
        };
        if dest != Dest::Stream {
            check_dir(flag, given, &real, dest, mode)?;
        }
        let needs_newline = if dest == Dest::Existing && mode == Mode::Append {
            check_jsonl_file(flag, given, &real)?
        } else {
            false
        };
        Ok(OutputTarget {
            flag,
            given: given.to_path_buf(),
            path: real,
            mode,
            dest,
            overwrite,
            ours: None,
            file: None,
            sent: Vec::new(),
            needs_newline,
            stop: iolab::stop::stop_flag(),
        })
    }

    /// Whether the destination is a character device or FIFO (written in place).
    pub fn is_stream(&self) -> bool {
        self.dest == Dest::Stream
    }

    fn ctx(&self, what: &str, e: std::io::Error) -> anyhow::Error {
        if e.kind() == std::io::ErrorKind::Interrupted && self.stop.load(Ordering::SeqCst) {
            return anyhow::Error::new(iolab::Error::Cancelled);
        }
        anyhow::anyhow!(
            "{} {}: {what}: {}",
            self.flag,
            self.given.display(),
            one_line_io(&e)
        )
    }

    /// Writes all of `buf`, giving up (cancelled) if a signal interrupts a
    /// blocked write once the stop flag is set.
    fn write_fully(&self, f: &mut File, mut buf: &[u8]) -> anyhow::Result<()> {
        while !buf.is_empty() {
            match f.write(buf) {
                Ok(0) => return Err(self.ctx("write", std::io::ErrorKind::WriteZero.into())),
                Ok(n) => buf = &buf[n..],
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {
                    if self.stop.load(Ordering::SeqCst) {
                        return Err(anyhow::Error::new(iolab::Error::Cancelled));
                    }
                }
                Err(e) => return Err(self.ctx("write", e)),
            }
        }
        Ok(())
    }

    fn open_stream(&mut self) -> anyhow::Result<()> {
        if self.file.is_none() {
            let f = iolab::file::open_in_place_for_write(&self.path, self.stop)?;
            self.file = Some(f);
        }
        Ok(())
    }

    /// Makes `bytes` the whole contents of the output. A regular file is
    /// written to a temporary file beside it and renamed into place (so a
    /// reader never sees half a file); a device or FIFO is sent only what it
    /// has not been sent yet.
    pub fn write_all_atomically(&mut self, bytes: &[u8]) -> anyhow::Result<()> {
        if self.dest == Dest::Stream {
            self.open_stream()?;
            let tail = if bytes.starts_with(&self.sent) {
                &bytes[self.sent.len()..]
            } else {
                bytes
            };
            let mut f = self.file.take().expect("opened above");
            let r = self
                .write_fully(&mut f, tail)
                .and_then(|_| f.flush().map_err(|e| self.ctx("flush", e)));
            self.file = Some(f);
            r?;
            self.sent = bytes.to_vec();
            return Ok(());
        }
        self.replace_regular(&mut |t, f| t.write_fully(f, bytes))
    }

    /// Writes the output from a producer that hands over its contents in
    /// order, piece by piece, for contents too large to hold in memory
    /// (`iolab cat -o`). A regular file is written beside the target and
    /// renamed into place as [`write_all_atomically`](Self::write_all_atomically)
    /// does; a device or FIFO is written in place.
    // Unused until `iolab cat -o` (the reader branch) lands on main.
    #[allow(dead_code, clippy::type_complexity)]
    pub fn write_streamed(
        &mut self,
        produce: &mut dyn FnMut(&mut Sink<'_>) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        if self.dest == Dest::Stream {
            self.open_stream()?;
            let mut f = self.file.take().expect("opened above");
            let r = produce(&mut |chunk| self.write_fully(&mut f, chunk));
            self.file = Some(f);
            return r;
        }
        self.replace_regular(&mut |t, f| produce(&mut |chunk| t.write_fully(f, chunk)))
    }

    /// Writes a temporary file beside the target with `fill`, then renames
    /// it over the target (after checking the target is still ours to replace).
    fn replace_regular(
        &mut self,
        fill: &mut dyn FnMut(&Self, &mut File) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        self.recheck_before_replace()?;
        let dir = parent_of(&self.path);
        let name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "out".into());
        let tmp = dir.join(format!(".{name}.iolab-{}.tmp", std::process::id()));
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o666)
            .open(&tmp)
            .map_err(|e| self.ctx("create a temporary file beside it", e))?;
        let id = FileIdent::of_file(&f).map_err(|e| self.ctx("fstat", e))?;
        cleanup::register_created(&tmp, id);
        let res = (|| -> anyhow::Result<()> {
            if let Ok(m) = std::fs::metadata(&self.path) {
                keep_owner_and_mode(&f, &m);
            }
            fill(self, &mut f)?;
            f.sync_data().map_err(|e| self.ctx("fsync", e))?;
            drop(f);
            self.recheck_before_replace()?;
            std::fs::rename(&tmp, &self.path).map_err(|e| self.ctx("rename", e))
        })();
        match res {
            Ok(()) => {
                cleanup::keep(&tmp);
                self.ours = Some(id);
                Ok(())
            }
            Err(e) => {
                cleanup::remove(&tmp);
                Err(e)
            }
        }
    }

    /// Refuses to rename over something that is no longer what was checked
    /// (a file that appeared since, or turned into a device or link).
    fn recheck_before_replace(&self) -> anyhow::Result<()> {
        let now = std::fs::symlink_metadata(&self.path);
        match now {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(self.ctx("stat", e)),
            Ok(m) => {
                let id = FileIdent::of_path(&self.path);
                if id.is_some() && self.ours == id {
                    return Ok(());
                }
                if !m.file_type().is_file() {
                    return Err(usage(format!(
                        "{} {}: changed into something other than a regular file during the run; not replaced",
                        self.flag,
                        self.given.display()
                    )));
                }
                if !self.overwrite {
                    return Err(usage(format!(
                        "{} {}: a file appeared there during the run; not replaced (pass --overwrite)",
                        self.flag,
                        self.given.display()
                    )));
                }
                // Whatever is there now passes the same rules as at the start.
                classify(
                    self.flag,
                    &self.given,
                    &self.path,
                    &m,
                    self.mode,
                    self.overwrite,
                )
                .map(|_| ())
            }
        }
    }

    /// Appends one JSON record line (a newline is added if missing).
    pub fn append_jsonl(&mut self, line: &[u8]) -> anyhow::Result<()> {
        debug_assert_eq!(self.mode, Mode::Append);
        if self.file.is_none() {
            match self.dest {
                Dest::Stream => self.open_stream()?,
                Dest::Existing => {
                    let f = OpenOptions::new()
                        .append(true)
                        .open(&self.path)
                        .map_err(|e| self.ctx("open", e))?;
                    self.file = Some(f);
                }
                Dest::New => {
                    let f = OpenOptions::new()
                        .append(true)
                        .create_new(true)
                        .open(&self.path)
                        .map_err(|e| self.ctx("create", e))?;
                    self.file = Some(f);
                }
            }
        }
        let mut buf = Vec::with_capacity(line.len() + 2);
        if std::mem::take(&mut self.needs_newline) {
            buf.push(b'\n');
        }
        buf.extend_from_slice(line);
        if buf.last() != Some(&b'\n') {
            buf.push(b'\n');
        }
        let mut f = self.file.take().expect("opened above");
        let r = self.write_fully(&mut f, &buf);
        self.file = Some(f);
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn code(e: &anyhow::Error) -> bool {
        e.chain()
            .any(|c| c.downcast_ref::<crate::error::UsageError>().is_some())
    }

    fn no_stop() -> Vec<PathBuf> {
        Vec::new()
    }

    #[test]
    fn existing_regular_file_needs_overwrite() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("r.csv");
        std::fs::write(&p, b"precious").unwrap();
        let e = OutputTarget::check("--csv", &p, false, Mode::Replace, &no_stop()).unwrap_err();
        assert!(code(&e) && e.to_string().contains("--overwrite"), "{e}");
        assert_eq!(std::fs::read(&p).unwrap(), b"precious");
        let mut t = OutputTarget::check("--csv", &p, true, Mode::Replace, &no_stop()).unwrap();
        t.write_all_atomically(b"a,b\n").unwrap();
        t.write_all_atomically(b"a,b\n1,2\n").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"a,b\n1,2\n");
        // No temporary file left.
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[test]
    fn new_file_is_created_and_rewritten() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("n.csv");
        let mut t = OutputTarget::check("--csv", &p, false, Mode::Replace, &no_stop()).unwrap();
        t.write_all_atomically(b"x\n").unwrap();
        // Rewriting our own file needs no --overwrite.
        t.write_all_atomically(b"x\ny\n").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"x\ny\n");
    }

    #[test]
    fn a_file_that_appears_meanwhile_is_not_replaced() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("n.csv");
        let mut t = OutputTarget::check("--csv", &p, false, Mode::Replace, &no_stop()).unwrap();
        std::fs::write(&p, b"someone else's").unwrap();
        assert!(t.write_all_atomically(b"x\n").is_err());
        assert_eq!(std::fs::read(&p).unwrap(), b"someone else's");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[test]
    fn jsonl_appends_only_to_iolab_records() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("r.jsonl");
        std::fs::write(&p, b"{\"schema_version\":1,\"x\":2}\n").unwrap();
        let mut t = OutputTarget::check("--jsonl", &p, false, Mode::Append, &no_stop()).unwrap();
        t.append_jsonl(b"{\"schema_version\":1}").unwrap();
        let s = std::fs::read_to_string(&p).unwrap();
        assert_eq!(s.lines().count(), 2);
        let q = d.path().join("notes.txt");
        std::fs::write(&q, b"my notes\n").unwrap();
        let e = OutputTarget::check("--jsonl", &q, true, Mode::Append, &no_stop()).unwrap_err();
        assert!(
            code(&e) && e.to_string().contains("not an iolab record"),
            "{e}"
        );
        assert_eq!(std::fs::read(&q).unwrap(), b"my notes\n");
        let empty = d.path().join("empty");
        std::fs::write(&empty, b"").unwrap();
        assert!(OutputTarget::check("--jsonl", &empty, false, Mode::Append, &no_stop()).is_ok());
    }

    #[test]
    fn symlink_is_followed_not_replaced() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("real.csv");
        let link = d.path().join("link.csv");
        symlink("real.csv", &link).unwrap();
        // No file is created through a link.
        for mode in [Mode::Replace, Mode::Append] {
            let e = OutputTarget::check("--csv", &link, true, mode, &no_stop()).unwrap_err();
            assert!(code(&e) && e.to_string().contains("does not exist"), "{e}");
        }
        assert!(!target.exists());
        std::fs::write(&target, b"old").unwrap();
        let mut t = OutputTarget::check("--csv", &link, true, Mode::Replace, &no_stop()).unwrap();
        t.write_all_atomically(b"h\n").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(&target).unwrap(), b"h\n");
    }

    #[test]
    fn char_device_is_written_in_place() {
        let mut t = OutputTarget::check("--csv", Path::new("/dev/null"), false, Mode::Replace, &[])
            .unwrap();
        assert!(t.is_stream());
        t.write_all_atomically(b"a\n").unwrap();
        t.write_all_atomically(b"a\nb\n").unwrap();
        assert!(std::fs::metadata("/dev/null")
            .unwrap()
            .file_type()
            .is_char_device());
    }

    #[test]
    fn fifo_gets_each_byte_once() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("fifo");
        assert!(std::process::Command::new("mkfifo")
            .arg(&p)
            .status()
            .unwrap()
            .success());
        let q = p.clone();
        let reader = std::thread::spawn(move || std::fs::read(q).unwrap());
        let mut t = OutputTarget::check("--csv", &p, false, Mode::Replace, &[]).unwrap();
        t.write_all_atomically(b"h\n").unwrap();
        t.write_all_atomically(b"h\n1\n").unwrap();
        drop(t);
        assert_eq!(reader.join().unwrap(), b"h\n1\n");
        assert!(std::fs::metadata(&p).unwrap().file_type().is_fifo());
    }

    #[test]
    fn refused_up_front() {
        let d = tempfile::tempdir().unwrap();
        let e = OutputTarget::check("--jsonl", d.path(), false, Mode::Append, &[]).unwrap_err();
        assert!(e.to_string().contains("is a directory"), "{e}");
        let sock = d.path().join("s");
        let _l = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let e = OutputTarget::check("--csv", &sock, true, Mode::Replace, &[]).unwrap_err();
        assert!(e.to_string().contains("socket"), "{e}");
        let e = OutputTarget::check(
            "--csv",
            &d.path().join("no/x.csv"),
            false,
            Mode::Replace,
            &[],
        )
        .unwrap_err();
        assert!(e.to_string().contains("does not exist"), "{e}");
        let f = d.path().join("data");
        std::fs::write(&f, b"measured").unwrap();
        let e = OutputTarget::check("--csv", &f, true, Mode::Replace, std::slice::from_ref(&f))
            .unwrap_err();
        assert!(e.to_string().contains("being measured"), "{e}");
        // Also before the measured file exists, and through a link.
        let g = d.path().join("new");
        let e = OutputTarget::check("--jsonl", &g, false, Mode::Append, std::slice::from_ref(&g))
            .unwrap_err();
        assert!(e.to_string().contains("being measured"), "{e}");
        symlink(&f, d.path().join("l")).unwrap();
        let e = OutputTarget::check(
            "--csv",
            &d.path().join("l"),
            true,
            Mode::Replace,
            std::slice::from_ref(&f),
        )
        .unwrap_err();
        assert!(e.to_string().contains("being measured"), "{e}");
        assert_eq!(std::fs::read(&f).unwrap(), b"measured");
    }

    #[test]
    fn recognises_records() {
        assert!(is_iolab_jsonl(b""));
        assert!(is_iolab_jsonl(b"{\"schema_version\":1}\n"));
        assert!(is_iolab_jsonl(b"{\"schema_version\":1}"));
        assert!(!is_iolab_jsonl(b"{\"schema_version\":1}\n\n"));
        assert!(!is_iolab_jsonl(b"[1]\n"));
        assert!(!is_iolab_jsonl(b"{\"a\":1}\n"));
    }
}
