//! The destination abstraction: where the pipeline's bytes go. A
//! [`Target`] is the memory (host or GPU); each reading thread gets its
//! own [`Lane`]: staging buffers it reads into and a queue of copies out
//! of them. A lane owns its staging memory and hands a buffer out again
//! only once the copy last started from it has ended, so no reader can
//! overwrite bytes a copy is still taking, whatever order things finish in.

use super::error::GpuError;

/// Memory the pipeline fills, shared by its threads.
pub trait Target: Sync {
    /// One thread's staging buffers and copy queue.
    type Lane<'a>: Lane
    where
        Self: 'a;

    /// Bytes the destination holds.
    fn len(&self) -> u64;

    /// Whether it holds no bytes.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A lane of `slots` staging buffers of `slot_len` bytes each (one
    /// block of `slots * slot_len` bytes, aligned for O_DIRECT), for the
    /// calling thread; page-locked when `pinned` and the destination can
    /// use that ([`Lane::pinned`] says what it got).
    fn lane(&self, slots: usize, slot_len: usize, pinned: bool)
        -> Result<Self::Lane<'_>, GpuError>;
}

/// One thread's staging buffers and the copies out of them.
pub trait Lane {
    /// Staging buffer `i`, to fill; first waits for the copy last started
    /// from it, if that has not ended.
    fn slot(&mut self, i: usize) -> Result<&mut [u8], GpuError>;

    /// Starts copying the first `n` bytes of buffer `i` to destination
    /// offset `at`; may return before the copy ends.
    fn send(&mut self, i: usize, n: usize, at: u64) -> Result<(), GpuError>;

    /// Waits until every copy started has ended.
    fn finish(&mut self) -> Result<(), GpuError>;

    /// All staging memory as one block (buffer `i` at `i * slot_len`), once
    /// every copy has ended, and a copier for bytes in it: for a reader
    /// that fills the buffers itself (the io_uring stream).
    fn split(&mut self) -> Result<(&mut [u8], &mut dyn CopyNow), GpuError>;

    /// Whether the staging memory is page-locked for the device's DMA.
    fn pinned(&self) -> bool;
}

/// Copies that have ended when the call returns.
pub trait CopyNow {
    /// Copies `src` to destination offset `at`, returning once it is done.
    fn copy_now(&mut self, src: &[u8], at: u64) -> Result<(), GpuError>;
}
