//! Ctrl-C and temporary files: the first Ctrl-C asks the run to stop (what
//! was measured is still printed and written); a second one exits at once.
//! Either way, files iolab made for this run only are removed.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Mutex;

static STOP: AtomicBool = AtomicBool::new(false);
static PRESSES: AtomicU32 = AtomicU32::new(0);
static TEMP: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Installs the handler; returns the flag runs watch.
pub fn install() -> &'static AtomicBool {
    let _ = ctrlc::set_handler(|| {
        STOP.store(true, Ordering::SeqCst);
        if PRESSES.fetch_add(1, Ordering::SeqCst) >= 1 {
            remove_all();
            std::process::exit(130);
        }
    });
    &STOP
}

/// Registers a file to remove when iolab exits (also on Ctrl-C).
pub fn register(p: &Path) {
    TEMP.lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(p.to_path_buf());
}

/// Forgets a registered file (it is to be kept).
pub fn keep(p: &Path) {
    TEMP.lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|q| q != p);
}

/// Removes every registered file and directory.
pub fn remove_all() {
    let files: Vec<PathBuf> = std::mem::take(&mut *TEMP.lock().unwrap_or_else(|e| e.into_inner()));
    for f in files.iter().rev() {
        if f.is_dir() {
            let _ = std::fs::remove_dir_all(f);
        } else {
            let _ = std::fs::remove_file(f);
        }
    }
}
