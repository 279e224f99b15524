//! The index of a sharded checkpoint (`model.safetensors.index.json`, as
//! transformers writes it): which shard file holds each tensor.

use super::error::{LoadError, Malformed};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A sharded checkpoint's index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Index {
    /// The shard files, in name order, as paths beside the index.
    pub shards: Vec<PathBuf>,
    /// Each tensor's shard, as a position in `shards`.
    pub weight_map: BTreeMap<String, usize>,
}

#[derive(Deserialize)]
struct Raw {
    weight_map: BTreeMap<String, String>,
}

/// Reads and checks the index at `path`: every shard a plain file name
/// in the index's directory.
pub fn read_index(path: &Path) -> Result<Index, LoadError> {
    let text = std::fs::read(path).map_err(|e| crate::ReadError::Open {
        path: path.to_path_buf(),
        source: e,
    })?;
    let raw: Raw =
        serde_json::from_slice(&text).map_err(|e| Malformed::BadIndex(e.to_string()).at(path))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut names: Vec<&String> = raw.weight_map.values().collect();
    names.sort_unstable();
    names.dedup();
    for n in &names {
        let plain = Path::new(n.as_str()).file_name().and_then(|f| f.to_str()) == Some(n.as_str());
        if !plain || n.as_str() == ".." {
            return Err(Malformed::ShardName(n.to_string()).at(path).into());
        }
    }
    let weight_map = raw
        .weight_map
        .iter()
        .map(|(t, s)| (t.clone(), names.binary_search(&s).expect("listed above")))
        .collect();
    Ok(Index {
        shards: names.iter().map(|n| dir.join(n.as_str())).collect(),
        weight_map,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(json: &str) -> Result<Index, String> {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("model.safetensors.index.json");
        std::fs::write(&p, json).unwrap();
        read_index(&p).map_err(|e| e.to_string())
    }

    #[test]
    fn shards_come_in_name_order_beside_the_index() {
        let i = index(
            r#"{"metadata":{"total_size":10},"weight_map":{
                "b":"model-00002-of-00002.safetensors",
                "a":"model-00001-of-00002.safetensors",
                "c":"model-00001-of-00002.safetensors"}}"#,
        )
        .unwrap();
        let names: Vec<String> = i
            .shards
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                "model-00001-of-00002.safetensors",
                "model-00002-of-00002.safetensors"
            ]
        );
        assert_eq!(
            (i.weight_map["a"], i.weight_map["b"], i.weight_map["c"]),
            (0, 1, 0)
        );
    }

    #[test]
    fn a_bad_index_or_a_shard_outside_its_directory_is_refused() {
        let e = index(r#"{"metadata":{}}"#).unwrap_err();
        assert!(
            e.contains("not a checkpoint index: missing field `weight_map`"),
            "{e}"
        );
        for bad in ["../x.safetensors", "/etc/passwd", "sub/x.safetensors", ".."] {
            let e = index(&format!(r#"{{"weight_map":{{"a":"{bad}"}}}}"#)).unwrap_err();
            assert!(e.contains(&format!("names shard {bad:?}")), "{e}");
        }
    }
}
