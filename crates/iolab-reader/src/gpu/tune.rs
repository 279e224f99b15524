//! `iolab tune`'s GPU part: how fast this machine moves bytes from host
//! memory and from files into a GPU, and the settings that do it best.
//! Measured ([`measure`], feature `cuda`): one large copy from page-locked
//! and from pageable memory; the tune file read into the GPU cold (each
//! run after an eviction) with the ring over piece size × pieces in
//! flight, and warm with threads over piece size × threads; the best warm
//! setting again with pageable staging. Chosen ([`choose`], pure): the
//! piece size that loses least against the best cold and the best warm
//! run, then the depth and the threads that were fastest with it.

use crate::profile::{GpuChoice, GpuRates};

/// One measured setting.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct GpuCase {
    /// Read after an eviction (the ring), or out of the page cache (threads).
    pub cold: bool,
    /// Bytes per read and copy.
    pub chunk: usize,
    /// Pieces in flight on the ring (cold cases).
    pub depth: u32,
    /// Reading threads (warm cases).
    pub threads: usize,
    /// Page-locked staging.
    pub pinned: bool,
    /// File → GPU, GB/s (the median of the repeats).
    pub gb_s: f64,
}

/// What [`measure`] found.
#[derive(Clone, Debug, serde::Serialize)]
pub struct GpuTune {
    /// The GPU's number.
    pub device: usize,
    /// Its name.
    pub name: String,
    /// Every setting measured.
    pub cases: Vec<GpuCase>,
    /// Whether the cold cases ran cold (the eviction worked); if not, they
    /// were skipped and the depth is the profile's.
    pub evicted: bool,
    /// The choice, with the rates.
    pub choice: GpuChoice,
}

/// The settings to measure: piece sizes, ring depths (cold) and threads
/// (warm, at most `cpus`).
pub fn grid(quick: bool, cpus: usize) -> (Vec<usize>, Vec<u32>, Vec<usize>) {
    const MIB: usize = 1 << 20;
    let (chunks, depths, threads) = if quick {
        (vec![2 * MIB, 4 * MIB, 16 * MIB], vec![2, 8], vec![2, 8, 16])
    } else {
        (
            vec![2 * MIB, 4 * MIB, 16 * MIB, 32 * MIB],
            vec![2, 4, 8],
            vec![2, 4, 8, 16],
        )
    };
    let mut threads: Vec<usize> = threads.into_iter().map(|t| t.min(cpus.max(1))).collect();
    threads.dedup();
    (chunks, depths, threads)
}

/// The best of `cases` that pass `keep`, by rate.
fn best(cases: &[GpuCase], keep: impl Fn(&GpuCase) -> bool) -> Option<GpuCase> {
    cases
        .iter()
        .filter(|c| keep(c))
        .copied()
        .max_by(|a, b| a.gb_s.total_cmp(&b.gb_s))
}

/// The choice from pinned cases: the piece size whose worse ratio to the
/// best cold and the best warm rate is highest (one size serves both), then
/// that size's fastest depth (cold) and thread count (warm); page-locked
/// when `pinned_wins`. `depth`: used when no cold case was measured.
pub fn choose(cases: &[GpuCase], pinned_wins: bool, depth: u32, slots: usize) -> Option<GpuChoice> {
    let warm_best = best(cases, |c| !c.cold && c.pinned)?;
    let cold_best = best(cases, |c| c.cold && c.pinned);
    let score = |chunk: usize| {
        let w = best(cases, |c| !c.cold && c.pinned && c.chunk == chunk).map_or(0.0, |c| c.gb_s);
        let c = match cold_best {
            Some(cb) => best(cases, |c| c.cold && c.pinned && c.chunk == chunk)
                .map_or(0.0, |c| c.gb_s / cb.gb_s),
            None => 1.0,
        };
        (w / warm_best.gb_s).min(c)
    };
    let mut chunks: Vec<usize> = cases.iter().map(|c| c.chunk).collect();
    chunks.sort_unstable();
    chunks.dedup();
    let chunk = chunks
        .into_iter()
        .max_by(|a, b| score(*a).total_cmp(&score(*b)))?;
    let warm = best(cases, |c| !c.cold && c.pinned && c.chunk == chunk)?;
    let cold = best(cases, |c| c.cold && c.pinned && c.chunk == chunk);
    Some(GpuChoice {
        chunk,
        depth: cold.map_or(depth, |c| c.depth),
        threads: warm.threads,
        slots,
        pinned: pinned_wins,
        measured: Some(GpuRates {
            device: 0,
            pinned_copy: 0.0,
            pageable_copy: 0.0,
            cold: cold.map_or(0.0, |c| c.gb_s),
            warm: warm.gb_s,
        }),
    })
}

#[cfg(feature = "cuda")]
pub use measuring::measure;

#[cfg(feature = "cuda")]
mod measuring {
    use super::{choose, grid, GpuCase, GpuTune};
    use crate::gpu::{
        load_file, Device, DeviceBuffer, GpuError, GpuOptions, GpuTechnique, PinnedBuf,
    };
    use crate::profile::Profile;
    use std::path::Path;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Instant;

    /// The median of `v` (0 when empty).
    fn median(mut v: Vec<f64>) -> f64 {
        if v.is_empty() {
            return 0.0;
        }
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    }

    /// Measures GPU `device` with the `len`-byte file at `path` (see the
    /// module documentation); `quick` measures fewer settings and copies
    /// 256 MiB instead of 1 GiB. Stops between runs when `stop` is set.
    pub fn measure(
        path: &Path,
        len: u64,
        device: usize,
        quick: bool,
        stop: &AtomicBool,
    ) -> Result<GpuTune, GpuError> {
        let dev = Device::open(device)?;
        let name = dev.name().unwrap_or_else(|_| "unknown".into());
        let copy_len = if quick { 256 << 20 } else { 1 << 30 };
        let (pinned_copy, pageable_copy) = copy_rates(&dev, copy_len, 3)?;
        let base = GpuOptions::from_profile(&Profile::thesis_defaults());
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let (chunks, depths, threads) = grid(quick, cpus);
        let evicted = evicts(path, len);
        let mut cases = Vec::new();
        for &chunk in &chunks {
            for &depth in depths.iter().filter(|_| evicted) {
                let reps = if quick { 1 } else { 2 };
                cases.push(cold_case(path, device, &base, (chunk, depth), reps, stop)?);
            }
        }
        iolab::cache::warm(path, len).map_err(|e| GpuError::layer(path, e))?;
        for &chunk in &chunks {
            for &t in &threads {
                cases.push(warm_case(path, device, &base, chunk, t, true, stop)?);
            }
        }
        let slots = base.slots;
        let pinned_best = choose(&cases, true, base.depth, slots).expect("warm cases measured");
        let pageable = warm_case(
            path,
            device,
            &base,
            pinned_best.chunk,
            pinned_best.threads,
            false,
            stop,
        )?;
        let pinned_wins = pinned_best.measured.is_none_or(|m| m.warm >= pageable.gb_s);
        cases.push(pageable);
        let mut choice =
            choose(&cases, pinned_wins, base.depth, slots).expect("warm cases measured");
        if let Some(m) = choice.measured.as_mut() {
            (m.device, m.pinned_copy, m.pageable_copy) = (device, pinned_copy, pageable_copy);
        }
        Ok(GpuTune {
            device,
            name,
            cases,
            evicted,
            choice,
        })
    }

    /// GB/s of one `len`-byte copy from page-locked and from pageable
    /// memory into the GPU, the median of `reps` each.
    fn copy_rates(
        dev: &std::sync::Arc<Device>,
        len: usize,
        reps: usize,
    ) -> Result<(f64, f64), GpuError> {
        let buf = DeviceBuffer::alloc(dev, len as u64)?;
        let mut pinned = PinnedBuf::new(dev, len)?;
        pinned.as_mut_slice().fill(1);
        let pageable = vec![1u8; len];
        let rate = |src: &[u8]| -> Result<f64, GpuError> {
            let mut v = Vec::new();
            for _ in 0..reps {
                let t = Instant::now();
                buf.copy_from_host(0, src)?;
                v.push(len as f64 / t.elapsed().as_secs_f64() / 1e9);
            }
            Ok(median(v))
        };
        let p = if pinned.is_pinned() {
            rate(&pinned.as_mut_slice()[..len])?
        } else {
            0.0
        };
        Ok((p, rate(&pageable)?))
    }

    /// Whether evicting the file leaves (almost) none of it cached.
    fn evicts(path: &Path, len: u64) -> bool {
        iolab::cache::evict(path).is_ok()
            && iolab::cache::residency(path, len).is_ok_and(|r| r.fraction() < 0.05)
    }

    /// The ring into the GPU after an eviction, `reps` runs of (piece
    /// size, pieces in flight).
    fn cold_case(
        path: &Path,
        device: usize,
        base: &GpuOptions,
        (chunk, depth): (usize, u32),
        reps: usize,
        stop: &AtomicBool,
    ) -> Result<GpuCase, GpuError> {
        let opts = GpuOptions {
            chunk,
            depth,
            threads: 1,
            pinned: true,
            ..base.clone()
        }
        .technique(GpuTechnique::Ring);
        let mut v = Vec::new();
        for _ in 0..reps {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            iolab::cache::evict(path).map_err(|e| GpuError::layer(path, e))?;
            let (_, st) = load_file(path, device, &opts)?;
            v.push(st.gb_per_s());
        }
        Ok(GpuCase {
            cold: true,
            chunk,
            depth,
            threads: 1,
            pinned: true,
            gb_s: median(v),
        })
    }

    /// Threads out of the page cache into the GPU, three runs.
    fn warm_case(
        path: &Path,
        device: usize,
        base: &GpuOptions,
        chunk: usize,
        threads: usize,
        pinned: bool,
        stop: &AtomicBool,
    ) -> Result<GpuCase, GpuError> {
        let opts = GpuOptions {
            chunk,
            threads,
            pinned,
            ..base.clone()
        }
        .technique(GpuTechnique::Threads);
        let mut v = Vec::new();
        for _ in 0..3 {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let (_, st) = load_file(path, device, &opts)?;
            v.push(st.gb_per_s());
        }
        Ok(GpuCase {
            cold: false,
            chunk,
            depth: opts.slots as u32,
            threads,
            pinned,
            gb_s: median(v),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(cold: bool, chunk: usize, knob: usize, gb_s: f64) -> GpuCase {
        GpuCase {
            cold,
            chunk,
            depth: knob as u32,
            threads: knob,
            pinned: true,
            gb_s,
        }
    }

    #[test]
    fn the_piece_size_that_loses_least_cold_or_warm_wins_with_its_own_best_depth_and_threads() {
        let cases = [
            // 4 MiB: best cold (2.0), poor warm (10 of 30).
            case(true, 4, 2, 1.8),
            case(true, 4, 8, 2.0),
            case(false, 4, 4, 10.0),
            // 16 MiB: near-best cold (1.9), best warm (30).
            case(true, 16, 2, 1.9),
            case(true, 16, 8, 1.7),
            case(false, 16, 4, 22.0),
            case(false, 16, 16, 30.0),
        ];
        let c = choose(&cases, true, 4, 3).unwrap();
        assert_eq!((c.chunk, c.depth, c.threads, c.slots), (16, 2, 16, 3));
        let m = c.measured.unwrap();
        assert_eq!((m.cold, m.warm), (1.9, 30.0));
        // Without cold cases (eviction does not work here), warm decides
        // and the depth given stays.
        let warm: Vec<GpuCase> = cases.iter().filter(|c| !c.cold).copied().collect();
        let c = choose(&warm, false, 6, 3).unwrap();
        assert_eq!((c.chunk, c.depth, c.pinned), (16, 6, false));
        assert!(choose(&[], true, 4, 3).is_none());
    }

    #[test]
    fn the_grid_never_asks_for_more_threads_than_cpus() {
        let (chunks, depths, threads) = grid(false, 6);
        assert_eq!(chunks.len(), 4);
        assert_eq!(depths, [2, 4, 8]);
        assert_eq!(threads, [2, 4, 6]);
        assert_eq!(grid(true, 1).2, [1]);
        // The quick grid reaches as many threads as a 16-CPU machine has.
        assert_eq!(grid(true, 16).2, [2, 8, 16]);
    }
}
