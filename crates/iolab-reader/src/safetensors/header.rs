//! The safetensors header: an 8-byte little-endian length, then that many
//! bytes of JSON mapping each tensor name to its `dtype`, `shape` and
//! `data_offsets` (a half-open byte range of the data after the header),
//! plus an optional `__metadata__` map of strings. Every check the format
//! allows is made before any tensor data is read, each refusal one line.

use super::dtype::Dtype;
use super::error::{LoadError, Malformed, MAX_HEADER};
use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fs::File;
use std::path::Path;

/// One tensor as the header describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorInfo {
    /// Its name.
    pub name: String,
    /// Element type.
    pub dtype: Dtype,
    /// Dimensions (empty for a scalar).
    pub shape: Vec<u64>,
    /// First byte, counted from the start of the data (after the header).
    pub begin: u64,
    /// One past its last byte, likewise.
    pub end: u64,
}

/// A parsed, checked header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// File offset where the data starts (8 + the header length).
    pub data_start: u64,
    /// Bytes of the file after the header.
    pub data_len: u64,
    /// The tensors, in the order of their data.
    pub tensors: Vec<TensorInfo>,
    /// `__metadata__`, if any.
    pub metadata: BTreeMap<String, String>,
}

impl Header {
    /// Bytes of data the tensors use: the largest end (0 without tensors).
    pub fn extent(&self) -> u64 {
        self.tensors.iter().map(|t| t.end).max().unwrap_or(0)
    }
}

/// Reads and checks the header of `path`.
pub fn read_header(path: &Path) -> Result<Header, LoadError> {
    crate::check_kind(path)?;
    let open_err = |e| crate::ReadError::Open {
        path: path.to_path_buf(),
        source: e,
    };
    let f = File::open(path).map_err(open_err)?;
    let len = f.metadata().map_err(open_err)?.len();
    let mut first = [0u8; 8];
    let got = crate::backend::pread_full(&f, path, 0, &mut first)?;
    let n = header_len(&first[..got], len).map_err(|m| m.at(path))?;
    let mut json = vec![0u8; n as usize];
    let got = crate::backend::pread_full(&f, path, 8, &mut json)?;
    if got < json.len() {
        // The file shrank since its length was read.
        return Err(Malformed::HeaderBeyondFile {
            n,
            len: 8 + got as u64,
        }
        .at(path)
        .into());
    }
    Ok(parse_json(&json, len - 8 - n).map_err(|m| m.at(path))?)
}

/// The header's length from the file's first (up to) 8 bytes, checked
/// against the cap and the file's length.
pub fn header_len(first: &[u8], file_len: u64) -> Result<u64, Malformed> {
    let Ok(b) = <[u8; 8]>::try_from(first) else {
        return Err(Malformed::TooShort { len: file_len });
    };
    let n = u64::from_le_bytes(b);
    if n > MAX_HEADER {
        return Err(Malformed::HeaderTooLarge { n });
    }
    if 8 + n > file_len {
        return Err(Malformed::HeaderBeyondFile { n, len: file_len });
    }
    Ok(n)
}

/// Parses and checks the JSON of a header followed by `data_len` bytes of
/// data.
pub fn parse_json(json: &[u8], data_len: u64) -> Result<Header, Malformed> {
    let entries: Entries = serde_json::from_slice(json).map_err(|e| match e.classify() {
        serde_json::error::Category::Data => Malformed::NotAnObject,
        _ => Malformed::Json(e.to_string()),
    })?;
    let mut metadata = BTreeMap::new();
    let mut tensors = Vec::with_capacity(entries.0.len());
    let mut seen = std::collections::HashSet::new();
    for (name, value) in entries.0 {
        if !seen.insert(name.clone()) {
            return Err(Malformed::Duplicate(name));
        }
        if name == "__metadata__" {
            metadata =
                serde_json::from_value(value).map_err(|e| Malformed::BadMetadata(e.to_string()))?;
            continue;
        }
        tensors.push(tensor(name, value, data_len)?);
    }
    tensors.sort_by(|a, b| (a.begin, a.end, &a.name).cmp(&(b.begin, b.end, &b.name)));
    check_overlaps(&tensors)?;
    Ok(Header {
        data_start: 8 + json.len() as u64,
        data_len,
        tensors,
        metadata,
    })
}

/// A tensor entry as written.
#[derive(Deserialize)]
struct Raw {
    dtype: String,
    shape: Vec<u64>,
    data_offsets: (u64, u64),
}

/// One entry checked: known dtype, ordered offsets inside the data, and
/// a shape whose size is the byte range.
fn tensor(name: String, value: serde_json::Value, data_len: u64) -> Result<TensorInfo, Malformed> {
    let raw: Raw = match serde_json::from_value(value) {
        Ok(r) => r,
        Err(e) => {
            return Err(Malformed::BadEntry {
                name,
                why: e.to_string(),
            })
        }
    };
    let Some(dtype) = Dtype::parse(&raw.dtype) else {
        return Err(Malformed::UnknownDtype {
            name,
            dtype: raw.dtype,
        });
    };
    let (begin, end) = raw.data_offsets;
    if end < begin {
        return Err(Malformed::ReversedOffsets { name, begin, end });
    }
    let want = raw
        .shape
        .iter()
        .try_fold(1u64, |n, &d| n.checked_mul(d))
        .and_then(|n| dtype.bytes_of(n));
    if want != Some(end - begin) {
        return Err(Malformed::SizeMismatch {
            name,
            dtype: raw.dtype,
            shape: raw.shape,
            want: want.unwrap_or(0),
            got: end - begin,
        });
    }
    if end > data_len {
        return Err(Malformed::Truncated {
            name,
            end,
            data: data_len,
        });
    }
    Ok(TensorInfo {
        name,
        dtype,
        shape: raw.shape,
        begin,
        end,
    })
}

/// Tensors sorted by offset share no byte (empty ones share none).
fn check_overlaps(tensors: &[TensorInfo]) -> Result<(), Malformed> {
    let mut last: Option<&TensorInfo> = None;
    for t in tensors.iter().filter(|t| t.end > t.begin) {
        if let Some(p) = last {
            if t.begin < p.end {
                return Err(Malformed::Overlap {
                    a: p.name.clone(),
                    a0: p.begin,
                    a1: p.end,
                    b: t.name.clone(),
                    b0: t.begin,
                    b1: t.end,
                });
            }
        }
        if last.is_none_or(|p| t.end > p.end) {
            last = Some(t);
        }
    }
    Ok(())
}

/// The header's entries in order, duplicates kept (a map would keep only
/// the last of two entries of one name).
struct Entries(Vec<(String, serde_json::Value)>);

impl<'de> Deserialize<'de> for Entries {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Entries;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object of tensors")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Entries, A::Error> {
                let mut v = Vec::new();
                while let Some(e) = m.next_entry::<String, serde_json::Value>()? {
                    v.push(e);
                }
                Ok(Entries(v))
            }
        }
        d.deserialize_map(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str, data_len: u64) -> Result<Header, Malformed> {
        parse_json(json.as_bytes(), data_len)
    }

    #[test]
    fn a_good_header_gives_its_tensors_in_data_order() {
        let h = parse(
            r#"{"b":{"dtype":"BF16","shape":[2,3],"data_offsets":[16,28]},
                "__metadata__":{"format":"pt"},
                "a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},
                "s":{"dtype":"I64","shape":[],"data_offsets":[28,36]},
                "e":{"dtype":"U8","shape":[0],"data_offsets":[36,36]}}   "#,
            40,
        )
        .unwrap();
        let names: Vec<&str> = h.tensors.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "s", "e"]);
        assert_eq!(h.tensors[1].shape, [2, 3]);
        assert_eq!(h.tensors[1].dtype, Dtype::BF16);
        assert_eq!(h.metadata["format"], "pt");
        assert_eq!((h.extent(), h.data_len), (36, 40));
    }

    fn refused(json: &str, data_len: u64) -> String {
        parse(json, data_len).unwrap_err().to_string()
    }

    #[test]
    fn each_malformed_header_is_refused_with_its_reason() {
        let t = |body: &str| format!("{{\"t\":{body}}}");
        let cases: Vec<(String, &str)> = vec![
            ("{\"t\":".into(), "not valid JSON"),
            ("[1,2]".into(), "not a JSON object"),
            (t(r#"{"dtype":"F32","shape":[1]}"#), "missing field `data_offsets`"),
            (t(r#"{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}"#), "tensor \"t\""),
            (t(r#"{"dtype":"Q4","shape":[1],"data_offsets":[0,1]}"#), "unknown dtype \"Q4\""),
            (t(r#"{"dtype":"F32","shape":[1],"data_offsets":[8,4]}"#), "[8, 4] end before they begin"),
            (t(r#"{"dtype":"F32","shape":[2],"data_offsets":[0,4]}"#), "is 8 bytes, but its data_offsets hold 4"),
            (t(r#"{"dtype":"F4","shape":[3],"data_offsets":[0,2]}"#), "is 0 bytes"),
            (t(r#"{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,1]}"#), "is 0 bytes"),
            (t(r#"{"dtype":"F32","shape":[30],"data_offsets":[0,120]}"#), "ends at data byte 120, but the file holds only 100"),
            (r#"{"__metadata__":{"n":1}}"#.into(), "__metadata__ must map names to strings"),
            (r#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}"#.into(), "\"a\" appears twice"),
            (r#"{"a":{"dtype":"U8","shape":[10],"data_offsets":[0,10]},"b":{"dtype":"U8","shape":[2],"data_offsets":[20,22]},"c":{"dtype":"U8","shape":[4],"data_offsets":[8,12]}}"#.into(), "\"a\" (data bytes 0..10) and \"c\" (data bytes 8..12) overlap"),
        ];
        for (json, msg) in cases {
            let e = refused(&json, 100);
            assert!(e.contains(msg), "{json}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn a_tensor_inside_a_longer_one_is_an_overlap_and_empty_ones_overlap_nothing() {
        let e = refused(
            r#"{"big":{"dtype":"U8","shape":[100],"data_offsets":[0,100]},
                "mid":{"dtype":"U8","shape":[10],"data_offsets":[10,20]},
                "late":{"dtype":"U8","shape":[10],"data_offsets":[50,60]}}"#,
            100,
        );
        assert!(e.contains("\"big\"") && e.contains("overlap"), "{e}");
        let h = parse(
            r#"{"a":{"dtype":"U8","shape":[10],"data_offsets":[0,10]},
                "z":{"dtype":"U8","shape":[0],"data_offsets":[5,5]},
                "b":{"dtype":"U8","shape":[10],"data_offsets":[30,40]}}"#,
            40,
        )
        .unwrap();
        assert_eq!(h.tensors.len(), 3, "gaps and empty tensors are fine");
    }

    #[test]
    fn header_lengths_beyond_the_file_or_the_cap_are_refused() {
        let le = |n: u64| n.to_le_bytes();
        assert_eq!(header_len(&le(10), 18), Ok(10));
        let e = header_len(&le(11), 18).unwrap_err().to_string();
        assert!(
            e.contains("header length of 11 bytes passes the end of the file (18 bytes)"),
            "{e}"
        );
        let e = header_len(&le(MAX_HEADER + 1), u64::MAX)
            .unwrap_err()
            .to_string();
        assert!(e.contains("more than the 100000000"), "{e}");
        let e = header_len(&[1, 2, 3], 3).unwrap_err().to_string();
        assert!(e.contains("the file has 3 bytes"), "{e}");
        assert!(header_len(&le(u64::MAX), u64::MAX).is_err());
    }
}
