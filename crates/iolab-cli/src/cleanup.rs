//! Signals and the files this run made.
//!
//! The first SIGINT/SIGTERM asks the run to stop (what was measured is
//! still printed and written); a second one changes nothing, and a run
//! still going a second later is ended by the watchdog, which removes the
//! files this run made first (the thread-free handlers live in
//! [`iolab::stop`]). Files are registered
//! with the identity (device, inode) they had when iolab created them, and
//! [`remove_all`] removes a name only while it still refers to that file:
//! never a path iolab found existing, never a file another run put there.

use iolab::file::FileIdent;
use iolab::stop::{forget_at_forced_exit, remove_at_forced_exit, ForcedExitSlot};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Mutex;

/// A file this run made: its name, identity, and its slot in the
/// watchdog's table.
type Made = (PathBuf, FileIdent, Option<ForcedExitSlot>);

static CREATED: Mutex<Vec<Made>> = Mutex::new(Vec::new());

/// Directories this run made to work in: removed at the end if empty.
static MADE_DIRS: Mutex<Vec<(PathBuf, FileIdent)>> = Mutex::new(Vec::new());

/// Installs the signal handler; returns the flag runs watch.
pub fn install() -> &'static AtomicBool {
    match iolab::stop::install() {
        Ok(f) => f,
        Err(e) => {
            eprintln!("warning: cannot install the Ctrl-C handler: {e}");
            iolab::stop::stop_flag()
        }
    }
}

/// How long, after the first SIGINT/SIGTERM, the run may take to wrap up
/// (finish the op in hand, print and write what it measured) before the
/// watchdog ends the process, in seconds.
const GRACE_S: u32 = 1;

/// Arms the watchdog: once the first signal has asked the run to stop, a
/// run still going after [`GRACE_S`] has a thread blocked in the kernel (a
/// stalled file system, a FIFO nobody opens) that never sees the flag.
/// SIGALRM's handler then removes the files this run made and exits with
/// the signal's status; the blocked threads are abandoned with the process.
/// No thread waits for this: a watchdog thread would make every run a
/// multi-threaded process, whose every `read` costs a file reference more.
pub fn watchdog() {
    if let Err(e) = iolab::stop::arm_watchdog(
        GRACE_S,
        "error: stopped by a signal while blocked in the kernel; what that run measured is lost\n",
    ) {
        eprintln!("warning: cannot arm the signal watchdog: {e}");
    }
}

/// The exit status for a run stopped by a signal (130 SIGINT, 143 SIGTERM).
pub fn signal_status() -> Option<i32> {
    iolab::stop::exit_status()
}

/// Registers a file (or directory) this run has just created, by identity.
pub fn register_created(p: &Path, ident: FileIdent) {
    CREATED.lock().unwrap_or_else(|e| e.into_inner()).push((
        p.to_path_buf(),
        ident,
        remove_at_forced_exit(p, ident),
    ));
}

/// Forgets a registered file (it is to be kept).
pub fn keep(p: &Path) {
    CREATED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|(q, _, slot)| {
            if q == p {
                unwatch(*slot);
            }
            q != p
        });
}

/// Forgets a registered file and removes it (if it is still the one made).
pub fn remove(p: &Path) {
    let mut v = CREATED.lock().unwrap_or_else(|e| e.into_inner());
    v.retain(|(q, id, slot)| {
        if q == p {
            unwatch(*slot);
            iolab::file::remove_if_same(q, *id);
            false
        } else {
            true
        }
    });
}

/// Takes a file off the watchdog's table (it was removed, or is kept).
fn unwatch(slot: Option<ForcedExitSlot>) {
    if let Some(s) = slot {
        forget_at_forced_exit(s);
    }
}

/// Registers a directory this run made to work in (`--dir`): at the end
/// it is removed if it is still that directory and nothing is left in it.
pub fn remove_if_empty_at_exit(p: &Path, ident: FileIdent) {
    MADE_DIRS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((p.to_path_buf(), ident));
}

/// Removes every registered file that still is the one this run made,
/// then the directories it made that are left empty.
pub fn remove_all() {
    let files = std::mem::take(&mut *CREATED.lock().unwrap_or_else(|e| e.into_inner()));
    for (p, id, slot) in files.iter().rev() {
        unwatch(*slot);
        iolab::file::remove_if_same(p, *id);
    }
    let dirs = std::mem::take(&mut *MADE_DIRS.lock().unwrap_or_else(|e| e.into_inner()));
    for (p, id) in dirs.iter().rev() {
        if FileIdent::of_path(p) == Some(*id) {
            // Fails, as it should, unless the directory is empty.
            let _ = std::fs::remove_dir(p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removes_only_the_inode_it_made() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        std::fs::write(&p, b"ours").unwrap();
        let id = FileIdent::of_path(&p).unwrap();
        register_created(&p, id);
        // Someone replaces the file under the same name (made while ours
        // still exists, so it cannot reuse our inode number).
        std::fs::write(d.path().join("other"), b"theirs").unwrap();
        std::fs::rename(d.path().join("other"), &p).unwrap();
        remove_all();
        assert_eq!(std::fs::read(&p).unwrap(), b"theirs");
        // While it is still ours, it goes.
        let q = d.path().join("g");
        std::fs::write(&q, b"ours").unwrap();
        register_created(&q, FileIdent::of_path(&q).unwrap());
        remove_all();
        assert!(!q.exists());
    }
}
