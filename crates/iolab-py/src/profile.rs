//! The profile every read of this process decides with: the one `iolab
//! tune` (or `iolab.tune`) wrote, loaded once, until `iolab.tune` measures
//! a new one in this process.

use iolab_reader::profile::Profile;
use std::sync::{Arc, RwLock};

static TUNED: RwLock<Option<Arc<Profile>>> = RwLock::new(None);

/// The profile in force.
pub(crate) fn current() -> Arc<Profile> {
    if let Some(p) = TUNED.read().unwrap_or_else(|p| p.into_inner()).as_ref() {
        return p.clone();
    }
    iolab_reader::profile::process_profile()
}

/// Makes `p` the profile of every later read.
pub(crate) fn set(p: Arc<Profile>) {
    *TUNED.write().unwrap_or_else(|p| p.into_inner()) = Some(p);
}
