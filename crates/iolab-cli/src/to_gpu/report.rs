//! What `cat --gpu` prints: the rate, how the bytes were moved and where
//! the time went, as text or as one JSON object.

use super::sources::{Loaded, What};
use super::verify::Checked;
use iolab_bench::prepare::human;
use std::fmt::Write;

/// What was loaded, in words: `model.safetensors (64 tensors)`, `2 files`.
fn subject(l: &Loaded) -> String {
    match (&l.what, l.tensors) {
        (What::Checkpoint(p), Some(t)) => format!("{} ({t} tensors)", p.display()),
        (What::Bytes(f), _) if f.len() == 1 => f[0].display().to_string(),
        (What::Bytes(f), _) => format!("{} files", f.len()),
        (What::Checkpoint(p), None) => p.display().to_string(),
    }
}

fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// The rate over the load's wall time, GB/s (10^9 bytes).
fn gb_per_s(l: &Loaded) -> f64 {
    l.stats.bytes as f64 / l.wall.as_secs_f64().max(1e-9) / 1e9
}

/// The text report.
pub(super) fn text(l: &Loaded, checked: Option<&Checked>) -> String {
    let s = &l.stats;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{} into GPU {} ({}): {} in {:.3} s, {:.2} GB/s",
        subject(l),
        l.gpu,
        l.name,
        human(s.bytes),
        l.wall.as_secs_f64(),
        gb_per_s(l)
    );
    let _ = writeln!(
        o,
        "  how              {}, {}, {} staging, {} pieces, {} in flight per {}, {} thread{}",
        s.technique,
        if s.direct {
            "O_DIRECT"
        } else {
            "through the page cache"
        },
        if s.pinned { "page-locked" } else { "pageable" },
        human(s.chunk as u64),
        s.depth,
        if s.technique.name() == "ring" {
            "file"
        } else {
            "thread"
        },
        s.threads,
        if s.threads == 1 { "" } else { "s" }
    );
    let _ = writeln!(
        o,
        "  thread time      reading {:.3} s, copying {:.3} s, waiting for copies {:.3} s, setting up {:.3} s (summed over {} thread{})",
        secs(s.read_ns),
        secs(s.copy_ns),
        secs(s.wait_ns),
        secs(s.setup_ns),
        s.threads,
        if s.threads == 1 { "" } else { "s" }
    );
    let _ = writeln!(
        o,
        "  not counted      {:.3} s for the driver to start and open the GPU (once per process)",
        l.init.as_secs_f64()
    );
    if let Some(c) = checked {
        let _ = writeln!(
            o,
            "  verified         {} of {} copied back: equal to the files",
            human(c.bytes),
            human(s.bytes)
        );
    }
    o
}

/// One JSON object (one line) with every number.
pub(super) fn json(l: &Loaded, checked: Option<&Checked>) -> String {
    let files: Vec<String> = l
        .sources
        .iter()
        .map(|s| s.path.display().to_string())
        .collect();
    let v = serde_json::json!({
        "gpu": l.gpu,
        "gpu_name": l.name,
        "what": match l.what { What::Bytes(_) => "bytes", What::Checkpoint(_) => "safetensors" },
        "files": files,
        "tensors": l.tensors,
        "bytes": l.stats.bytes,
        "seconds": l.wall.as_secs_f64(),
        "gb_per_s": gb_per_s(l),
        "init_seconds": l.init.as_secs_f64(),
        "stats": l.stats,
        "verified": checked,
    });
    format!("{v}\n")
}
