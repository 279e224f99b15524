//! `--json`: one JSON document on stdout with every record, printed when
//! all are in.

use super::{Exportable, Exporter};

/// Collects records; prints `{"schema_version": N, "records": [...]}`.
pub struct Json {
    schema_version: u32,
    records: Vec<serde_json::Value>,
}

impl Json {
    /// A document of records of `schema_version`.
    pub fn new(schema_version: u32) -> Self {
        Json {
            schema_version,
            records: Vec::new(),
        }
    }
}

impl Exporter for Json {
    fn record(&mut self, rec: &dyn Exportable) -> anyhow::Result<()> {
        self.records.push(rec.to_json()?);
        Ok(())
    }

    fn finish(&mut self) -> anyhow::Result<()> {
        let doc = serde_json::json!({
            "schema_version": self.schema_version,
            "records": self.records,
        });
        // Written as text: a closed stdout then surfaces as the plain
        // `BrokenPipe` the binary ends quietly on.
        let text = serde_json::to_string_pretty(&doc)?;
        super::stdout(&format!("{text}\n"))
    }
}
