//! What can be wrong with a checkpoint, each a single line naming the file
//! and, where there is one, the tensor.

use std::path::PathBuf;

/// The most bytes a header may have (the reference implementation's cap):
/// a larger length is not a safetensors file.
pub const MAX_HEADER: u64 = 100_000_000;

/// What is wrong with a safetensors file or a sharded checkpoint's index.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Malformed {
    /// Fewer bytes than the header length needs.
    #[error("the file has {len} bytes; a safetensors file starts with an 8-byte header length")]
    TooShort {
        /// File length.
        len: u64,
    },
    /// A header length no safetensors file has.
    #[error("its header length is {n} bytes, more than the {MAX_HEADER} a safetensors header may have (not a safetensors file?)")]
    HeaderTooLarge {
        /// The length read.
        n: u64,
    },
    /// The header runs past the end of the file.
    #[error("its header length of {n} bytes passes the end of the file ({len} bytes): the file is truncated or not a safetensors file")]
    HeaderBeyondFile {
        /// The length read.
        n: u64,
        /// File length.
        len: u64,
    },
    /// The header is not JSON.
    #[error("the header is not valid JSON: {0}")]
    Json(String),
    /// The header is JSON but not an object.
    #[error("the header is not a JSON object of tensors")]
    NotAnObject,
    /// A tensor entry lacks a field or has one of the wrong type.
    #[error("tensor {name:?}: {why} (an entry needs dtype, shape and data_offsets)")]
    BadEntry {
        /// The tensor.
        name: String,
        /// What is wrong.
        why: String,
    },
    /// `__metadata__` is not a map of strings.
    #[error("__metadata__ must map names to strings: {0}")]
    BadMetadata(String),
    /// A tensor name appears twice.
    #[error("tensor {0:?} appears twice")]
    Duplicate(String),
    /// An element type safetensors does not define.
    #[error(
        "tensor {name:?} has unknown dtype {dtype:?} (known: {})",
        super::Dtype::known()
    )]
    UnknownDtype {
        /// The tensor.
        name: String,
        /// The type named.
        dtype: String,
    },
    /// Offsets that end before they begin.
    #[error("tensor {name:?}: data_offsets [{begin}, {end}] end before they begin")]
    ReversedOffsets {
        /// The tensor.
        name: String,
        /// First byte.
        begin: u64,
        /// End.
        end: u64,
    },
    /// Shape × dtype is not the byte range.
    #[error("tensor {name:?}: shape {shape:?} of {dtype} is {want} bytes, but its data_offsets hold {got}")]
    SizeMismatch {
        /// The tensor.
        name: String,
        /// Its element type.
        dtype: String,
        /// Its shape.
        shape: Vec<u64>,
        /// Bytes the shape needs (0 when it overflows or splits a byte).
        want: u64,
        /// Bytes its offsets hold.
        got: u64,
    },
    /// Two tensors share bytes.
    #[error("tensors {a:?} (data bytes {a0}..{a1}) and {b:?} (data bytes {b0}..{b1}) overlap")]
    Overlap {
        /// One tensor.
        a: String,
        /// Its first byte.
        a0: u64,
        /// Its end.
        a1: u64,
        /// The other.
        b: String,
        /// Its first byte.
        b0: u64,
        /// Its end.
        b1: u64,
    },
    /// A tensor's bytes run past the end of the file.
    #[error("tensor {name:?} ends at data byte {end}, but the file holds only {data} bytes of data after its header: the file is truncated")]
    Truncated {
        /// The tensor.
        name: String,
        /// Its end.
        end: u64,
        /// Data bytes in the file.
        data: u64,
    },
    /// The index of a sharded checkpoint is not what transformers writes.
    #[error("not a checkpoint index: {0} (expected {{\"weight_map\": {{tensor: shard file}}}})")]
    BadIndex(String),
    /// The index names a shard outside its directory.
    #[error("the index names shard {0:?}, which is not a file name in the index's directory")]
    ShardName(String),
    /// The index puts a tensor in a shard that lacks it.
    #[error("the index puts tensor {name:?} in {shard}, which has no such tensor")]
    NotInShard {
        /// The tensor.
        name: String,
        /// The shard file.
        shard: String,
    },
    /// Two shards hold a tensor of the same name.
    #[error("tensor {name:?} is in both {a} and {b}")]
    InTwoShards {
        /// The tensor.
        name: String,
        /// One shard.
        a: String,
        /// The other.
        b: String,
    },
}

/// A checkpoint file that is not well-formed, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {kind}", path.display())]
pub struct FormatError {
    /// The file (the shard, or the index).
    pub path: PathBuf,
    /// What is wrong.
    pub kind: Malformed,
}

/// What can go wrong loading a checkpoint.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file or index is malformed.
    #[error(transparent)]
    Format(#[from] FormatError),
    /// Reading it failed.
    #[error(transparent)]
    Read(#[from] crate::ReadError),
    /// Moving it to its destination failed (or the GPU is unusable).
    #[error(transparent)]
    Gpu(#[from] crate::gpu::GpuError),
    /// The host allocation would not fit in memory.
    #[error(
        "{path}: {bytes} bytes of tensor data do not fit in this machine's memory ({total} bytes)"
    )]
    TooLarge {
        /// The checkpoint.
        path: PathBuf,
        /// Bytes to hold.
        bytes: u64,
        /// The machine's memory.
        total: u64,
    },
}

impl Malformed {
    /// This problem in file `path`.
    pub(crate) fn at(self, path: &std::path::Path) -> FormatError {
        FormatError {
            path: path.to_path_buf(),
            kind: self,
        }
    }
}
