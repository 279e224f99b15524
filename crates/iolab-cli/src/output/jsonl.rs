//! `--jsonl FILE`: appends one record per line, flushed per configuration.

use super::Exporter;
use anyhow::Context;
use iolab_bench::record::BenchRecord;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// An append-only JSON-lines file.
pub struct JsonLines {
    path: PathBuf,
    file: File,
}

impl JsonLines {
    /// Opens (creating if needed) `path` for appending.
    pub fn open(path: &Path) -> anyhow::Result<Self> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .with_context(|| format!("--jsonl {}", path.display()))?;
        Ok(JsonLines {
            path: path.to_path_buf(),
            file,
        })
    }
}

impl Exporter for JsonLines {
    fn record(&mut self, rec: &BenchRecord) -> anyhow::Result<()> {
        let mut line = serde_json::to_vec(rec)?;
        line.push(b'\n');
        self.file
            .write_all(&line)
            .and_then(|_| self.file.flush())
            .with_context(|| format!("write {}", self.path.display()))
    }
}
