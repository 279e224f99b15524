//! Writers of results: a human table, one JSON document, JSON lines, CSV.
//! Each file format is one small exporter; files are written after every
//! configuration so an interrupted sweep keeps what it measured.

pub mod csv;
pub mod flags;
pub mod json;
pub mod jsonl;
pub mod table;
pub mod target;

use iolab_bench::record::BenchRecord;

/// Receives each configuration's record as soon as it is complete.
pub trait Exporter {
    /// One more record.
    fn record(&mut self, rec: &BenchRecord) -> anyhow::Result<()>;
    /// All records are in.
    fn finish(&mut self) -> anyhow::Result<()> {
        Ok(())
    }
}

/// Writes text to stdout. A closed pipe (`iolab ... | head`) surfaces as a
/// `BrokenPipe` error, which the binary treats as success, not a panic.
pub fn stdout(text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut o = std::io::stdout().lock();
    o.write_all(text.as_bytes())?;
    o.flush()?;
    Ok(())
}
