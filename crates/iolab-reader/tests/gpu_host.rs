//! The file → staging → destination pipeline with host memory as the
//! destination, on real files: every technique delivers exactly the file's
//! bytes (odd sizes, empty files, many pieces, byte-range lists, several
//! files), cold and warm, with copies that end late as a device's may; the
//! policy picks the ring for cold data and threads for warm; bad ranges
//! and a failing destination give one clear error and leave no lane behind.

use iolab::testing::file;
use iolab_reader::gpu::{
    transfer, CopyNow, GpuError, GpuOptions, GpuTechnique, HostLane, HostTarget, Lane, Range,
    Source, Stats, Target,
};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

/// A directory on a real file system (O_DIRECT and eviction work there).
fn dir() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

/// Small pieces so small files still take many of them.
fn opts(t: Option<GpuTechnique>) -> GpuOptions {
    GpuOptions {
        technique: t,
        chunk: 64 << 10,
        depth: 4,
        threads: 3,
        slots: 2,
        pinned: true,
        direct: true,
    }
}

fn whole(p: &Path) -> Vec<Source> {
    vec![Source::whole(p, 0).unwrap()]
}

/// `p`, `n` bytes long, read whole into host memory as the policy
/// chooses, its copies ending late as a device's may: what the transfer
/// says and the bytes that arrived.
fn whole_late(p: &Path, n: usize) -> (Stats, Vec<u8>) {
    let mut out = vec![0u8; n];
    let target = HostTarget::with_late_copies(&mut out);
    let st = transfer(&target, &whole(p), &opts(None)).unwrap();
    drop(target);
    (st, out)
}

#[test]
fn every_technique_delivers_the_file_whatever_its_size() {
    let d = dir();
    let sizes = [0, 1, 4095, 4096, 4097, 64 << 10, (3 << 20) + 12345];
    for (k, &n) in sizes.iter().enumerate() {
        let (p, v) = file(d.path(), &format!("f{k}"), n, k as u64);
        for t in [None, Some(GpuTechnique::Ring), Some(GpuTechnique::Threads)] {
            for late in [false, true] {
                let mut out = vec![0xAAu8; n];
                let target = if late {
                    HostTarget::with_late_copies(&mut out)
                } else {
                    HostTarget::new(&mut out)
                };
                let st = transfer(&target, &whole(&p), &opts(t))
                    .unwrap_or_else(|e| panic!("{n} bytes, {t:?}: {e}"));
                drop(target);
                assert_eq!(st.bytes, n as u64, "{n} bytes, {t:?}");
                assert!(out == v, "{n} bytes, {t:?}, late {late}: bytes differ");
                if let Some(t) = t {
                    assert_eq!(st.technique, t);
                }
                assert!(!st.pinned, "host staging is never page-locked");
            }
        }
    }
}

#[test]
fn cold_data_goes_through_the_ring_with_o_direct_and_warm_through_threads() {
    let d = dir();
    let n = (2 << 20) + 777;
    let (p, v) = file(d.path(), "f", n, 9);
    iolab::cache::evict(&p).unwrap();
    let cold = iolab::cache::residency(&p, n as u64).unwrap().fraction();
    iolab::require!(cold < 0.5, "the page cache kept the file after eviction");
    let (st, out) = whole_late(&p, n);
    assert_eq!(st.technique, GpuTechnique::Ring);
    let direct_ok = direct_works(&p);
    assert_eq!(st.direct, direct_ok, "cold reads bypass the page cache");
    assert_eq!((st.depth, st.chunk), (4, 64 << 10));
    assert!(out == v, "cold: bytes differ");
    iolab::cache::warm(&p, n as u64).unwrap();
    let (st, out) = whole_late(&p, n);
    assert_eq!(st.technique, GpuTechnique::Threads);
    assert!(!st.direct);
    assert_eq!((st.depth, st.threads), (2, 3));
    assert!(out == v, "warm: bytes differ");
    // O_DIRECT turned off: a cold file still arrives, through the page cache.
    iolab::cache::evict(&p).unwrap();
    let mut out = vec![0u8; n];
    let o = GpuOptions {
        direct: false,
        ..opts(Some(GpuTechnique::Ring))
    };
    let st = transfer(&HostTarget::new(&mut out), &whole(&p), &o).unwrap();
    assert!(!st.direct);
    assert!(out == v, "buffered ring: bytes differ");
}

#[test]
// Long on purpose: the ranges, the bytes they must give, and each technique.
fn byte_range_lists_from_several_files_land_where_asked() {
    let d = dir();
    let (a, va) = file(d.path(), "a", (1 << 20) + 5, 1);
    let (b, vb) = file(d.path(), "b", 300_001, 2);
    // Out of order, overlapping in the file, unaligned, one across many
    // pieces, one empty, gaps in the destination left alone.
    let ra = vec![
        Range {
            offset: 700_000,
            len: 348_581,
            at: 10,
        },
        Range {
            offset: 3,
            len: 5000,
            at: 400_000,
        },
        Range {
            offset: 1000,
            len: 100,
            at: 405_000,
        },
        Range {
            offset: 99,
            len: 0,
            at: 0,
        },
    ];
    let rb = vec![
        Range {
            offset: 300_000,
            len: 1,
            at: 405_100,
        },
        Range {
            offset: 4096,
            len: 200_000,
            at: 500_000,
        },
    ];
    let cap = 700_003;
    let mut want = vec![0xEEu8; cap];
    for (ranges, v) in [(&ra, &va), (&rb, &vb)] {
        for r in ranges.iter() {
            let (o, l, at) = (r.offset as usize, r.len as usize, r.at as usize);
            want[at..at + l].copy_from_slice(&v[o..o + l]);
        }
    }
    let sources = vec![
        Source {
            path: a.clone(),
            ranges: ra,
        },
        Source {
            path: b.clone(),
            ranges: rb,
        },
    ];
    for cold in [true, false] {
        for t in [Some(GpuTechnique::Ring), Some(GpuTechnique::Threads), None] {
            for p in [&a, &b] {
                if cold {
                    iolab::cache::evict(p).unwrap();
                } else {
                    iolab::cache::warm(p, 1 << 21).unwrap();
                }
            }
            let mut out = vec![0xEEu8; cap];
            let st = transfer(&HostTarget::with_late_copies(&mut out), &sources, &opts(t))
                .unwrap_or_else(|e| panic!("{t:?}: {e}"));
            assert_eq!(st.bytes, 348_581 + 5000 + 100 + 1 + 200_000, "{t:?}");
            assert!(out == want, "cold {cold}, {t:?}: bytes differ");
        }
    }
}

#[test]
fn bad_ranges_are_refused_before_anything_is_written() {
    let d = dir();
    let (p, _) = file(d.path(), "f", 10_000, 3);
    let mut out = vec![7u8; 100];
    let src = |offset, len, at| {
        vec![Source {
            path: p.clone(),
            ranges: vec![
                Range {
                    offset: 0,
                    len: 10,
                    at: 0,
                },
                Range { offset, len, at },
            ],
        }]
    };
    let cases = [
        (
            src(9_999, 2, 50),
            "passes the end of the file (10000 bytes)",
        ),
        (
            src(0, 20, 90),
            "passes the end of the destination (100 bytes)",
        ),
        (src(0, 5, 8), "destination bytes 0..10 and 8..13 overlap"),
    ];
    for (sources, msg) in cases {
        let e = transfer(&HostTarget::new(&mut out), &sources, &opts(None)).unwrap_err();
        let e = e.to_string();
        assert!(e.contains(msg) && e.contains(&*p.to_string_lossy()), "{e}");
        assert!(!e.contains('\n'));
    }
    assert!(out.iter().all(|&b| b == 7), "a refused transfer wrote");
    let missing = d.path().join("missing");
    let e = transfer(
        &HostTarget::new(&mut out),
        &[Source {
            path: missing,
            ranges: vec![],
        }],
        &opts(None),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("missing") && e.contains("No such file"), "{e}");
    let e = Source::whole(d.path(), 0).unwrap_err().to_string();
    assert!(e.contains("a directory"), "{e}");
    let mut big = vec![0u8; 10_000];
    let e = transfer(
        &HostTarget::new(&mut big),
        &whole(&p),
        &opts(Some(GpuTechnique::CuFile)),
    )
    .unwrap_err()
    .to_string();
    assert!(e.starts_with("cufile is not available here"), "{e}");
}

/// A host destination that counts its lanes and fails the copy asked for.
struct Probe<'a> {
    host: HostTarget<'a>,
    lanes: AtomicUsize,
    alive: AtomicUsize,
    sends: AtomicUsize,
    fail_at: usize,
}

struct ProbeLane<'s, 'a> {
    inner: HostLane<'s, 'a>,
    probe: &'s Probe<'a>,
}

impl Drop for ProbeLane<'_, '_> {
    fn drop(&mut self) {
        self.probe.alive.fetch_sub(1, SeqCst);
    }
}

impl<'a> Target for Probe<'a> {
    type Lane<'s>
        = ProbeLane<'s, 'a>
    where
        Self: 's;
    fn len(&self) -> u64 {
        self.host.len()
    }
    fn lane(
        &self,
        slots: usize,
        slot_len: usize,
        pinned: bool,
    ) -> Result<ProbeLane<'_, 'a>, GpuError> {
        self.lanes.fetch_add(1, SeqCst);
        self.alive.fetch_add(1, SeqCst);
        Ok(ProbeLane {
            inner: self.host.lane(slots, slot_len, pinned)?,
            probe: self,
        })
    }
}

impl Lane for ProbeLane<'_, '_> {
    fn slot(&mut self, i: usize) -> Result<&mut [u8], GpuError> {
        self.inner.slot(i)
    }
    fn send(&mut self, i: usize, n: usize, at: u64) -> Result<(), GpuError> {
        if self.probe.sends.fetch_add(1, SeqCst) == self.probe.fail_at {
            return Err(GpuError::OutOfBounds {
                at,
                len: n as u64,
                cap: 0,
            });
        }
        self.inner.send(i, n, at)
    }
    fn finish(&mut self) -> Result<(), GpuError> {
        self.inner.finish()
    }
    fn split(&mut self) -> Result<(&mut [u8], &mut dyn CopyNow), GpuError> {
        self.inner.split()
    }
    fn pinned(&self) -> bool {
        false
    }
}

#[test]
fn a_failing_copy_stops_every_thread_and_no_lane_is_left() {
    let d = dir();
    let (p, _) = file(d.path(), "f", 2 << 20, 4);
    let mut out = vec![0u8; 2 << 20];
    for threads in [1, 3] {
        let probe = Probe {
            host: HostTarget::with_late_copies(&mut out),
            lanes: AtomicUsize::new(0),
            alive: AtomicUsize::new(0),
            sends: AtomicUsize::new(0),
            fail_at: 5,
        };
        let o = GpuOptions {
            threads,
            ..opts(Some(GpuTechnique::Threads))
        };
        let e = transfer(&probe, &whole(&p), &o).unwrap_err();
        assert!(e.to_string().contains("passes the end"), "{e}");
        assert_eq!(probe.lanes.load(SeqCst), threads, "one lane per thread");
        assert_eq!(probe.alive.load(SeqCst), 0, "every lane dropped");
        if threads == 1 {
            // 32 pieces of 64 KiB: none after the one that failed.
            assert_eq!(probe.sends.load(SeqCst), 6);
        }
    }
}

/// `n` bytes starting on a page, inside `v`.
fn aligned(v: &mut Vec<u8>, n: usize) -> &mut [u8] {
    v.resize(n + 4096, 0xEE);
    let off = (4096 - v.as_ptr() as usize % 4096) % 4096;
    &mut v[off..off + n]
}

#[test]
// Long on purpose: a table of range lists, each checked cold and warm.
fn filling_host_memory_in_place_reads_every_range_cold_and_warm() {
    let d = dir();
    let n = (1 << 20) + 4097;
    let (p, v) = file(d.path(), "f", n, 5);
    let cases: Vec<(Vec<Range>, usize, bool)> = vec![
        // The whole file, page-aligned everywhere, its last read rounded up
        // into the room after it: O_DIRECT when cold.
        (
            vec![Range {
                offset: 0,
                len: n as u64,
                at: 0,
            }],
            n + 4095,
            true,
        ),
        // A range neither whole pages nor ending the file: no O_DIRECT.
        (
            vec![Range {
                offset: 0,
                len: 5000,
                at: 0,
            }],
            8192,
            false,
        ),
        // Page-aligned ranges of whole pages, out of file order.
        (
            vec![
                Range {
                    offset: 8192 * 5,
                    len: 8192,
                    at: 0,
                },
                Range {
                    offset: 4096 * 40,
                    len: 4096 * 30,
                    at: 8192,
                },
            ],
            8192 + 4096 * 30,
            true,
        ),
        // Unaligned, with gaps that must stay untouched: through the page cache.
        (
            vec![
                Range {
                    offset: 3,
                    len: 70_000,
                    at: 1,
                },
                Range {
                    offset: 500_001,
                    len: 5,
                    at: 80_000,
                },
            ],
            80_010,
            false,
        ),
    ];
    for (ranges, cap, direct) in cases {
        let mut want = vec![0xEEu8; cap];
        for r in &ranges {
            let (o, l, at) = (r.offset as usize, r.len as usize, r.at as usize);
            want[at..at + l].copy_from_slice(&v[o..o + l]);
        }
        let src = [Source {
            path: p.clone(),
            ranges: ranges.clone(),
        }];
        for cold in [true, false] {
            if cold {
                iolab::cache::evict(&p).unwrap();
            } else {
                iolab::cache::warm(&p, n as u64).unwrap();
            }
            let mut store = Vec::new();
            let buf = aligned(&mut store, cap);
            buf.fill(0xEE);
            let st = iolab_reader::gpu::fill_host(buf, &src, &opts(None)).unwrap();
            let tech = if cold {
                GpuTechnique::Ring
            } else {
                GpuTechnique::Threads
            };
            assert_eq!(st.technique, tech, "{ranges:?}");
            if cold {
                assert_eq!(st.direct, direct, "{ranges:?}");
            }
            let bytes: u64 = ranges.iter().map(|r| r.len).sum();
            assert_eq!(st.bytes, bytes);
            // O_DIRECT may round the last read of a range up into free room;
            // the bytes the ranges name are exact, the rest untouched unless
            // rounding reached it.
            for r in &ranges {
                let (at, l) = (r.at as usize, r.len as usize);
                assert!(
                    buf[at..at + l] == want[at..at + l],
                    "cold {cold}, {r:?}: bytes differ"
                );
            }
            if !direct {
                assert!(*buf == want[..], "cold {cold}: a gap was written");
            }
        }
    }
}

/// Whether this file system lets `p` be opened with O_DIRECT.
fn direct_works(p: &Path) -> bool {
    let spec = iolab::file::OpenSpec {
        direct: true,
        write: false,
    };
    iolab::file::open(p, spec).is_ok()
}
