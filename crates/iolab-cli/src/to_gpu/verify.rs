//! `cat --gpu --verify`: what reached the GPU copied back and compared
//! with the files, range by range: windows of each range (its start, its
//! end and evenly between) or all of it, in pieces of at most 64 MiB so
//! host memory stays small whatever the file.

use super::args::VerifyWhat;
use super::sources::Loaded;
use anyhow::{Context, Result};
use std::os::unix::fs::FileExt;

/// Bytes per sampled window.
const WINDOW: u64 = 64 << 10;
/// Windows per range when sampling.
const WINDOWS: u64 = 16;
/// Bytes compared at once when checking everything.
const PIECE: u64 = 64 << 20;

/// What a verification compared.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub(super) struct Checked {
    /// Samples or all.
    pub(super) what: VerifyWhat,
    /// Windows compared.
    pub(super) windows: u64,
    /// Bytes compared.
    pub(super) bytes: u64,
}

/// The windows (offset, length) of a range of `len` bytes to compare:
/// all of it in pieces, or up to [`WINDOWS`] windows of [`WINDOW`] bytes
/// that include its first and last bytes.
pub(super) fn windows(len: u64, how: VerifyWhat) -> Vec<(u64, u64)> {
    let piece = match how {
        VerifyWhat::All => PIECE,
        VerifyWhat::Samples if len <= WINDOW * WINDOWS => PIECE,
        VerifyWhat::Samples => {
            let last = len - WINDOW;
            return (0..WINDOWS)
                .map(|i| (last * i / (WINDOWS - 1), WINDOW))
                .collect();
        }
    };
    (0..len.div_ceil(piece))
        .map(|i| (i * piece, piece.min(len - i * piece)))
        .collect()
}

/// Compares the loaded bytes with the files; a difference is an error
/// (exit status 1) naming the GPU byte and the file byte.
pub(super) fn check(l: &Loaded, how: VerifyWhat) -> Result<Checked> {
    let mut c = Checked {
        what: how,
        windows: 0,
        bytes: 0,
    };
    let mut file_bytes = Vec::new();
    let mut gpu_bytes = Vec::new();
    for s in &l.sources {
        let f = std::fs::File::open(&s.path)
            .with_context(|| format!("verify: open {}", s.path.display()))?;
        for r in &s.ranges {
            for (off, len) in windows(r.len, how) {
                file_bytes.resize(len as usize, 0);
                gpu_bytes.resize(len as usize, 0);
                f.read_exact_at(&mut file_bytes, r.offset + off)
                    .with_context(|| {
                        format!("verify: read {} at {}", s.path.display(), r.offset + off)
                    })?;
                l.buffer
                    .copy_to_host(r.at + off, &mut gpu_bytes)
                    .context("verify: copy back from the GPU")?;
                if let Some(i) = file_bytes.iter().zip(&gpu_bytes).position(|(a, b)| a != b) {
                    anyhow::bail!(
                        "verify failed: GPU {} byte {} is {:#04x}, but {} has {:#04x} at offset {}",
                        l.gpu,
                        r.at + off + i as u64,
                        gpu_bytes[i],
                        s.path.display(),
                        file_bytes[i],
                        r.offset + off + i as u64
                    );
                }
                c.windows += 1;
                c.bytes += len;
            }
        }
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_cover_both_ends_and_all_covers_every_byte_once() {
        let len = 10 << 20;
        let w = windows(len, VerifyWhat::Samples);
        assert_eq!(w.len() as u64, WINDOWS);
        assert_eq!(w[0], (0, WINDOW));
        assert_eq!(*w.last().unwrap(), (len - WINDOW, WINDOW));
        assert!(w.windows(2).all(|p| p[0].0 + p[0].1 <= p[1].0));
        for len in [0, 1, WINDOW * WINDOWS, (200 << 20) + 3] {
            let all = windows(len, VerifyWhat::All);
            assert_eq!(all.iter().map(|w| w.1).sum::<u64>(), len);
            assert!(all.windows(2).all(|p| p[0].0 + p[0].1 == p[1].0));
        }
        // A small range is compared whole even when sampling.
        assert_eq!(windows(1000, VerifyWhat::Samples), vec![(0, 1000)]);
    }
}
