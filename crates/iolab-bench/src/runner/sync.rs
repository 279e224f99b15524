//! fio's `fsync=N`/`fdatasync=N`: a worker syncs the file it wrote last
//! after every N completed writes (of any of its files, as fio counts
//! them), on its own thread between its I/Os (as fio does for synchronous
//! engines; with an asynchronous engine the writes still in flight are not
//! waited for), and times each sync.

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
            hist: new_histogram(),
        }))
    }

    /// Counts one completed write, to the worker's file `file`; syncs that
    /// file when it is the Nth write since the last sync.
    pub fn wrote(&mut self, file: usize) -> Result<(), BenchError> {
        self.since += 1;
        if self.since < self.every.writes {
            return Ok(());
        }
        self.since = 0;
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
