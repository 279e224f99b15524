//! How a transfer runs: piece size, pieces in flight, threads, staging
//! buffers, from the profile (`iolab tune`) or sane defaults.

use super::technique::GpuTechnique;
use crate::profile::Profile;

/// The most threads the defaults start. Copying a cached file into a GPU
/// is bound by memory bandwidth and the link, not by cores: on a 16-core
/// H100 machine, with 2 MiB pieces, 8, 12 and 16 threads moved 45.1, 45.5
/// and 44.2 GB/s (medians of 5 rounds, 6 GiB; `docs/results/gpu/`).
pub const MAX_THREADS: usize = 12;

/// The piece size without the profile's GPU measurements: a thread's
/// staging (3 pieces) stays small enough to pass through the CPU's caches
/// between the read and the copy. On that H100 machine, over three runs
/// with 8 or 12 threads, a cached checkpoint went to the GPU at 43.7–45.5
/// GB/s in 2 MiB pieces and at 37.8–45.7 in 4 MiB pieces; a page-locked
/// copy of 2 MiB loses only 4 % to one of 4 MiB (51 against 53 GB/s).
pub const PIECE: usize = 2 << 20;

/// Settings of one transfer. Start from [`GpuOptions::from_profile`] (or
/// `default()`, the built-in profile's) and change what differs.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GpuOptions {
    /// The technique; `None` lets the policy choose
    /// ([`choose`](super::technique::choose)).
    pub technique: Option<GpuTechnique>,
    /// Bytes per read and per copy (rounded up to 4 KiB).
    pub chunk: usize,
    /// Pieces in flight on a file's io_uring ([`GpuTechnique::Ring`]).
    pub depth: u32,
    /// Threads: readers for [`GpuTechnique::Threads`] and
    /// [`GpuTechnique::CuFile`], files read at once for
    /// [`GpuTechnique::Ring`].
    pub threads: usize,
    /// Staging buffers per reading thread ([`GpuTechnique::Threads`]): one
    /// being filled while the others' copies run.
    pub slots: usize,
    /// Page-lock the staging buffers (`cuMemHostRegister`); `false` copies
    /// from pageable memory, slower, for comparison.
    pub pinned: bool,
    /// Read cold data with O_DIRECT (no second copy through the page
    /// cache) when the file system allows it.
    pub direct: bool,
}

impl GpuOptions {
    /// The profile's settings: its GPU measurements when it has them, else
    /// [`PIECE`]-sized pieces, its whole-file depth, and one thread per CPU
    /// (up to [`MAX_THREADS`]).
    pub fn from_profile(p: &Profile) -> GpuOptions {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let (chunk, depth, threads, slots, pinned) = match p.gpu {
            Some(g) => (g.chunk, g.depth, g.threads, g.slots, g.pinned),
            None => (PIECE, p.whole.depth, cpus.min(MAX_THREADS), 3, true),
        };
        GpuOptions {
            technique: None,
            chunk: chunk.max(4096).div_ceil(4096) * 4096,
            depth: depth.max(1),
            threads: threads.max(1),
            slots: slots.max(1),
            pinned,
            direct: p.whole.direct_cold,
        }
    }

    /// These options with `technique` forced.
    pub fn technique(mut self, t: GpuTechnique) -> Self {
        self.technique = Some(t);
        self
    }

    /// The piece size actually used: [`chunk`](Self::chunk) rounded up to
    /// whole 4 KiB pages (never 0).
    pub(crate) fn piece(&self) -> usize {
        self.chunk.max(4096).div_ceil(4096) * 4096
    }
}

impl Default for GpuOptions {
    /// The built-in profile's settings.
    fn default() -> Self {
        GpuOptions::from_profile(&Profile::thesis_defaults())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::GpuChoice;

    #[test]
    fn a_profile_with_gpu_measurements_is_followed() {
        let mut p = Profile::thesis_defaults();
        p.gpu = Some(GpuChoice {
            chunk: 16 << 20,
            depth: 12,
            threads: 6,
            slots: 2,
            pinned: false,
            measured: None,
        });
        p.whole.direct_cold = false;
        let o = GpuOptions::from_profile(&p);
        assert_eq!(
            (o.chunk, o.depth, o.threads, o.slots, o.pinned, o.direct),
            (16 << 20, 12, 6, 2, false, false)
        );
    }

    #[test]
    fn without_them_the_built_in_piece_the_whole_file_depth_and_the_cpus_decide() {
        let mut p = Profile::thesis_defaults();
        p.whole.block = 1 << 20;
        p.whole.depth = 5;
        let o = GpuOptions::from_profile(&p);
        assert_eq!((o.chunk, o.depth, o.slots), (PIECE, 5, 3));
        assert!(o.pinned && o.direct && o.technique.is_none());
        assert!((1..=MAX_THREADS).contains(&o.threads));
        // Zeros and odd sizes from a hand-edited profile stay usable.
        p.gpu = Some(GpuChoice {
            chunk: 5000,
            depth: 0,
            threads: 0,
            slots: 0,
            pinned: true,
            measured: None,
        });
        let o = GpuOptions::from_profile(&p);
        assert_eq!((o.chunk, o.depth, o.threads, o.slots), (8192, 1, 1, 1));
    }
}
