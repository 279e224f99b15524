//! Thin wrappers over the kernel: the only place (with engine internals)
//! where this workspace uses `unsafe`. Each wrapper is safe to call; the
//! reasoning for each `unsafe` block sits next to it.

pub mod ahead;
pub mod alloc;
pub mod fs;
pub mod guard;
pub mod hugebuf;
pub mod mman;
pub mod proc;
pub mod ring;
pub mod rusage;
pub mod signal;
pub mod simd;
