//! fio's `fsync=N`/`fdatasync=N`: a worker syncs its file after every N
//! completed writes, on its own thread before it issues its next I/O (as
//! fio does: no sync follows a job's last write, so 256 writes with
//! `fsync=4` make 63 syncs in both tools; with an asynchronous engine the
//! writes still in flight are not waited for, and several boundaries
//! crossed in one batch of completions make one sync), and times each
//! sync.

use crate::error::BenchError;
use crate::metrics::new_histogram;
use crate::spec::SyncEvery;
use hdrhistogram::Histogram;
use std::fs::File;
use std::path::Path;

/// One worker's syncs.
pub(super) struct Syncer {
    file: File,
    every: SyncEvery,
    since: u32,
    /// N writes have completed since the last sync: sync before the next op.
    due: bool,
    /// Latency of each sync, ns.
    pub hist: Histogram<u64>,
}

impl Syncer {
    /// For `path` when the spec asks for syncs; the file is opened again
    /// (a sync of any descriptor of it flushes its data).
    pub fn of(every: Option<SyncEvery>, path: &Path) -> Result<Option<Syncer>, BenchError> {
        let Some(every) = every else { return Ok(None) };
        let file = File::open(path).map_err(|e| {
            iolab::Error::io(format!("open {} to {} it", path.display(), every.call()), e)
        })?;
        Ok(Some(Syncer {
            file,
            every,
            since: 0,
            due: false,
            hist: new_histogram(),
        }))
    }

    /// Counts one completed write; after the Nth since the last sync, a
    /// sync is due before the next op.
    #[inline]
    pub fn wrote(&mut self) {
        self.since += 1;
        if self.since >= self.every.writes {
            self.since = 0;
            self.due = true;
        }
    }

    /// Syncs (and times it) when a sync is due; the worker calls it just
    /// before it issues an op.
    #[inline]
    pub fn sync_if_due(&mut self) -> Result<(), BenchError> {
        if !self.due {
            return Ok(());
        }
        self.due = false;
        let t0 = std::time::Instant::now();
        let r = if self.every.data_only {
            self.file.sync_data()
        } else {
            self.file.sync_all()
        };
        r.map_err(|e| iolab::Error::io(self.every.call(), e))?;
        let _ = self.hist.record((t0.elapsed().as_nanos() as u64).max(1));
        Ok(())
    }
}
