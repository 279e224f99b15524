//! # iolab's Python package, its native module `iolab._native`
//!
//! The reading library ([`iolab_reader`]) for Python: whole files
//! (`iolab.read`, `iolab.read_into`), a `Reader` for reads at offsets and
//! batches of them, the profile and the tuner, and safetensors checkpoints
//! loaded into host or GPU memory and handed out through DLPack. Every read releases the
//! GIL; bytes land in the caller's buffer, or in memory this module
//! allocates and lends to Python through the buffer protocol, without a
//! copy. Errors are Python's `OSError` family and `ValueError`; the
//! reader's warnings go through Python's `warnings`; a Rust panic becomes
//! a Python exception (`pyo3_runtime.PanicException`).
//!
//! The Python side (`python/iolab/`) re-exports what is here, with type
//! stubs; its tests are run by the `iolab-py-tests` crate.

mod buffer;
mod dlpack;
mod errors;
mod profile;
mod reader;
mod requests;
mod safetensors;
mod technique;
mod tuning;
mod warn;
mod whole;

use pyo3::prelude::*;

/// Panics, with the GIL held or (`detached`) released, so a test can show
/// that a panic becomes a Python exception and the process goes on.
#[pyfunction]
#[pyo3(signature = (detached = false))]
fn _panic_for_test(py: Python<'_>, detached: bool) {
    if detached {
        py.detach(|| panic!("iolab: a panic on purpose, with the GIL released"));
    }
    panic!("iolab: a panic on purpose, with the GIL held");
}

/// The native half of the `iolab` package: fast file reads for Python.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    warn::install();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(whole::read, m)?)?;
    m.add_function(wrap_pyfunction!(whole::read_into, m)?)?;
    m.add_function(wrap_pyfunction!(tuning::tune, m)?)?;
    m.add_function(wrap_pyfunction!(tuning::profile, m)?)?;
    m.add_function(wrap_pyfunction!(_panic_for_test, m)?)?;
    m.add_function(wrap_pyfunction!(safetensors::_load_safetensors, m)?)?;
    m.add_function(wrap_pyfunction!(safetensors::_free_staging, m)?)?;
    m.add_class::<safetensors::Tensor>()?;
    m.add_class::<safetensors::DeviceMemory>()?;
    m.add_class::<reader::Reader>()?;
    m.add_class::<buffer::Buffer>()?;
    m.add("ProfileWarning", m.py().get_type::<warn::ProfileWarning>())?;
    Ok(())
}
