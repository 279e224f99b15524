//! The transfer, whatever the destination: check the ranges, look at the
//! page cache, pick the technique, run it, count.

use super::error::GpuError;
use super::options::GpuOptions;
use super::ranges::{self, Opened, Source};
use super::stats::{Counters, Stats};
use super::target::Target;
use super::technique::{choose, nvidia_fs_loaded, Facts, GpuTechnique};
use super::{ring, threads};
use iolab::cache;
use std::time::Instant;

/// Moves every range of `sources` into `target` with the technique
/// `opts` names, or the policy's choice. Nothing is read unless every
/// range fits its file and the destination.
pub fn transfer<T: Target>(
    target: &T,
    sources: &[Source],
    opts: &GpuOptions,
) -> Result<Stats, GpuError> {
    let t0 = Instant::now();
    let opened = ranges::open_all(sources, target.len())?;
    let technique = choose(opts.technique, &facts(&opened, false, false))?;
    let (c, threads) = run(target, &opened, opts, technique)?;
    Ok(stats(c, technique, threads, opts, t0))
}

/// What the policy needs to know about these files and this machine.
pub(crate) fn facts(opened: &[Opened], device: bool, cufile: bool) -> Facts {
    Facts {
        warm: warm(opened),
        nvidia_fs: nvidia_fs_loaded(),
        cufile,
        device,
    }
}

/// Runs a technique that moves bytes through lanes (not cuFile); returns
/// the counts and the threads that read.
pub(crate) fn run<T: Target>(
    target: &T,
    opened: &[Opened],
    opts: &GpuOptions,
    technique: GpuTechnique,
) -> Result<(Counters, usize), GpuError> {
    if opened.iter().all(|o| o.ranges.is_empty()) {
        // Nothing to move: no thread, no staging memory.
        return Ok((Counters::default(), 0));
    }
    match technique {
        GpuTechnique::Ring => ring::run(target, opened, opts),
        GpuTechnique::Threads => {
            let pieces = ranges::pieces(opened, opts.piece());
            let n = opts.threads.clamp(1, pieces.len().max(1));
            Ok((threads::run(target, opened, &pieces, opts)?, n))
        }
        GpuTechnique::CuFile => Err(GpuError::Unavailable {
            technique: "cufile",
            why: "cuFile reads into GPU memory only".into(),
        }),
    }
}

/// The summary of a run that started at `t0`.
pub(crate) fn stats(
    c: Counters,
    technique: GpuTechnique,
    threads: usize,
    opts: &GpuOptions,
    t0: Instant,
) -> Stats {
    Stats {
        bytes: c.bytes,
        elapsed_ns: t0.elapsed().as_nanos() as u64,
        setup_ns: c.setup.as_nanos() as u64,
        read_ns: c.read.as_nanos() as u64,
        copy_ns: c.copy.as_nanos() as u64,
        wait_ns: c.wait.as_nanos() as u64,
        technique,
        direct: c.direct,
        pinned: c.pinned && technique != GpuTechnique::CuFile,
        chunk: opts.piece(),
        depth: match technique {
            GpuTechnique::Ring => opts.depth.max(1),
            _ => opts.slots.max(1) as u32,
        },
        threads,
    }
}

/// Below this many bytes to move, residency is measured exactly (mincore
/// over each range); above, sampled over each file (256 windows), which
/// costs the same for any size.
const EXACT_RESIDENCY_MAX: u64 = 64 << 20;

/// Whether at least half of the bytes to move are in the page cache (an
/// unreadable residency counts as cold; nothing to move counts as warm).
fn warm(opened: &[Opened]) -> bool {
    let total: u64 = opened
        .iter()
        .flat_map(|o| o.ranges.iter().map(|r| r.len))
        .sum();
    if total == 0 {
        return true;
    }
    let mut resident = 0f64;
    for o in opened {
        let want: u64 = o.ranges.iter().map(|r| r.len).sum();
        if want == 0 {
            continue;
        }
        if total <= EXACT_RESIDENCY_MAX {
            for r in &o.ranges {
                if let Ok(res) = cache::residency_range(&o.path, r.offset, r.len) {
                    resident += res.fraction() * r.len as f64;
                }
            }
        } else if let Ok(res) = cache::residency_sampled(&o.path, o.len, 256) {
            resident += res.fraction() * want as f64;
        }
    }
    resident >= 0.5 * total as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::host::HostTarget;

    #[test]
    fn a_file_that_shrinks_after_the_checks_is_reported_not_padded() {
        let d = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let p = d.path().join("f");
        std::fs::write(&p, vec![5u8; 1 << 20]).unwrap();
        let opts = GpuOptions {
            chunk: 64 << 10,
            threads: 2,
            ..GpuOptions::default()
        };
        for t in [GpuTechnique::Ring, GpuTechnique::Threads] {
            let src = Source::whole(&p, 0).unwrap();
            let opened = ranges::open_all(&[src], 1 << 20).unwrap();
            std::fs::write(&p, vec![5u8; 300_000]).unwrap();
            let mut out = vec![0u8; 1 << 20];
            let e = run(&HostTarget::new(&mut out), &opened, &opts, t)
                .err()
                .unwrap_or_else(|| panic!("{t}: a shrunken file passed"));
            let e = e.to_string();
            assert!(
                e.contains("the file ended at offset") && e.contains("did it shrink"),
                "{t}: {e}"
            );
            std::fs::write(&p, vec![5u8; 1 << 20]).unwrap();
        }
    }

    #[test]
    fn nothing_to_move_starts_no_thread() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("empty");
        std::fs::write(&p, b"").unwrap();
        let mut out = [0u8; 0];
        let st = transfer(
            &HostTarget::new(&mut out),
            &[Source::whole(&p, 0).unwrap()],
            &GpuOptions::default(),
        )
        .unwrap();
        assert_eq!((st.bytes, st.threads, st.pinned), (0, 0, false));
    }
}
