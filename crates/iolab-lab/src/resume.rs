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
    match iolab::file::read_bounded(path, iolab::file::RECORDS_MAX_BYTES, "record file") {
        Ok(b) => Ok(String::from_utf8_lossy(&b)
            .lines()
            .filter_map(LabRecord::parse)
            .collect()),
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

/// The spec as compared for resume: the temporary file's name (it has the
/// process id in it) and an unknown size (0: the file's own) left out.
fn comparable(s: &iolab_bench::spec::WorkloadSpec, size_known: bool) -> serde_json::Value {
    let mut s = s.clone();
    let name = s
        .file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if name.starts_with(".iolab-") && name.ends_with(".tmp") {
        s.file = std::path::PathBuf::new();
    }
    if !size_known {
        s.file_size = 0;
    }
    serde_json::to_value(&s).unwrap_or_default()
}

/// Whether `done` (records of an `iolab bench --jsonl` file) already holds
/// a complete record of `spec` measured by this iolab version on `machine`
/// (`iolab bench --resume`).
pub fn bench_done(
    done: &[iolab_bench::record::BenchRecord],
    spec: &iolab_bench::spec::WorkloadSpec,
    machine: &Machine,
) -> bool {
    let known = spec.file_size != 0;
    let want = comparable(spec, known);
    done.iter().any(|r| {
        let m = Machine {
            host: r.env.hostname.clone(),
            kernel: r.env.kernel.clone(),
            device: r
                .env
                .device
                .clone()
                .or(r.env.fs_type.clone())
                .unwrap_or_else(|| "unknown".into()),
        };
        &m == machine
            && r.env.iolab_version == env!("CARGO_PKG_VERSION")
            && !r.runs.is_empty()
            && !r.runs.iter().any(|x| x.interrupted)
            && comparable(&r.spec, known) == want
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Config, Measured, Scale, Work};

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
