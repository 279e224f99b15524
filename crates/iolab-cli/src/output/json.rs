//! `--json`: one JSON document on stdout with every record.

use super::Exporter;
use iolab_bench::record::{BenchRecord, SCHEMA_VERSION};
use std::io::Write;

/// Collects records; prints the document at the end.
#[derive(Default)]
pub struct Json {
    records: Vec<BenchRecord>,
}

impl Exporter for Json {
    fn record(&mut self, rec: &BenchRecord) -> anyhow::Result<()> {
        self.records.push(rec.clone());
        Ok(())
    }

    fn finish(&mut self) -> anyhow::Result<()> {
        let doc = serde_json::json!({
            "schema_version": SCHEMA_VERSION,
            "records": self.records,
        });
        let mut out = std::io::stdout().lock();
        serde_json::to_writer_pretty(&mut out, &doc)?;
        writeln!(out)?;
        out.flush()?;
        Ok(())
    }
}
