//! What a transfer did and where its time went.

use super::technique::GpuTechnique;
use std::time::Duration;

/// How a transfer ran. The `*_ns` times other than `elapsed_ns` are summed
/// over the threads that did the work, so with several threads they can
/// add up to more than the wall time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Stats {
    /// Bytes moved into the destination.
    pub bytes: u64,
    /// Wall time of the whole transfer, set-up included (for a new device
    /// allocation, from the allocation on; opening the GPU, which the
    /// driver does once per process, is not counted).
    pub elapsed_ns: u64,
    /// Setting up: the device allocation, staging buffers allocated and
    /// page-locked, streams and events made, cuFile opened.
    pub setup_ns: u64,
    /// Reading: in `pread`, or waiting on the ring's reads.
    pub read_ns: u64,
    /// Copying: starting copies, and copies the reader waited for on the
    /// spot (the ring's, cuFile's reads into the device).
    pub copy_ns: u64,
    /// Waiting for an earlier copy to end before its buffer could be
    /// filled again, and for the last copies at the end.
    pub wait_ns: u64,
    /// The technique that ran.
    pub technique: GpuTechnique,
    /// Whether cold data was read with O_DIRECT.
    pub direct: bool,
    /// Whether the staging buffers were page-locked.
    pub pinned: bool,
    /// Bytes per read and copy.
    pub chunk: usize,
    /// Pieces in flight per ring.
    pub depth: u32,
    /// Threads that read.
    pub threads: usize,
}

impl Stats {
    /// Bytes per second over the wall time, in GB/s (10^9).
    pub fn gb_per_s(&self) -> f64 {
        if self.elapsed_ns == 0 {
            return 0.0;
        }
        self.bytes as f64 / self.elapsed_ns as f64
    }
}

/// What one thread counted; summed into [`Stats`].
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Counters {
    pub(crate) bytes: u64,
    pub(crate) setup: Duration,
    pub(crate) read: Duration,
    pub(crate) copy: Duration,
    pub(crate) wait: Duration,
    /// Every lane's staging memory was page-locked.
    pub(crate) pinned: bool,
    /// Some file was read with O_DIRECT.
    pub(crate) direct: bool,
}

impl Counters {
    /// This thread's counts and another's.
    pub(crate) fn add(self, o: Counters) -> Counters {
        Counters {
            bytes: self.bytes + o.bytes,
            setup: self.setup + o.setup,
            read: self.read + o.read,
            copy: self.copy + o.copy,
            wait: self.wait + o.wait,
            pinned: self.pinned && o.pinned,
            direct: self.direct || o.direct,
        }
    }

    /// Counts of no thread yet (the neutral start of a sum).
    pub(crate) fn start() -> Counters {
        Counters {
            pinned: true,
            ..Counters::default()
        }
    }
}
