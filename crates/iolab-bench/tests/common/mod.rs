//! What the library's test files share.

use iolab_bench::prepare::{prepare, PrepareOpts, Prepared};
use iolab_bench::spec::WorkloadSpec;
use std::sync::atomic::AtomicBool;

/// Creates (or checks) the spec's files, as a run would, and panics on
/// failure.
pub fn prep(s: &WorkloadSpec) -> Prepared {
    let stop = AtomicBool::new(false);
    prepare(
        s,
        true,
        PrepareOpts::default(),
        &stop,
        &mut |_| {},
        &mut |_, _| {},
    )
    .unwrap()
}
