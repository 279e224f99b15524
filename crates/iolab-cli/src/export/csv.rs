//! `--csv FILE`: every row so far, the file rewritten (atomically) after
//! each record, so an interrupted run keeps a whole file.

use super::target::{Mode, OutputTarget};
use super::{Exportable, Exporter, FileFormat};

/// The format's entry in [`super::FILE_FORMATS`].
pub const FORMAT: FileFormat = FileFormat {
    flag: "--csv",
    help: "Write results as CSV to FILE (rewritten as results come in)",
    mode: Mode::Replace,
    make: |t| Box::new(Csv::new(t)),
};

/// A CSV file of every row so far.
pub struct Csv {
    target: OutputTarget,
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Csv {
    /// Writes through `target` (checked before measuring).
    pub fn new(target: OutputTarget) -> Self {
        Csv {
            target,
            header: Vec::new(),
            rows: Vec::new(),
        }
    }

    fn write(&mut self) -> anyhow::Result<()> {
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(&self.header)?;
        for r in &self.rows {
            w.write_record(r)?;
        }
        let bytes = w.into_inner().map_err(|e| anyhow::anyhow!("csv: {e}"))?;
        self.target.write_all_atomically(&bytes)
    }
}

impl Exporter for Csv {
    fn record(&mut self, rec: &dyn Exportable) -> anyhow::Result<()> {
        if self.header.is_empty() {
            self.header = rec.csv_header();
        }
        self.rows.extend(rec.csv_rows());
        self.write()
    }
}
