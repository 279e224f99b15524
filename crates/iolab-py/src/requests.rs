//! The requests of `Reader.read_many`: a sequence of `(offset, length)`
//! pairs, or an integer array of shape (N, 2) such as NumPy's (read
//! through the buffer protocol, so NumPy is never needed).

use crate::errors::value_error;
use pyo3::buffer::PyBuffer;
use pyo3::prelude::*;

/// One request: `len` bytes at `offset`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Req {
    pub(crate) offset: u64,
    pub(crate) len: usize,
}

/// Reads the requests from `obj`, or says what is wrong with them
/// (`ValueError` naming the request, `TypeError` for something that is not
/// pairs of integers).
pub(crate) fn parse(obj: &Bound<'_, PyAny>) -> PyResult<Vec<Req>> {
    if let Some(pairs) = from_array(obj)? {
        return check(pairs);
    }
    let mut pairs = Vec::new();
    for (i, item) in obj.try_iter()?.enumerate() {
        let (o, n): (i64, i64) = item?.extract().map_err(|_| {
            pyo3::exceptions::PyTypeError::new_err(format!(
                "request {i} must be a pair of integers (offset, length)"
            ))
        })?;
        pairs.push((o, n));
    }
    check(pairs)
}

/// The pairs of an (N, 2) integer array, if `obj` is one.
fn from_array(obj: &Bound<'_, PyAny>) -> PyResult<Option<Vec<(i64, i64)>>> {
    let py = obj.py();
    macro_rules! try_as {
        ($t:ty) => {
            if let Ok(b) = PyBuffer::<$t>::get(obj) {
                if b.dimensions() != 2 || b.shape()[1] != 2 {
                    return Err(value_error(format!(
                        "requests as an array must have shape (N, 2), not {:?}",
                        b.shape()
                    )));
                }
                let v = b.to_vec(py)?;
                let mut out = Vec::with_capacity(v.len() / 2);
                for p in v.chunks_exact(2) {
                    let conv = |x: $t| {
                        i64::try_from(x)
                            .map_err(|_| value_error(format!("request value {x} is too large")))
                    };
                    out.push((conv(p[0])?, conv(p[1])?));
                }
                return Ok(Some(out));
            }
        };
    }
    try_as!(i64);
    try_as!(u64);
    try_as!(i32);
    try_as!(u32);
    Ok(None)
}

fn check(pairs: Vec<(i64, i64)>) -> PyResult<Vec<Req>> {
    pairs
        .into_iter()
        .enumerate()
        .map(|(i, (o, n))| {
            if o < 0 || n < 0 {
                return Err(value_error(format!(
                    "request {i}: offset {o}, length {n}: both must be 0 or more"
                )));
            }
            let len = usize::try_from(n)
                .map_err(|_| value_error(format!("request {i}: length {n} is too large")))?;
            Ok(Req {
                offset: o as u64,
                len,
            })
        })
        .collect()
}
