//! `iolab tune`'s GPU part: where a GPU is present, the host → device
//! path measured on the tune file (`iolab_reader::gpu::tune`), printed,
//! and kept for the profile's `gpu` section; without one, one line on
//! stderr saying why it was skipped.

use std::path::Path;
use std::sync::atomic::AtomicBool;

use iolab_reader::profile::GpuChoice;

/// Measures GPU `gpu` with the tune file `path` of `len` bytes; `None`
/// (after one line saying why) when there is no GPU to measure or the
/// measurement failed.
#[cfg(feature = "cuda")]
pub fn run(gpu: u32, path: &Path, len: u64, quick: bool, stop: &AtomicBool) -> Option<GpuChoice> {
    use iolab_reader::gpu::{self, GpuError};
    match gpu::tune::measure(path, len, gpu as usize, quick, stop) {
        Ok(t) => {
            if let Err(e) = crate::export::stdout(&summary(&t)) {
                eprintln!("warning: tune: {e}");
            }
            Some(t.choice)
        }
        Err(
            e
            @ (GpuError::NoDriver { .. } | GpuError::NoGpu { .. } | GpuError::NoSuchDevice { .. }),
        ) => {
            eprintln!("tune: host → device not measured: {e}");
            None
        }
        Err(e) => {
            eprintln!(
                "warning: tune: the GPU measurement failed, the profile keeps no gpu section: {e}"
            );
            None
        }
    }
}

/// Without the `cuda` feature there is no GPU to measure.
#[cfg(not(feature = "cuda"))]
pub fn run(_: u32, _: &Path, _: u64, _: bool, _: &AtomicBool) -> Option<GpuChoice> {
    eprintln!("tune: host → device not measured: this iolab was built without the cuda feature");
    None
}

/// What tune prints of the GPU measurement.
#[cfg(feature = "cuda")]
fn summary(t: &iolab_reader::gpu::tune::GpuTune) -> String {
    use std::fmt::Write;
    let mib = |b: usize| b >> 20;
    let mut o = format!("GPU {} ({}), host → device:\n", t.device, t.name);
    if let Some(m) = &t.choice.measured {
        let _ = writeln!(
            o,
            "  one large copy    page-locked {:.1} GB/s, pageable {:.1} GB/s",
            m.pinned_copy, m.pageable_copy
        );
    }
    if !t.evicted {
        o.push_str(
            "  cold              not measured: evicting the file left it in the page cache\n",
        );
    }
    for c in &t.cases {
        let how = if c.cold {
            format!(
                "cold ring    {:>3} MiB x {:<2} in flight",
                mib(c.chunk),
                c.depth
            )
        } else {
            format!(
                "warm threads {:>3} MiB x {:<2} threads  ",
                mib(c.chunk),
                c.threads
            )
        };
        let staging = if c.pinned { "" } else { "  (pageable staging)" };
        let _ = writeln!(o, "  {how} {:>6.2} GB/s{staging}", c.gb_s);
    }
    let ch = &t.choice;
    let _ = writeln!(
        o,
        "  chosen            {} MiB pieces, {} in flight cold, {} threads warm, {} staging",
        mib(ch.chunk),
        ch.depth,
        ch.threads,
        if ch.pinned { "page-locked" } else { "pageable" }
    );
    o
}
