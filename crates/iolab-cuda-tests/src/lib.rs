//! Feature switch, not code: depending on `iolab-reader` with `cuda` makes
//! every workspace-wide build (`cargo test --workspace`, which CI runs)
//! build the GPU destination, whose driver is loaded at run time, so it
//! builds and its host-side checks run without CUDA. The checks live in
//! `tests/gpu.rs`; those that need a GPU are `#[ignore]`d with the reason
//! and run by `scripts/gpu-tests.sh` on a GPU machine.
