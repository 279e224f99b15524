//! No code: this crate holds one integration test, `tests/python.rs`, which
//! builds the Python package `iolab` (crates/iolab-py and python/) into the
//! virtual environment `scripts/setup.sh` makes at `.venv-py`, and runs its
//! pytest suite (python/tests), so `cargo test --workspace` stays the whole
//! test suite.
