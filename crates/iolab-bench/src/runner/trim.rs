//! Trims (fio's `rw=trim`, `randtrim`, `trimwrite`): a trim of a file frees
//! the blocks of its range with `fallocate(FALLOC_FL_PUNCH_HOLE)`, as fio
//! trims files. It is a system call of its own, made on the worker's
//! thread when the trim is issued (fio's engines trim synchronously too),
//! timed and counted apart from reads and writes.

use crate::error::BenchError;
use crate::metrics::new_histogram;
use crate::spec::TrimMix;
use hdrhistogram::Histogram;
use std::fs::File;
use std::path::Path;

/// One worker's trims.
pub(super) struct Trimmer {
    files: Vec<File>,
    mix: TrimMix,
    /// `trimwrite`: the range just trimmed, to be written next.
    pending_write: Option<(usize, u64)>,
    /// Latency of each trim, ns.
    pub hist: Histogram<u64>,
    /// Trims done and bytes trimmed.
    pub ops: u64,
    /// Bytes trimmed.
    pub bytes: u64,
}

impl Trimmer {
    /// For a worker's files when the spec trims; each is opened again for
    /// writing (a hole needs a writable descriptor).
    pub fn of<'a>(
        mix: Option<TrimMix>,
        paths: impl IntoIterator<Item = &'a Path>,
    ) -> Result<Option<Trimmer>, BenchError> {
        let Some(mix) = mix else { return Ok(None) };
        let files = paths
            .into_iter()
            .map(|p| {
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(p)
                    .map_err(|e| iolab::Error::io(format!("open {} to trim it", p.display()), e))
            })
            .collect::<Result<Vec<File>, iolab::Error>>()?;
        Ok(Some(Trimmer {
            files,
            mix,
            pending_write: None,
            hist: new_histogram(),
            ops: 0,
            bytes: 0,
        }))
    }

    /// The range trimmed last, when the next I/O is its write
    /// (`trimwrite`): file (index) and offset.
    pub fn take_write(&mut self) -> Option<(usize, u64)> {
        self.pending_write.take()
    }

    /// Trims `len` bytes at `off` of file `k`, timed; with `trimwrite`, the
    /// write of the same range comes next.
    pub fn trim(&mut self, k: usize, off: u64, len: u64) -> Result<(), BenchError> {
        let t0 = std::time::Instant::now();
        iolab::kernel::fs::punch_hole(&self.files[k], off, len).map_err(|e| {
            iolab::Error::io(format!("trim (punch a hole at {off}, {len} bytes)"), e)
        })?;
        let _ = self.hist.record((t0.elapsed().as_nanos() as u64).max(1));
        self.ops += 1;
        self.bytes += len;
        if !self.mix.only {
            self.pending_write = Some((k, off));
        }
        Ok(())
    }

    /// Forgets what the ramp did.
    pub fn reset(&mut self) {
        self.hist.reset();
        self.ops = 0;
        self.bytes = 0;
    }
}
