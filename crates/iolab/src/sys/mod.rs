//! Thin wrappers over the kernel: the only place (with engine internals)
//! where this workspace uses `unsafe`. Each wrapper is safe to call; the
//! reasoning for each `unsafe` block sits next to it.

pub(crate) mod ahead;
pub(crate) mod alloc;
pub(crate) mod fs;
pub(crate) mod guard;
pub(crate) mod hugebuf;
pub(crate) mod mman;
pub(crate) mod proc;
pub(crate) mod ring;
pub(crate) mod rusage;
pub(crate) mod signal;
pub(crate) mod simd;
