//! `--jsonl FILE`: appends one record per line, flushed per record.

use super::target::{Mode, OutputTarget};
use super::{Exportable, Exporter, FileFormat};

/// The format's entry in [`super::FILE_FORMATS`].
pub const FORMAT: FileFormat = FileFormat {
    flag: "--jsonl",
    help: "Append one JSON record per configuration/measurement to FILE (an empty file or one written by iolab)",
    mode: Mode::Append,
    make: |t| Box::new(JsonLines { target: t }),
};

/// An append-only JSON-lines file.
pub struct JsonLines {
    target: OutputTarget,
}

impl Exporter for JsonLines {
    fn record(&mut self, rec: &dyn Exportable) -> anyhow::Result<()> {
        let line = serde_json::to_vec(&rec.to_json()?)?;
        self.target.append_jsonl(&line)
    }
}
