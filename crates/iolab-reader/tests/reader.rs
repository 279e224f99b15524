//! The reader API against real files: every technique returns the same
//! bytes, concurrent reads agree, batches complete each piece once, bad
//! input gives clear errors, and a mapped file truncated underneath does
//! not crash the process.

use iolab_reader::{Options, ReadError, ReadReq, Reader, Technique};
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn techniques() -> Vec<Technique> {
    let mut t = Technique::fixed();
    t.push(Technique::Auto);
    t.push(Technique::Buffered { block: 4096 });
    t.push(Technique::Buffered { block: 64 << 10 });
    t.push(Technique::Uring { depth: 1 });
    t
}

/// A directory on a real file system (O_DIRECT works there; /tmp may be tmpfs).
fn dir() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

/// A file of `n` bytes, named for its size.
fn file(d: &Path, n: usize) -> (PathBuf, Vec<u8>) {
    iolab::testing::file(d, &format!("f{n}"), n, 0)
}

fn open(p: &Path, t: Technique) -> Reader {
    let mut o = Options::new(t);
    o.profile = Some(Arc::new(iolab_reader::profile::Profile::thesis_defaults()));
    Reader::open(p, o).unwrap_or_else(|e| panic!("{t}: {e}"))
}

#[test]
fn every_technique_returns_the_same_bytes() {
    let d = dir();
    let n = (3 << 20) + 12345;
    let (p, v) = file(d.path(), n);
    let cases: &[(u64, usize)] = &[
        (0, 0),
        (0, 1),
        (0, 4096),
        (1, 4095),
        (4095, 2),
        (12345, 100_000),
        ((1 << 20) - 7, 2 << 20),
        (0, n),
        (n as u64 - 10, 10),
        (n as u64 - 10, 4096),           // crosses the end
        ((n - 100_000) as u64, 3 << 20), // crosses the end, large
        (n as u64, 10),                  // at the end
        (n as u64 + 5000, 10),           // past it
    ];
    for t in techniques() {
        let r = open(&p, t);
        // Asked after the reads: `stream` and `auto` measure the file when
        // first needed, and `auto` serves a small first read before that.
        for &(off, len) in cases {
            let mut b = vec![0xAAu8; len];
            let got = r
                .read_at(off, &mut b)
                .unwrap_or_else(|e| panic!("{t} {off} {len}: {e}"));
            let want = (n as u64).saturating_sub(off).min(len as u64) as usize;
            assert_eq!(got, want, "{t}: bytes at {off}+{len}");
            if want > 0 {
                assert!(
                    b[..got] == v[off as usize..off as usize + got],
                    "{t}: content at {off}+{len}"
                );
            }
        }
        let mut b = vec![0u8; 20];
        match r.read_exact_at(n as u64 - 10, &mut b) {
            Err(ReadError::UnexpectedEof {
                offset,
                wanted,
                got,
                path,
            }) => {
                assert_eq!((offset, wanted, got), (n as u64 - 10, 20, 10), "{t}");
                assert_eq!(path, p);
            }
            other => panic!("{t}: {other:?}"),
        }
        assert_eq!(r.len().unwrap(), n as u64, "{t}");
    }
}

#[test]
fn eight_threads_agree_with_one() {
    let d = dir();
    let n = 8 << 20;
    let (p, v) = file(d.path(), n);
    for t in techniques() {
        let r = open(&p, t);
        std::thread::scope(|s| {
            for k in 0..8u64 {
                let (r, v) = (&r, &v);
                s.spawn(move || {
                    let mut x = k * 7919 + 1;
                    for _ in 0..200 {
                        x = x
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        let off = (x >> 20) % n as u64;
                        let len = [1usize, 512, 4096, 70_000, 1 << 20][(x % 5) as usize];
                        let mut b = vec![0u8; len];
                        let got = r.read_at(off, &mut b).unwrap();
                        let want = (n as u64 - off).min(len as u64) as usize;
                        assert_eq!(got, want, "{t}");
                        assert!(
                            b[..got] == v[off as usize..off as usize + got],
                            "{t} at {off}"
                        );
                    }
                });
            }
        });
    }
}

#[test]
fn read_many_completes_every_piece_once() {
    let d = dir();
    let n = (2 << 20) + 333;
    let (p, v) = file(d.path(), n);
    // Neighbours (to be merged), a large piece, one across the end, one
    // past it, an empty one, and duplicates of the same range.
    let mut specs: Vec<(u64, usize)> = (0..40).map(|i| (i * 4096, 4096)).collect();
    specs.extend([
        (100, 3 << 20),
        (n as u64 - 5, 50),
        (n as u64 + 1, 7),
        (77, 0),
        (8192, 4096),
        (8192, 4096),
    ]);
    specs.extend((0..50).map(|i| ((i * 7_777_777) % n as u64, 1000)));
    for t in techniques() {
        let r = open(&p, t);
        let mut bufs: Vec<Vec<u8>> = specs.iter().map(|&(_, l)| vec![0u8; l]).collect();
        let mut reqs: Vec<ReadReq<'_>> = specs
            .iter()
            .zip(bufs.iter_mut())
            .map(|(&(o, _), b)| ReadReq::new(o, b))
            .collect();
        let mut seen = vec![0u32; specs.len()];
        r.read_many_with(&mut reqs, &mut |i, q| {
            seen[i] += 1;
            assert!(q.result.is_some(), "{t}: handed over before done");
        });
        assert!(seen.iter().all(|&c| c == 1), "{t}: {seen:?}");
        for (i, q) in reqs.iter().enumerate() {
            let (off, len) = specs[i];
            let want = (n as u64).saturating_sub(off).min(len as u64) as usize;
            let got = *q.result.as_ref().unwrap().as_ref().unwrap();
            assert_eq!(got, want, "{t}: piece {i} at {off}+{len}");
            if got > 0 {
                assert!(
                    q.buf[..got] == v[off as usize..off as usize + got],
                    "{t}: piece {i}"
                );
            }
        }
    }
}

#[test]
fn bad_input_is_a_clear_error() {
    let d = dir();
    for t in techniques() {
        // `stream` and `auto` measure the file when first needed: the
        // refusal comes with the first read, and with `len`.
        let lazy = matches!(t, Technique::Stream | Technique::Auto);
        let e = match Reader::open(d.path(), Options::new(t)) {
            Ok(r) if lazy => {
                let e = r.read_at(0, &mut [0u8; 64]).unwrap_err();
                assert!(matches!(r.len(), Err(ReadError::NotReadable { .. })), "{t}");
                e
            }
            Ok(_) => panic!("{t}: opened a directory"),
            Err(e) => e,
        };
        assert!(
            matches!(
                e,
                ReadError::NotReadable {
                    what: "a directory",
                    ..
                }
            ),
            "{t}: {e}"
        );
        assert!(e.to_string().contains(&d.path().display().to_string()));
    }
    let fifo = d.path().join("fifo");
    let st = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(st.success());
    let e = Reader::open(&fifo, Options::new(Technique::Mapped)).unwrap_err();
    assert!(
        matches!(e, ReadError::NotReadable { what: "a FIFO", .. }),
        "{e}"
    );
    // Opened, then refused by the descriptor's kind: at open, or by `len`
    // (a read of /dev/null by `auto` or `stream` is what `pread` says: 0).
    let e = Reader::open("/dev/null", Options::new(Technique::Mapped)).unwrap_err();
    assert!(
        matches!(
            e,
            ReadError::NotReadable {
                what: "a character device",
                ..
            }
        ),
        "{e}"
    );
    let e = Reader::open("/dev/null", Options::new(Technique::Auto))
        .unwrap()
        .len()
        .unwrap_err();
    assert!(
        matches!(
            e,
            ReadError::NotReadable {
                what: "a character device",
                ..
            }
        ),
        "{e}"
    );
    let e = Reader::open(d.path().join("missing"), Options::new(Technique::Stream)).unwrap_err();
    assert!(
        matches!(e, ReadError::Open { .. }) && e.to_string().contains("missing"),
        "{e}"
    );
    // A size that does not fit: offset + length past u64.
    let (p, _) = file(d.path(), 100);
    let r = open(&p, Technique::Stream);
    let e = r.read_at(u64::MAX - 2, &mut [0u8; 10]).unwrap_err();
    assert!(matches!(e, ReadError::TooLarge { .. }), "{e}");
}

/// Run in a child process as an unprivileged user by `permission_denied`.
#[test]
#[ignore = "helper: run by permission_denied as another user"]
fn helper_open_denied() {
    let Some(p) = std::env::var_os("IOLAB_TEST_DENIED") else {
        return;
    };
    for t in techniques() {
        match Reader::open(&p, Options::new(t)) {
            Err(ReadError::Open { source, path }) => {
                assert_eq!(source.kind(), std::io::ErrorKind::PermissionDenied, "{t}");
                assert_eq!(path, PathBuf::from(&p));
            }
            other => panic!("{t}: {other:?}"),
        }
    }
    println!("DENIED-OK");
}

#[test]
fn permission_denied() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let d = dir();
    let (p, _) = file(d.path(), 4096);
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    // Who owns this process's /proc entry: root, or not.
    let root = std::fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
        .unwrap_or(false);
    if !root {
        iolab::testing::unmet("needs root to switch to an unprivileged user");
        return;
    }
    // The directories on the way must be searchable by nobody.
    let mut anc = p.parent();
    while let Some(a) = anc {
        let m = std::fs::metadata(a).unwrap().permissions().mode();
        if m & 0o001 == 0 {
            iolab::testing::unmet(&format!(
                "{} is not searchable by others (the denied open needs a path nobody can reach)",
                a.display()
            ));
            return;
        }
        anc = a.parent();
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "helper_open_denied", "--ignored", "--nocapture"])
        .env("IOLAB_TEST_DENIED", &p)
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    let so = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && so.contains("DENIED-OK"),
        "{so}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_mapped_file_truncated_underneath_reads_short_instead_of_crashing() {
    let d = dir();
    let n = 4 << 20;
    let (p, v) = file(d.path(), n);
    for t in [Technique::Mapped, Technique::ThesisRules, Technique::Auto] {
        std::fs::write(&p, &v).unwrap();
        let r = open(&p, t);
        let mut b = vec![0u8; 4096];
        r.read_exact_at(3 << 20, &mut b).unwrap();
        // Another process cuts the file to 1 MiB + 100 bytes.
        let st = std::process::Command::new("truncate")
            .args(["-s", &((1 << 20) + 100).to_string()])
            .arg(&p)
            .status()
            .unwrap();
        assert!(st.success());
        iolab::cache::evict(&p).unwrap();
        // Past the new end: nothing (the old pages are gone).
        assert_eq!(r.read_at(3 << 20, &mut b).unwrap(), 0, "{t}");
        // Across the new end: short, with the right bytes.
        let got = r.read_at(1 << 20, &mut b).unwrap();
        assert_eq!(got, 100, "{t}");
        assert_eq!(&b[..100], &v[1 << 20..(1 << 20) + 100]);
        // Before it: whole.
        r.read_exact_at(4096, &mut b).unwrap();
        assert_eq!(&b[..], &v[4096..8192]);
    }
}

#[test]
fn whole_files_cold_and_warm_in_order() {
    let d = dir();
    let n = (5 << 20) + 4097;
    let (p, v) = file(d.path(), n);
    for cold in [true, false] {
        if cold {
            iolab::cache::evict(&p).unwrap();
        } else {
            iolab::cache::warm(&p, n as u64).unwrap();
        }
        assert!(iolab_reader::read_all(&p).unwrap() == v, "cold {cold}");
        let mut big = vec![0u8; n + 10];
        assert_eq!(iolab_reader::read_into(&p, &mut big).unwrap(), n);
        assert!(big[..n] == v[..]);
        assert!(iolab_reader::read_into(&p, &mut vec![0u8; n - 1]).is_err());
        for direct in [Some(true), Some(false)] {
            let plan = iolab_reader::WholePlan {
                chunk: 1 << 20,
                depth: 4,
                direct,
                ordered: true,
                ..Default::default()
            };
            let mut next = 0u64;
            let mut out = Vec::new();
            let st = iolab_reader::read_whole_with(&p, &plan, &mut |off, b| {
                assert_eq!(off, next, "in order");
                next += b.len() as u64;
                out.extend_from_slice(b);
                true
            })
            .unwrap();
            assert_eq!(st.bytes, n as u64);
            assert!(out == v, "direct {direct:?}");
            // Stopping early stops.
            let mut calls = 0;
            iolab_reader::read_whole_with(&p, &plan, &mut |_, _| {
                calls += 1;
                false
            })
            .unwrap();
            assert_eq!(calls, 1);
        }
    }
    let e = iolab_reader::read_all(d.path()).unwrap_err();
    assert!(matches!(e, ReadError::NotReadable { .. }), "{e}");
}

#[test]
fn reader_is_send_and_sync() {
    fn both<T: Send + Sync>() {}
    both::<Reader>();
}
