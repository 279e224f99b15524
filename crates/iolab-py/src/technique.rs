//! Technique names as the `iolab` command spells them, plus `pread`, the
//! name Python users know for one `pread` per request (the reader's
//! `stream`).

use crate::errors::value_error;
use iolab_reader::Technique;
use pyo3::PyErr;

/// Parses `name` (`auto`, `pread`, `stream`, `buffered[:4m]`, `mapped`,
/// `direct`, `uring[:32]`, `thesis`), or says which names there are.
pub(crate) fn parse(name: &str) -> Result<Technique, PyErr> {
    if name.trim().eq_ignore_ascii_case("pread") {
        return Ok(Technique::Stream);
    }
    name.parse::<Technique>()
        .map_err(|e| value_error(format!("{e}; pread is another name for stream")))
}
