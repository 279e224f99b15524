//! A checkpoint (one safetensors file, or the shards an index names)
//! checked and laid out in one allocation: each shard's data keeps its
//! offset within a page as in the file, so the reads can go straight into
//! the allocation with O_DIRECT, and each shard starts on a page.

use super::dtype::Dtype;
use super::error::{LoadError, Malformed};
use super::header::{read_header, Header};
use super::index::read_index;
use crate::gpu::{self, GpuOptions, Range, Source, Stats};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// Shards start on multiples of this in the allocation, and each keeps its
/// data's offset within it from the file.
const PAGE: u64 = 4096;

/// The index file a directory may hold.
pub const INDEX_NAME: &str = "model.safetensors.index.json";
/// The single file a directory may hold.
pub const SINGLE_NAME: &str = "model.safetensors";

/// One tensor in the allocation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorEntry {
    /// Its name.
    pub name: String,
    /// Element type.
    pub dtype: Dtype,
    /// Dimensions.
    pub shape: Vec<u64>,
    /// Offset of its first byte in the allocation.
    pub offset: u64,
    /// Bytes.
    pub len: u64,
    /// The shard it came from (position in [`Checkpoint::shards`]).
    pub shard: usize,
}

/// One file of the checkpoint and where its data goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shard {
    /// The file.
    pub path: PathBuf,
    /// Its checked header.
    pub header: Header,
    /// The file bytes read: from this offset (the data's start rounded down
    /// to a page) ...
    pub read_from: u64,
    /// ... this many (through the last tensor's end, rounded up to a page
    /// unless the file ends first; 0 when it has no tensor data) ...
    pub read_len: u64,
    /// ... to this offset of the allocation.
    pub at: u64,
}

/// A checked checkpoint and its layout in one allocation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    /// The files, in order.
    pub shards: Vec<Shard>,
    /// Every tensor, shard by shard in data order.
    pub tensors: Vec<TensorEntry>,
    /// The `__metadata__` of the file (of the first shard when sharded).
    pub metadata: BTreeMap<String, String>,
    /// Bytes the allocation needs.
    pub size: u64,
}

impl Checkpoint {
    /// Reads and checks the headers of `path`: a `.safetensors` file, an
    /// index (`*.json`), or a directory holding [`INDEX_NAME`] or
    /// [`SINGLE_NAME`]. No tensor data is read.
    pub fn open(path: &Path) -> Result<Checkpoint, LoadError> {
        let (files, map) = files_of(path)?;
        let headers = read_headers(&files)?;
        if let Some((index, map)) = &map {
            check_index(index, &files, &headers, map)?;
        }
        Ok(layout(files, headers))
    }

    /// The byte ranges to read, one per shard with tensor data.
    pub fn sources(&self) -> Vec<Source> {
        self.shards
            .iter()
            .filter(|s| s.read_len > 0)
            .map(|s| Source {
                path: s.path.clone(),
                ranges: vec![Range {
                    offset: s.read_from,
                    len: s.read_len,
                    at: s.at,
                }],
            })
            .collect()
    }

    /// Refuses a checkpoint (opened from `path`) whose tensor data would
    /// not fit in this machine's memory, before anything is allocated.
    pub fn check_fits_host(&self, path: &Path) -> Result<(), LoadError> {
        let total = crate::profile::Machine::this().mem_bytes;
        if total > 0 && self.size > total {
            return Err(LoadError::TooLarge {
                path: path.to_path_buf(),
                bytes: self.size,
                total,
            });
        }
        Ok(())
    }

    /// Reads every shard's tensor data into `buf` (at least
    /// [`size`](Self::size) bytes; from a page boundary, so cold data goes
    /// in with O_DIRECT), where [`tensors`](Self::tensors) say it is: for
    /// a caller that owns the memory (a Python buffer, say).
    pub fn read_into(&self, buf: &mut [u8], opts: &GpuOptions) -> Result<Stats, LoadError> {
        Ok(gpu::fill_host(buf, &self.sources(), opts)?)
    }
}

/// An index and its weight map (tensor → shard position), when sharded.
type IndexMap = (PathBuf, BTreeMap<String, usize>);

/// The files to read and, for an index, its map.
fn files_of(path: &Path) -> Result<(Vec<PathBuf>, Option<IndexMap>), LoadError> {
    let path = if path.is_dir() {
        let index = path.join(INDEX_NAME);
        if index.exists() {
            index
        } else {
            path.join(SINGLE_NAME)
        }
    } else {
        path.to_path_buf()
    };
    if path.extension().is_some_and(|e| e == "json") {
        let i = read_index(&path)?;
        return Ok((i.shards, Some((path, i.weight_map))));
    }
    Ok((vec![path], None))
}

/// Every header, read by up to 16 threads at once (a cold shard's header
/// costs a disk access).
fn read_headers(files: &[PathBuf]) -> Result<Vec<Header>, LoadError> {
    let mut out: Vec<Option<Result<Header, LoadError>>> = (0..files.len()).map(|_| None).collect();
    for (chunk, slots) in files.chunks(16).zip(out.chunks_mut(16)) {
        std::thread::scope(|s| {
            for (f, slot) in chunk.iter().zip(slots.iter_mut()) {
                s.spawn(move || *slot = Some(read_header(f)));
            }
        });
    }
    out.into_iter()
        .map(|h| h.expect("every header was read"))
        .collect()
}

/// The index agrees with the shards: each tensor it names is in the shard
/// it names, and no name is in two shards.
fn check_index(
    index: &Path,
    files: &[PathBuf],
    headers: &[Header],
    map: &BTreeMap<String, usize>,
) -> Result<(), LoadError> {
    let name = |i: usize| {
        files[i]
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned()
    };
    let mut found: HashMap<&str, usize> = HashMap::new();
    for (i, h) in headers.iter().enumerate() {
        for t in &h.tensors {
            if let Some(j) = found.insert(&t.name, i) {
                return Err(Malformed::InTwoShards {
                    name: t.name.clone(),
                    a: name(j),
                    b: name(i),
                }
                .at(index)
                .into());
            }
        }
    }
    for (t, &i) in map {
        if found.get(t.as_str()) != Some(&i) {
            return Err(Malformed::NotInShard {
                name: t.clone(),
                shard: name(i),
            }
            .at(index)
            .into());
        }
    }
    Ok(())
}

/// Places each shard's data in the allocation, page after page.
fn layout(files: Vec<PathBuf>, headers: Vec<Header>) -> Checkpoint {
    let mut at = 0u64;
    let mut shards = Vec::with_capacity(files.len());
    let mut tensors = Vec::new();
    let metadata = headers
        .first()
        .map(|h| h.metadata.clone())
        .unwrap_or_default();
    for (i, (path, header)) in files.into_iter().zip(headers).enumerate() {
        let read_from = header.data_start / PAGE * PAGE;
        let pad = header.data_start - read_from;
        let extent = header.extent();
        let room = if extent == 0 {
            0
        } else {
            (pad + extent).div_ceil(PAGE) * PAGE
        };
        let file_len = header.data_start + header.data_len;
        let read_len = room.min(file_len - read_from);
        for t in &header.tensors {
            tensors.push(TensorEntry {
                name: t.name.clone(),
                dtype: t.dtype,
                shape: t.shape.clone(),
                // An empty tensor of a shard without data points at the
                // shard's start, never past the allocation.
                offset: (at + pad + t.begin).min(at + room),
                len: t.end - t.begin,
                shard: i,
            });
        }
        shards.push(Shard {
            path,
            header,
            read_from,
            read_len,
            at,
        });
        at += room;
    }
    Checkpoint {
        shards,
        tensors,
        metadata,
        size: at,
    }
}
