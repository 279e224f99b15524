//! Where every result leaves iolab.
//!
//! - [`Exporter`]: one trait for a format, one file per format (`csv.rs`,
//!   `jsonl.rs`, `json.rs`; the human tables in `table.rs`; fio's own
//!   formats in `fio.rs`);
//! - [`flags::FILE_FORMATS`]: the file formats, one line each, from which the
//!   flags (`--csv FILE`, `--jsonl FILE`, `flags.rs`) and the manager
//!   ([`Exporters`]) are built — a new format is its file and a line there;
//! - [`Exportable`]: what a record of any kind (a bench configuration, a
//!   `sys` measurement, a replayed reader, a multi-rank run) is as JSON and
//!   as CSV rows (`records.rs`), so every format serves every command;
//! - [`target::OutputTarget`]: the one safe writer every file goes through,
//!   checked before anything is measured.
//!
//! Files are written after every record, so an interrupted sweep keeps
//! what it measured.

pub mod csv;
pub mod fio;
pub mod flags;
pub mod format;
pub mod json;
pub mod jsonl;
pub mod records;
pub mod table;
pub mod target;

pub use format::{Exportable, Exporter, FileFormat};

/// The exporters of one invocation, fed together.
#[derive(Default)]
pub struct Exporters(Vec<Box<dyn Exporter>>);

impl Exporters {
    /// One exporter per file format the flags named.
    pub fn new(targets: flags::Targets) -> Self {
        Exporters(
            targets
                .files
                .into_iter()
                .map(|(f, t)| (f.make)(t))
                .collect(),
        )
    }

    /// Adds an exporter that is not a file format (the `--json` document).
    pub fn push(&mut self, e: Box<dyn Exporter>) {
        self.0.push(e);
    }

    /// Hands `rec` to every exporter; the first error is returned after all
    /// have had it.
    pub fn record(&mut self, rec: &dyn Exportable) -> anyhow::Result<()> {
        let mut first = None;
        for e in &mut self.0 {
            if let Err(err) = e.record(rec) {
                first.get_or_insert(err);
            }
        }
        first.map_or(Ok(()), Err)
    }

    /// Ends every exporter; the first error is returned after all ended.
    pub fn finish(&mut self) -> anyhow::Result<()> {
        let mut first = None;
        for e in &mut self.0 {
            if let Err(err) = e.finish() {
                first.get_or_insert(err);
            }
        }
        first.map_or(Ok(()), Err)
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
