//! What writes carry, as fio's buffer options say: iolab's verifiable
//! pattern (each offset its own bytes), or fio's buffer contents (zeros,
//! a repeated pattern, data that compresses to a given share), written
//! fresh for every write (`refill_buffers`) or filled once per buffer and
//! reused (fio's default).

use iolab::pattern::Pattern;
use serde::{Deserialize, Serialize};

/// The bytes of a write buffer.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WriteContent {
    /// iolab's pattern: a pure function of (seed, offset), so the file
    /// stays verifiable.
    #[default]
    Pattern,
    /// All zeros (fio's `zero_buffers`).
    Zero,
    /// These bytes repeated (fio's `buffer_pattern`).
    Bytes(Vec<u8>),
    /// Pseudo-random data of which `pct` % of each `chunk` bytes are
    /// zeros (fio's `buffer_compress_percentage` and
    /// `buffer_compress_chunk`): it compresses to about 100 - pct %.
    Compressible {
        /// Share of each chunk that is zeros, %.
        pct: u8,
        /// Chunk length, bytes.
        chunk: u32,
    },
}

impl WriteContent {
    /// Fills `buf`, written at `off` of a file with pattern `p`.
    pub fn fill(&self, buf: &mut [u8], off: u64, p: Pattern) {
        match self {
            WriteContent::Pattern => p.fill(buf, off),
            WriteContent::Zero => buf.fill(0),
            WriteContent::Bytes(b) if !b.is_empty() => {
                for (i, x) in buf.iter_mut().enumerate() {
                    *x = b[i % b.len()];
                }
            }
            WriteContent::Bytes(_) => buf.fill(0),
            WriteContent::Compressible { pct, chunk } => {
                p.fill(buf, off);
                let chunk = (*chunk as usize).max(1);
                let zeros = chunk * *pct as usize / 100;
                for c in buf.chunks_mut(chunk) {
                    let n = zeros.min(c.len());
                    c[..n].fill(0);
                }
            }
        }
    }

    /// Whether a file written with it still holds iolab's pattern.
    pub fn keeps_pattern(&self) -> bool {
        *self == WriteContent::Pattern
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contents_fill_as_fio_describes_them() {
        let p = Pattern::new(3);
        let mut b = vec![1u8; 8192];
        WriteContent::Zero.fill(&mut b, 0, p);
        assert!(b.iter().all(|x| *x == 0));
        WriteContent::Bytes(vec![0xaa, 0x55]).fill(&mut b, 0, p);
        assert_eq!(&b[..4], &[0xaa, 0x55, 0xaa, 0x55]);
        WriteContent::Compressible {
            pct: 50,
            chunk: 4096,
        }
        .fill(&mut b, 0, p);
        assert!(b[..2048].iter().all(|x| *x == 0));
        assert!(b[2048..4096].iter().any(|x| *x != 0));
        assert!(b[4096..6144].iter().all(|x| *x == 0));
        WriteContent::Pattern.fill(&mut b, 4096, p);
        assert!(p.verify(&b, 4096).is_ok());
    }
}
