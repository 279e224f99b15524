//! What every format and every record agree on: a record says what it is
//! ([`Exportable`]), a format writes records ([`Exporter`]), and a file
//! format names its flag ([`FileFormat`]).

use super::target::{Mode, OutputTarget};

/// A result every format can write.
pub trait Exportable {
    /// The record as one JSON value (one line of `--jsonl`).
    fn to_json(&self) -> anyhow::Result<serde_json::Value>;
    /// The CSV column names of this kind of record.
    fn csv_header(&self) -> Vec<String>;
    /// Its CSV rows, one per run or point.
    fn csv_rows(&self) -> Vec<Vec<String>>;
}

/// Receives each record as soon as it is complete.
pub trait Exporter {
    /// One more record.
    fn record(&mut self, rec: &dyn Exportable) -> anyhow::Result<()>;
    /// All records are in.
    fn finish(&mut self) -> anyhow::Result<()> {
        Ok(())
    }
}

/// A format written to a file named on the command line.
pub struct FileFormat {
    /// Its flag (`--csv`, given as `--csv FILE`).
    pub flag: &'static str,
    /// The flag's help.
    pub help: &'static str,
    /// Replaced as a whole, or appended to.
    pub mode: Mode,
    /// Its exporter, writing through the checked target.
    pub make: fn(OutputTarget) -> Box<dyn Exporter>,
}

impl FileFormat {
    /// The flag without its dashes (clap's name for it).
    pub fn id(&self) -> &'static str {
        self.flag.trim_start_matches('-')
    }
}

impl std::fmt::Debug for FileFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.flag)
    }
}
