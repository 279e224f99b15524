//! Feature switch, not code: depending on `iolab-bench` with `mpi` makes every
//! workspace-wide build (`cargo test --workspace`, which CI runs) build the
//! `iolab` binary with MPI support, while `cargo run --release`, which builds
//! only the default member, stays MPI-free. The MPI tests themselves live in
//! `crates/iolab-cli/tests/mpi.rs`, next to the binary they start.
