//! `--jsonl FILE`: appends one record per line, flushed per configuration.

use super::target::OutputTarget;
use super::Exporter;
use iolab_bench::record::BenchRecord;

/// An append-only JSON-lines file.
pub struct JsonLines {
    target: OutputTarget,
}

impl JsonLines {
    /// Appends through `target` (checked before measuring, in append mode).
    pub fn new(target: OutputTarget) -> Self {
        JsonLines { target }
    }
}

impl Exporter for JsonLines {
    fn record(&mut self, rec: &BenchRecord) -> anyhow::Result<()> {
        let line = serde_json::to_vec(rec)?;
        self.target.append_jsonl(&line)
    }
}
