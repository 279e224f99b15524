//! Model checkpoints in the safetensors format, loaded at the machine's
//! limit: every header checked first (one clear error per malformed case),
//! then all tensor data read in large transfers into ONE allocation —
//! host memory ([`load`]) or, with the `cuda` feature, GPU memory
//! ([`load_to_device`]) — and handed out as [`TensorEntry`]s: name,
//! dtype, shape and byte range in that allocation. Sharded checkpoints
//! (`model.safetensors.index.json` and its `model-0000N-of-0000M` files)
//! are read in parallel into the same single allocation.
//!
//! ```
//! use iolab_reader::safetensors;
//! # let dir = tempfile::tempdir().unwrap();
//! # let path = dir.path().join("m.safetensors");
//! // A header of one F32 tensor of two elements, then its 8 bytes.
//! let json = br#"{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#;
//! let mut file = (json.len() as u64).to_le_bytes().to_vec();
//! file.extend_from_slice(json);
//! file.extend_from_slice(&[1, 0, 0, 0, 2, 0, 0, 0]);
//! std::fs::write(&path, &file).unwrap();
//!
//! let ck = safetensors::load(&path, &Default::default()).unwrap();
//! let w = &ck.tensors[0];
//! assert_eq!((w.name.as_str(), w.dtype.name(), w.shape.as_slice()), ("w", "F32", &[2u64][..]));
//! assert_eq!(ck.bytes(w), &[1, 0, 0, 0, 2, 0, 0, 0]);
//! ```

mod buffer;
mod checkpoint;
mod dtype;
mod error;
mod header;
mod index;

pub use buffer::{HostBuffer, HOST_ALIGN};
pub use checkpoint::{Checkpoint, Shard, TensorEntry, INDEX_NAME, SINGLE_NAME};
pub use dtype::Dtype;
pub use error::{FormatError, LoadError, Malformed, MAX_HEADER};
pub use header::{header_len, parse_json, read_header, Header, TensorInfo};
pub use index::{read_index, Index};

#[cfg(feature = "cuda")]
use crate::gpu;
use crate::gpu::{GpuOptions, Stats};
use std::collections::BTreeMap;
use std::path::Path;

/// A checkpoint in host memory: one owned, page-aligned allocation and the
/// tensors in it.
#[derive(Debug)]
pub struct HostCheckpoint {
    /// The allocation (keep it alive while any view of a tensor is used).
    pub buffer: HostBuffer,
    /// Every tensor, shard by shard in data order.
    pub tensors: Vec<TensorEntry>,
    /// The file's `__metadata__` (the first shard's when sharded).
    pub metadata: BTreeMap<String, String>,
    /// How the data was read.
    pub stats: Stats,
}

impl HostCheckpoint {
    /// A tensor's bytes.
    pub fn bytes(&self, t: &TensorEntry) -> &[u8] {
        &self.buffer.as_slice()[t.offset as usize..(t.offset + t.len) as usize]
    }

    /// The tensor of that name, if there is one.
    pub fn tensor(&self, name: &str) -> Option<&TensorEntry> {
        self.tensors.iter().find(|t| t.name == name)
    }
}

/// Loads the checkpoint at `path` (a `.safetensors` file, an index JSON,
/// or a directory holding either) into one host allocation. Cold data is
/// read with O_DIRECT straight into it, warm data by several threads out
/// of the page cache; shards are read in parallel.
pub fn load(path: &Path, opts: &GpuOptions) -> Result<HostCheckpoint, LoadError> {
    let ck = Checkpoint::open(path)?;
    ck.check_fits_host(path)?;
    let mut buffer = HostBuffer::zeroed(ck.size as usize);
    let stats = ck.read_into(buffer.as_mut_slice(), opts)?;
    Ok(HostCheckpoint {
        buffer,
        tensors: ck.tensors,
        metadata: ck.metadata,
        stats,
    })
}

/// A checkpoint in GPU memory: one device allocation (freed when this
/// goes) and the tensors in it; a tensor's device address is
/// `buffer.device_ptr() + entry.offset`.
#[cfg(feature = "cuda")]
#[derive(Debug)]
pub struct DeviceCheckpoint {
    /// The allocation.
    pub buffer: gpu::DeviceBuffer,
    /// Every tensor, shard by shard in data order.
    pub tensors: Vec<TensorEntry>,
    /// The file's `__metadata__` (the first shard's when sharded).
    pub metadata: BTreeMap<String, String>,
    /// How the data was moved.
    pub stats: Stats,
}

/// Loads the checkpoint at `path` into one allocation on GPU `device`
/// through the [`gpu`] pipeline. The headers are checked before the GPU
/// is touched.
#[cfg(feature = "cuda")]
pub fn load_to_device(
    path: &Path,
    device: usize,
    opts: &GpuOptions,
) -> Result<DeviceCheckpoint, LoadError> {
    let ck = Checkpoint::open(path)?;
    let (buffer, stats) = gpu::load_sources(&ck.sources(), device, opts)?;
    Ok(DeviceCheckpoint {
        buffer,
        tensors: ck.tensors,
        metadata: ck.metadata,
        stats,
    })
}
