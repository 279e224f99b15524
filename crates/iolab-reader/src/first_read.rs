//! `Auto` from the open to the first read that needs the file's length.
//!
//! Most files a program opens are read once, whole or in one piece (a
//! source tree, a package's modules, a data loader's images), and for
//! those `Auto` has nothing to decide: the policy reads a small request,
//! and cached data, with one `pread`. So the first read of a file is
//! served before the file is measured (no `fstat`, no adaptive state) when
//! it is small, cached or not (at most the profile's `small_max` and
//! `cold_small_max`); when the page it starts in was found cached and the
//! read is no larger than what a directory's read-ahead asks for; or
//! whatever its size in a directory found warm. So are the reads that
//! follow it in order while the data is known cached (a directory found
//! warm, or within what a directory's read-ahead asks for of a file whose
//! first page is cached) or the last one ended at the end of the file, up
//! to [`EARLY_MAX`] in all: of cached data read in order, the policy reads
//! its first requests with one `pread` each (`tar` reads a source tree's
//! files in 2 to 6 pieces of 10 KiB, and measuring each file cost it a
//! twentieth of its warm replay; `cat` and Python's `read()` ask once
//! more at the end). So is a read that repeats an early one exactly or
//! lies within the pages one read, as a compiler reads a header again or
//! a loader a library's program headers after its first bytes:
//! the policy would read it with one `pread` too (a mapping pays only
//! over many re-reads), and each such file measured and given a state
//! cost a replay of `gcc -fsyntax-only` from a warm cache about 1 µs per
//! re-read. The `fstat` and the state ([`Adaptive`]) come with
//! the first read that may need them, which then counts the early reads
//! as its own. Replaying python's imports from a warm cache (one read per
//! file), the `fstat` and the state were a quarter of `Auto`'s time per
//! file over a bare `open` and `pread`.
//!
//! The first read tells [`super::siblings`] of the file, whose read-ahead
//! across a directory is what a cold tree walk gains, and probes the page
//! it reads (not the file's first: a program run again finds cached what
//! it read the first time, and `tail` reads each file's end).

use super::auto::{trace_policy, Adaptive};
use super::guard::Switch;
use super::many::ReadReq;
use super::policy;
use super::profile::ProfileRef;
use super::siblings::First;
use super::{Backend, Options, Result, Src};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};

/// The adaptive technique: an open file, and its [`Adaptive`] state once
/// a read needs it.
pub(crate) struct Auto {
    src: Arc<Src>,
    profile: ProfileRef,
    budget: Option<u64>,
    trace: bool,
    /// What the first read found of the page it starts in, and of the
    /// directory ([`super::siblings::opened`]), once there was one.
    first: OnceLock<First>,
    /// The reads served before the state existed, each its offset, the
    /// length asked and the bytes read, and how many (in order: each
    /// starts where the bytes of the last ended).
    early: [[AtomicU64; 3]; EARLY_MAX],
    early_n: AtomicUsize,
    /// Boxed: most files never need it, and an open moves this struct.
    adaptive: OnceLock<Box<Adaptive>>,
}

/// Most reads served before the state is made: the requests before the
/// policy first samples residency ([`super::auto::FIRST_SAMPLE`]).
pub(crate) const EARLY_MAX: usize = super::auto::FIRST_SAMPLE as usize;

impl Auto {
    /// Opens the technique on `src` (not measured yet).
    /// `opts` is taken, not borrowed: its profile (if any) moves here
    /// rather than being cloned, a count shared by every open that was
    /// given the same profile.
    pub(crate) fn new(src: Arc<Src>, opts: Options) -> Self {
        let profile = ProfileRef::new(opts.profile);
        Auto {
            src,
            profile,
            budget: opts.memory_budget,
            trace: trace_policy(),
            first: OnceLock::new(),
            early: Default::default(),
            early_n: AtomicUsize::new(0),
            adaptive: OnceLock::new(),
        }
    }

    /// The open file.
    #[inline]
    pub(crate) fn src(&self) -> &Arc<Src> {
        &self.src
    }

    /// What the first read, at `off`, found of its page and directory:
    /// the directory told of the file at its first read, not at its open,
    /// so that the probe looks where the program reads (two threads'
    /// first reads at once: one probes, the other waits for it).
    fn first(&self, off: u64) -> First {
        *self.first.get_or_init(|| {
            super::siblings::opened(&self.src.path, &self.src.file, off, self.trace)
        })
    }

    /// The adaptive state, made (the file measured) the first time; `off`:
    /// the offset of the read that needs it.
    fn adaptive(&self, off: u64) -> Result<&Adaptive> {
        if let Some(a) = self.adaptive.get() {
            return Ok(a);
        }
        let a = Adaptive::new(
            self.src.clone(),
            self.profile.clone(),
            self.budget,
            self.first(off),
        )?;
        let n = self.early_n.load(Relaxed);
        for [off, len, _] in &self.early[..n] {
            a.seen(off.load(Relaxed), len.load(Relaxed) as usize);
        }
        Ok(self.adaptive.get_or_init(|| Box::new(a)))
    }

    /// Whether a first read of `len` bytes is one `pread` whatever the
    /// file's length: small, cached or not; no larger than what a
    /// directory's read-ahead asks for of each file, when the page it
    /// starts in was found cached; or of any size in a directory found warm (a
    /// cached tree: a data loader reading 100 KiB to 600 KiB images whole
    /// spent a tenth of its time measuring each file and probing its
    /// range). The policy reads cached data with `pread`; a file cached
    /// only at its start costs this one read the difference. A later read
    /// is one `pread` too while it continues the early ones in order over
    /// data known cached, or at the end of the file (the last read was
    /// short), or when it repeats an early read exactly or lies within the
    /// pages one read (its data was just read through the page cache), up
    /// to [`EARLY_MAX`] reads.
    fn early(&self, off: u64, len: usize) -> bool {
        let n = self.early_n.load(Relaxed);
        let first = self.first(off);
        let cached_to =
            |end: u64| first.warm_dir || first.cached == Some(true) && end <= policy::SIBLING_BYTES;
        if n == 0 {
            return len <= self.profile.small_max.min(self.profile.cold_small_max)
                || cached_to(len as u64);
        }
        if n >= EARLY_MAX {
            return false;
        }
        let [last_off, last_len, last_got] = &self.early[n - 1];
        let got = last_got.load(Relaxed);
        let in_order = off == last_off.load(Relaxed) + got
            && (got < last_len.load(Relaxed) || cached_to(off.saturating_add(len as u64)));
        let end = off.saturating_add(len as u64);
        in_order
            || self.early[..n].iter().any(|[o, l, g]| {
                let (o, l) = (o.load(Relaxed), l.load(Relaxed));
                // The pages the early read brought in, whole.
                let to = o.saturating_add(g.load(Relaxed));
                let (from, to) = (
                    o & !4095,
                    to.checked_next_multiple_of(4096).unwrap_or(u64::MAX),
                );
                o == off && l == len as u64 || from <= off && end <= to
            })
    }
}

impl Backend for Auto {
    fn read_at(&self, off: u64, buf: &mut [u8]) -> Result<usize> {
        if let Some(a) = self.adaptive.get() {
            return a.read_at(off, buf);
        }
        if !self.early(off, buf.len()) {
            // The state, which counts the early reads there were.
            return self.adaptive(off)?.read_at(off, buf);
        }
        let r = self.src.pread_full(off, buf);
        // Loads and stores: two threads racing on early reads both serve
        // theirs, which costs nothing but the count of one. A read that
        // failed is not counted (the next one fails the same way).
        let n = self.early_n.load(Relaxed);
        if let (true, Ok(got)) = (n < EARLY_MAX, &r) {
            let e = &self.early[n];
            e[0].store(off, Relaxed);
            e[1].store(buf.len() as u64, Relaxed);
            e[2].store(*got as u64, Relaxed);
            self.early_n.store(n + 1, Relaxed);
        }
        if self.trace {
            eprintln!(
                "policy: {} offset {off} len {}: Pread (an early read: small, of cached data in order, or of pages just read: one pread, the file not measured yet)",
                self.src.path.display(),
                buf.len()
            );
        }
        r
    }

    fn switched(&self) -> Option<Switch> {
        self.adaptive.get()?.switched()
    }

    fn read_many(&self, reqs: &mut [ReadReq<'_>], done: &mut dyn FnMut(usize, &ReadReq<'_>)) {
        let off = reqs.first().map_or(0, |r| r.offset);
        match self.adaptive(off) {
            Ok(a) => a.read_many(reqs, done),
            // Refused (a directory, a FIFO): each request says so.
            Err(_) => {
                for (i, r) in reqs.iter_mut().enumerate() {
                    r.result = Some(self.adaptive(off).and_then(|a| a.read_at(r.offset, r.buf)));
                    done(i, r);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Options, Technique};

    fn file(len: usize) -> (tempfile::TempDir, std::path::PathBuf, Vec<u8>) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        let data: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(&p, &data).unwrap();
        (d, p, data)
    }

    fn auto(p: &std::path::Path) -> Auto {
        let f = std::fs::File::open(p).unwrap();
        let src = Arc::new(Src::new(p, f));
        Auto::new(src, Options::new(Technique::Auto))
    }

    #[test]
    fn a_small_first_read_is_served_before_the_file_is_measured_and_counted_after() {
        let (_d, p, data) = file(1 << 20);
        let a = auto(&p);
        let mut buf = vec![0u8; 4096];
        assert_eq!(a.read_at(8192, &mut buf).unwrap(), 4096);
        assert!(buf[..] == data[8192..8192 + 4096]);
        // No fstat, no state: a file read once costs its open and pread.
        assert!(a.src.known_len().is_none() && a.adaptive.get().is_none());
        // The next read, not in order, measures it, and the state counts
        // both reads.
        assert_eq!(a.read_at(0, &mut buf).unwrap(), 4096);
        assert!(buf[..] == data[..4096]);
        assert_eq!(a.src.known_len(), Some(1 << 20));
        assert_eq!(a.adaptive.get().unwrap().requests(), 2);
    }

    #[test]
    fn reads_in_order_of_data_known_cached_are_served_early_up_to_the_first_sample() {
        let (_d, p, data) = file(1 << 20);
        let piece = 16 << 10;
        let read = |a: &Auto, i: usize| {
            let mut buf = vec![0u8; piece];
            assert_eq!(a.read_at((i * piece) as u64, &mut buf).unwrap(), piece);
            assert!(buf[..] == data[i * piece..(i + 1) * piece], "piece {i}");
        };
        // The first page cached: in order, up to what a directory's
        // read-ahead asks for of a file (8 pieces of 16 KiB), unmeasured.
        let mut a = auto(&p);
        a.first = First {
            cached: Some(true),
            warm_dir: false,
        }
        .into();
        for i in 0..EARLY_MAX {
            read(&a, i);
        }
        assert!(a.src.known_len().is_none() && a.adaptive.get().is_none());
        // Beyond it, measured; the state counts the early reads, in order.
        read(&a, EARLY_MAX);
        assert_eq!(a.src.known_len(), Some(1 << 20));
        assert_eq!(a.adaptive.get().unwrap().requests(), EARLY_MAX as u64 + 1);
        // Not known cached: the second read is decided on the file.
        let mut a = auto(&p);
        a.first = First {
            cached: Some(false),
            warm_dir: false,
        }
        .into();
        read(&a, 0);
        assert!(a.adaptive.get().is_none());
        read(&a, 1);
        assert_eq!(a.adaptive.get().unwrap().requests(), 2);
        // In a warm directory, reads in order beyond the first 128 KiB
        // too, until the first sample is due.
        let mut a = auto(&p);
        a.first = First {
            cached: Some(true),
            warm_dir: true,
        }
        .into();
        let mut big = vec![0u8; 64 << 10];
        for i in 0..EARLY_MAX {
            let at = i * big.len();
            assert_eq!(a.read_at(at as u64, &mut big).unwrap(), big.len());
            assert!(big[..] == data[at..at + big.len()], "big piece {i}");
        }
        assert!(a.adaptive.get().is_none());
        // A file read to its end, cached or not (`cat`, Python's `read()`):
        // the read at the end is one more `pread`, of nothing.
        let (_d, p, data) = file(20_000);
        let mut a = auto(&p);
        a.first = First {
            cached: Some(false),
            warm_dir: false,
        }
        .into();
        let mut buf = vec![0u8; 32 << 10];
        assert_eq!(a.read_at(0, &mut buf).unwrap(), 20_000);
        assert!(buf[..20_000] == data[..]);
        assert_eq!(a.read_at(20_000, &mut buf).unwrap(), 0);
        assert!(a.src.known_len().is_none() && a.adaptive.get().is_none());
        // Then a read beyond the pages read is decided on the file,
        // counting both.
        assert_eq!(a.read_at(24_576, &mut buf[..4096]).unwrap(), 0);
        assert_eq!(a.adaptive.get().unwrap().requests(), 3);
    }

    #[test]
    fn a_read_repeating_an_early_one_or_within_its_pages_is_served_early_too() {
        let (_d, p, data) = file(64 << 10);
        // Not known cached: only the repeat, not the order, lets it by.
        let mut a = auto(&p);
        a.first = First {
            cached: Some(false),
            warm_dir: false,
        }
        .into();
        let mut head = vec![0u8; 832];
        for i in 0..EARLY_MAX {
            assert_eq!(a.read_at(0, &mut head).unwrap(), 832);
            assert!(head[..] == data[..832], "repeat {i}");
            assert!(a.adaptive.get().is_none(), "repeat {i} made the state");
        }
        // Past the first sample's requests the state is made, counting all.
        assert_eq!(a.read_at(0, &mut head).unwrap(), 832);
        assert_eq!(a.adaptive.get().unwrap().requests(), EARLY_MAX as u64 + 1);
        // Within the pages an early read brought in (a library's program
        // headers after its first 832 bytes): early too.
        let a = auto(&p);
        assert_eq!(a.read_at(0, &mut head).unwrap(), 832);
        let mut more = vec![0u8; 784];
        assert_eq!(a.read_at(64, &mut more).unwrap(), 784);
        assert!(more[..] == data[64..848]);
        assert!(a.adaptive.get().is_none());
        // Past them, neither in order nor a repeat: decided on the file.
        assert_eq!(a.read_at(4000, &mut more).unwrap(), 784);
        assert!(more[..] == data[4000..4784]);
        assert_eq!(a.adaptive.get().unwrap().requests(), 3);
        // At the largest offsets: nothing read (or refused), no overflow.
        for top in [i64::MAX as u64 - 8, u64::MAX - 8] {
            let a = auto(&p);
            for at in [top, top + 2] {
                let r = a.read_at(at, &mut more[..4]);
                assert!(matches!(r, Ok(0) | Err(_)), "{at}: {r:?}");
            }
        }
    }

    #[test]
    fn a_large_first_read_measures_the_file_unless_its_directory_is_warm() {
        let (_d, p, data) = file(4 << 20);
        let big = policy::SIBLING_BYTES as usize * 2;
        let cases = [
            (None, false, true),
            (Some(false), false, true),
            // Cached at its start only: a read beyond what a directory's
            // read-ahead brings in is decided on the file.
            (Some(true), false, true),
            (Some(true), true, false),
        ];
        for (cached, warm_dir, measured) in cases {
            let mut a = auto(&p);
            a.first = First { cached, warm_dir }.into();
            let mut buf = vec![0u8; big];
            assert_eq!(a.read_at(0, &mut buf).unwrap(), big);
            assert!(buf[..] == data[..big], "{cached:?} {warm_dir}");
            assert_eq!(
                a.src.known_len().is_some(),
                measured,
                "{cached:?} {warm_dir}"
            );
        }
    }

    #[test]
    fn a_refused_file_fails_each_request_of_a_batch() {
        let d = tempfile::tempdir().unwrap();
        let a = auto(d.path());
        let mut bufs = vec![vec![0u8; 4096]; 3];
        let mut reqs = ReadReq::batch(&[0, 4096, 8192], &mut bufs);
        let mut seen = 0;
        a.read_many(&mut reqs, &mut |_, r| {
            assert!(matches!(
                r.result,
                Some(Err(crate::ReadError::NotReadable {
                    what: "a directory",
                    ..
                }))
            ));
            seen += 1;
        });
        assert_eq!(seen, 3);
    }
}
