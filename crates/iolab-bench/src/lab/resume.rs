//! Resuming an interrupted run: a configuration is done when `OUT/NAME.jsonl`
//! already holds a record with the same resume key (the configuration and
//! its spec), the same iolab version and the same machine (host, kernel,
//! device of `--dir`).

use super::record::{LabRecord, Machine};
use std::collections::HashMap;
use std::path::Path;

/// Lab records in `path` (missing file: none). Lines that are not lab
/// records (bench or sys records, a torn last line) are skipped.
pub fn load(path: &Path) -> std::io::Result<Vec<LabRecord>> {
    match std::fs::read_to_string(path) {
        Ok(s) => Ok(s.lines().filter_map(LabRecord::parse).collect()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

/// The records of `experiment` measured on `machine` by this iolab
/// version, by resume key (the latest wins).
pub fn index<'a>(
    recs: &'a [LabRecord],
    experiment: &str,
    machine: &Machine,
) -> HashMap<String, &'a LabRecord> {
    let version = env!("CARGO_PKG_VERSION");
    let mut m = HashMap::new();
    for r in recs {
        if r.experiment == experiment && &r.machine == machine && r.iolab_version == version {
            m.insert(r.resume_key.clone(), r);
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::{Config, Measured, Scale, Work};

    fn rec(key: &str, machine: &Machine) -> LabRecord {
        let cfg = Config::new(&[("x", key.to_string())], Work::Custom);
        LabRecord::new(
            "e",
            &cfg,
            machine.clone(),
            Scale::Smoke,
            "iolab lab run e",
            0,
            Measured::default(),
            None,
        )
    }

    #[test]
    fn only_same_machine_and_version_count() {
        let a = Machine {
            host: "h".into(),
            kernel: "k".into(),
            device: "d".into(),
        };
        let b = Machine {
            device: "other".into(),
            ..a.clone()
        };
        let mut old = rec("2", &a);
        old.iolab_version = "0.0.0-old".into();
        let recs = vec![rec("1", &a), rec("1", &b), old];
        let idx = index(&recs, "e", &a);
        assert_eq!(idx.len(), 1);
        assert!(idx.contains_key("x=1"));
        assert!(index(&recs, "other", &a).is_empty());
    }

    #[test]
    fn load_skips_foreign_lines() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("e.jsonl");
        let m = Machine::default();
        let line = serde_json::to_string(&rec("1", &m)).unwrap();
        std::fs::write(&p, format!("{{\"schema_version\":1}}\n{line}\n{{\"torn")).unwrap();
        let v = load(&p).unwrap();
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].key, "x=1");
        assert!(load(&d.path().join("none")).unwrap().is_empty());
    }
}
