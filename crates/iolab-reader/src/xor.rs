//! The XOR of a file's little-endian 4-byte words, read with
//! [`crate::whole::read_whole`] (XOR is order-free, so chunks can complete
//! in any order).

use crate::whole::{read_whole, WholeStats};
use iolab::error::Result;
use std::path::Path;

/// XOR of the 4-byte little-endian words of `bytes`, which start at a file
/// offset that is a multiple of 4; a trailing partial word is zero-padded.
pub fn xor32(bytes: &[u8]) -> u32 {
    // Four independent u64 lanes let the compiler vectorise the fold.
    let mut lanes = [0u64; 4];
    let mut big = bytes.chunks_exact(32);
    for c in &mut big {
        for (k, lane) in lanes.iter_mut().enumerate() {
            *lane ^= u64::from_le_bytes(c[k * 8..k * 8 + 8].try_into().expect("8 bytes"));
        }
    }
    let acc = lanes[0] ^ lanes[1] ^ lanes[2] ^ lanes[3];
    let mut x = (acc as u32) ^ ((acc >> 32) as u32);
    for c in big.remainder().chunks(4) {
        let mut w = [0u8; 4];
        w[..c.len()].copy_from_slice(c);
        x ^= u32::from_le_bytes(w);
    }
    x
}

/// XOR of the whole file at `path`, and how it was read.
pub fn xor_file(path: &Path) -> Result<(u32, WholeStats)> {
    let mut x = 0u32;
    let stats = read_whole(path, &mut |_off, b| x ^= xor32(b))?;
    Ok((x, stats))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(b: &[u8]) -> u32 {
        b.chunks(4).fold(0, |x, c| {
            let mut w = [0u8; 4];
            w[..c.len()].copy_from_slice(c);
            x ^ u32::from_le_bytes(w)
        })
    }

    #[test]
    fn xor32_matches_plain_fold_at_odd_lengths() {
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 7 + 3) as u8).collect();
        for n in [0, 1, 3, 4, 31, 32, 33, 999, 1000] {
            assert_eq!(xor32(&data[..n]), plain(&data[..n]), "n {n}");
        }
    }

    #[test]
    fn xor_file_of_odd_sized_file() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("x");
        let data: Vec<u8> = (0..(3 << 20) + 13)
            .map(|i: u32| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect();
        std::fs::write(&p, &data).unwrap();
        let (x, st) = xor_file(&p).unwrap();
        assert_eq!(st.bytes, data.len() as u64);
        assert_eq!(x, plain(&data));
    }
}
