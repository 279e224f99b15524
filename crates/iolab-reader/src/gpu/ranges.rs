//! What to move: byte ranges of files, each bound for an offset of the
//! destination; the checks they pass before anything is read, the pieces
//! (one read and one copy each) they are cut into, and the spans a stream
//! reads them in.

use super::error::GpuError;
use std::fs::File;
use std::path::{Path, PathBuf};

/// `len` bytes of a file from `offset`, bound for `at` in the destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range {
    /// File offset of the first byte.
    pub offset: u64,
    /// Bytes.
    pub len: u64,
    /// Destination offset of the first byte.
    pub at: u64,
}

/// A file and the ranges of it to move.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    /// The file.
    pub path: PathBuf,
    /// Its ranges; they may overlap in the file, never in the destination.
    pub ranges: Vec<Range>,
}

impl Source {
    /// All of `path`, to destination offset `at`.
    pub fn whole(path: &Path, at: u64) -> Result<Source, GpuError> {
        crate::check_kind(path)?;
        let len = iolab::file::length(path).map_err(|e| GpuError::layer(path, e))?;
        Ok(Source {
            path: path.to_path_buf(),
            ranges: vec![Range { offset: 0, len, at }],
        })
    }
}

/// A source checked and opened: its descriptor (buffered), its length,
/// its non-empty ranges sorted by file offset.
pub(crate) struct Opened {
    pub(crate) path: PathBuf,
    pub(crate) file: File,
    pub(crate) len: u64,
    pub(crate) ranges: Vec<Range>,
}

/// One read and one copy: `len` bytes of source `src` from `offset`, to `at`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Piece {
    pub(crate) src: usize,
    pub(crate) offset: u64,
    pub(crate) len: usize,
    pub(crate) at: u64,
}

/// Checks every range against its file and a destination of `cap` bytes
/// (inside both, no two overlapping in the destination) and opens the
/// files, before anything is read or allocated.
pub(crate) fn open_all(sources: &[Source], cap: u64) -> Result<Vec<Opened>, GpuError> {
    let mut opened = Vec::with_capacity(sources.len());
    for s in sources {
        crate::check_kind(&s.path)?;
        let file = File::open(&s.path).map_err(|e| crate::ReadError::Open {
            path: s.path.clone(),
            source: e,
        })?;
        let len = iolab::file::length(&s.path).map_err(|e| GpuError::layer(&s.path, e))?;
        let mut ranges = Vec::with_capacity(s.ranges.len());
        for r in &s.ranges {
            check_range(&s.path, r, len, cap)?;
            if r.len > 0 {
                ranges.push(*r);
            }
        }
        ranges.sort_by_key(|r| (r.offset, r.at));
        opened.push(Opened {
            path: s.path.clone(),
            file,
            len,
            ranges,
        });
    }
    check_disjoint(&opened)?;
    Ok(opened)
}

/// A range lies inside its file (of `len` bytes) and the destination.
fn check_range(path: &Path, r: &Range, len: u64, cap: u64) -> Result<(), GpuError> {
    let bad = |what: String| GpuError::BadRange {
        path: path.to_path_buf(),
        what,
    };
    match r.offset.checked_add(r.len) {
        Some(end) if end <= len => {}
        _ => {
            return Err(bad(format!(
                "the range of {} bytes at offset {} passes the end of the file ({len} bytes)",
                r.len, r.offset
            )))
        }
    }
    match r.at.checked_add(r.len) {
        Some(end) if end <= cap => Ok(()),
        _ => Err(bad(format!(
            "the range of {} bytes bound for destination offset {} passes the end of the destination ({cap} bytes)",
            r.len, r.at
        ))),
    }
}

/// No two ranges, of any files, write the same destination byte.
fn check_disjoint(opened: &[Opened]) -> Result<(), GpuError> {
    let mut all: Vec<(u64, u64, usize)> = opened
        .iter()
        .enumerate()
        .flat_map(|(i, o)| o.ranges.iter().map(move |r| (r.at, r.at + r.len, i)))
        .collect();
    all.sort_unstable();
    for w in all.windows(2) {
        let ((a0, a1, _), (b0, b1, i)) = (w[0], w[1]);
        if b0 < a1 {
            return Err(GpuError::BadRange {
                path: opened[i].path.clone(),
                what: format!(
                    "destination bytes {a0}..{a1} and {b0}..{b1} overlap: each destination byte can come from one range only"
                ),
            });
        }
    }
    Ok(())
}

/// Every range cut into pieces of at most `chunk` bytes, source by source,
/// in file order. The cuts fall on multiples of `chunk` in the file, not
/// of the range: a checkpoint's tensor data starts wherever its header
/// ends, and pieces that start off a page make every copy out of the page
/// cache start off a page too (measured slower by `iolab tune`'s
/// alignment probe); only a range's first piece is then shorter.
pub(crate) fn pieces(opened: &[Opened], chunk: usize) -> Vec<Piece> {
    let chunk = chunk.max(1) as u64;
    let mut out = Vec::new();
    for (src, o) in opened.iter().enumerate() {
        for r in &o.ranges {
            let mut done = 0u64;
            while done < r.len {
                let pos = r.offset + done;
                let to_cut = chunk - pos % chunk;
                let len = (r.len - done).min(to_cut) as usize;
                out.push(Piece {
                    src,
                    offset: r.offset + done,
                    len,
                    at: r.at + done,
                });
                done += len as u64;
            }
        }
    }
    out
}

/// Ranges closer than this in the file are read as one span: reading the
/// gap costs less than letting the queue drain and fill again.
pub(crate) const MERGE_GAP: u64 = 1 << 20;

/// The spans a stream reads `ranges` (sorted by offset) in: each starts on
/// a multiple of `unit`; ranges overlapping or within [`MERGE_GAP`] of
/// each other share one.
pub(crate) fn spans(ranges: &[Range], unit: u64) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    for r in ranges {
        let start = r.offset / unit * unit;
        let end = r.offset + r.len;
        match out.last_mut() {
            Some(last) if start <= last.1.saturating_add(MERGE_GAP) => last.1 = last.1.max(end),
            _ => out.push((start, end)),
        }
    }
    out
}

/// Finds the destination of the bytes a stream hands over: which ranges
/// (sorted by offset, possibly overlapping) cover a run of file bytes.
pub(crate) struct Router<'a> {
    ranges: &'a [Range],
    /// The largest range end up to each index.
    max_end: Vec<u64>,
}

impl<'a> Router<'a> {
    pub(crate) fn new(ranges: &'a [Range]) -> Self {
        let mut m = 0u64;
        let max_end = ranges
            .iter()
            .map(|r| {
                m = m.max(r.offset + r.len);
                m
            })
            .collect();
        Router { ranges, max_end }
    }

    /// Calls `f(start, len, at)` for each part of the `n` file bytes at
    /// `off` that a range wants: bytes `start..start+len` of the run go to
    /// destination offset `at`.
    pub(crate) fn each<E>(
        &self,
        off: u64,
        n: usize,
        mut f: impl FnMut(usize, usize, u64) -> Result<(), E>,
    ) -> Result<(), E> {
        let end = off + n as u64;
        let first = self.max_end.partition_point(|&e| e <= off);
        for r in &self.ranges[first..] {
            if r.offset >= end {
                break;
            }
            let lo = off.max(r.offset);
            let hi = end.min(r.offset + r.len);
            if lo < hi {
                f(
                    (lo - off) as usize,
                    (hi - lo) as usize,
                    r.at + (lo - r.offset),
                )?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(offset: u64, len: u64, at: u64) -> Range {
        Range { offset, len, at }
    }

    fn file(len: usize) -> (tempfile::TempDir, PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        std::fs::write(&p, vec![7u8; len]).unwrap();
        (d, p)
    }

    #[test]
    fn ranges_outside_the_file_or_the_destination_are_refused_by_name() {
        let (_d, p) = file(1000);
        let src = |ranges| Source {
            path: p.clone(),
            ranges,
        };
        assert!(open_all(&[src(vec![r(0, 1000, 0)])], 1000).is_ok());
        let e = open_all(&[src(vec![r(900, 101, 0)])], 4096)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("101 bytes at offset 900 passes the end of the file (1000 bytes)"),
            "{e}"
        );
        let e = open_all(&[src(vec![r(0, 10, 995)])], 1000)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("destination offset 995") && e.contains("(1000 bytes)"),
            "{e}"
        );
        let e = open_all(&[src(vec![r(u64::MAX, 2, 0)])], 1000)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("passes the end of the file"), "{e}");
    }

    #[test]
    fn two_ranges_writing_one_destination_byte_are_refused_across_files() {
        let (_d, p) = file(100);
        let a = Source {
            path: p.clone(),
            ranges: vec![r(0, 10, 0), r(0, 10, 10)],
        };
        assert!(open_all(std::slice::from_ref(&a), 20).is_ok());
        let b = Source {
            path: p.clone(),
            ranges: vec![r(50, 5, 19)],
        };
        let e = open_all(&[a, b], 100).err().unwrap().to_string();
        assert!(e.contains("10..20 and 19..24 overlap"), "{e}");
        // Empty ranges write nothing, so they overlap nothing.
        let c = Source {
            path: p,
            ranges: vec![r(0, 10, 0), r(3, 0, 5)],
        };
        assert_eq!(open_all(&[c], 10).unwrap()[0].ranges.len(), 1);
    }

    #[test]
    fn pieces_cover_each_range_in_chunks() {
        let (_d, p) = file(100);
        let o = open_all(
            &[Source {
                path: p,
                ranges: vec![r(10, 25, 0), r(0, 3, 40)],
            }],
            100,
        )
        .unwrap();
        let ps = pieces(&o, 10);
        let got: Vec<(u64, usize, u64)> = ps.iter().map(|p| (p.offset, p.len, p.at)).collect();
        assert_eq!(
            got,
            vec![(0, 3, 40), (10, 10, 0), (20, 10, 10), (30, 5, 20)]
        );
        // A range that starts off a multiple of the piece size: the first
        // piece ends on one, the others start on one.
        let ps = pieces(&o, 8);
        let got: Vec<(u64, usize, u64)> = ps.iter().map(|p| (p.offset, p.len, p.at)).collect();
        assert_eq!(
            got,
            vec![(0, 3, 40), (10, 6, 0), (16, 8, 6), (24, 8, 14), (32, 3, 22)]
        );
    }

    #[test]
    fn spans_start_aligned_and_merge_near_ranges() {
        let g = MERGE_GAP;
        let rs = [
            r(5000, 100, 0),
            r(5050, 10, 0),
            r(6000 + g, 1, 0),
            r(20 * g, 7, 0),
        ];
        assert_eq!(
            spans(&rs, 4096),
            vec![(4096, 6001 + g), (20 * g, 20 * g + 7)]
        );
    }

    #[test]
    fn the_router_finds_every_range_a_run_touches() {
        // Overlapping ranges in the file: bytes 0..100 to 1000, 50..60 to 0.
        let rs = [r(0, 100, 1000), r(50, 10, 0), r(200, 10, 500)];
        let rt = Router::new(&rs);
        let mut got = Vec::new();
        rt.each::<()>(40, 30, |s, n, at| {
            got.push((s, n, at));
            Ok(())
        })
        .unwrap();
        assert_eq!(got, vec![(0, 30, 1040), (10, 10, 0)]);
        got.clear();
        rt.each::<()>(100, 100, |s, n, at| {
            got.push((s, n, at));
            Ok(())
        })
        .unwrap();
        assert!(got.is_empty(), "{got:?}");
        rt.each::<()>(205, 100, |s, n, at| {
            got.push((s, n, at));
            Ok(())
        })
        .unwrap();
        assert_eq!(got, vec![(0, 5, 505)]);
    }
}
