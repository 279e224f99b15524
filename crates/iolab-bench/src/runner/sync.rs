//! fio's `fsync=N`/`fdatasync=N`: after every N completed writes of a
//! worker (to any of its files, as fio counts them), it syncs the file the
//! Nth went to, on its own thread before it issues its next I/O (as fio
//! does: no sync follows a job's last write, so 256 writes with `fsync=4`
//! make 63 syncs in both tools; with an asynchronous engine the writes
//! still in flight are not waited for, and several boundaries crossed in
//! one batch of completions make one sync), and times each sync.

use crate::error::BenchError;
use crate::metrics::new_histogram;
use crate::spec::SyncEvery;
use hdrhistogram::Histogram;
use std::fs::File;
use std::path::Path;

/// One worker's syncs.
pub(super) struct Syncer {
    /// The worker's files, in its engine's order.
    files: Vec<File>,
    every: SyncEvery,
    since: u32,
    /// N writes have completed since the last sync: the file (index in
    /// `files`) to sync before the next op.
    due: Option<usize>,
    /// Latency of each sync, ns.
    pub hist: Histogram<u64>,
}

impl Syncer {
    /// For a worker's files when the spec asks for syncs; each is opened
    /// again (a sync of any descriptor of a file flushes its data).
    pub fn of<'a>(
        every: Option<SyncEvery>,
        paths: impl IntoIterator<Item = &'a Path>,
    ) -> Result<Option<Syncer>, BenchError> {
        let Some(every) = every else { return Ok(None) };
        let files = paths
            .into_iter()
            .map(|path| {
                File::open(path).map_err(|e| {
                    iolab::Error::io(format!("open {} to {} it", path.display(), every.call()), e)
                })
            })
            .collect::<Result<Vec<File>, iolab::Error>>()?;
        Ok(Some(Syncer {
            files,
            every,
            since: 0,
            due: None,
            hist: new_histogram(),
        }))
    }

    /// Counts one completed write, to the worker's file `file`; after the
    /// Nth since the last sync, a sync of that file is due before the next op.
    #[inline]
    pub fn wrote(&mut self, file: usize) {
        self.since += 1;
        if self.since >= self.every.writes {
            self.since = 0;
            self.due = Some(file);
        }
    }

    /// Syncs (and times it) when a sync is due; the worker calls it just
    /// before it issues an op.
    #[inline]
    pub fn sync_if_due(&mut self) -> Result<(), BenchError> {
        let Some(file) = self.due.take() else {
            return Ok(());
        };
        let t0 = std::time::Instant::now();
        let f = &self.files[file];
        let r = if self.every.data_only {
            f.sync_data()
        } else {
            f.sync_all()
        };
        r.map_err(|e| iolab::Error::io(self.every.call(), e))?;
        let _ = self.hist.record((t0.elapsed().as_nanos() as u64).max(1));
        Ok(())
    }
}
