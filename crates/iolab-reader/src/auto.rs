//! `Auto`: decides per request with [`policy::decide`](super::policy::decide)
//! from the request, what this reader has seen of the file (a sequential
//! stream detector, the fraction read so far, re-reads), the file's state
//! (its length against available memory, residency sampled with mincore)
//! and the profile; then reads with the chosen technique. The state is
//! atomics only: no lock on the hot path.
//!
//! Opening must stay cheap: replaying a recursive grep opens 12,500 files
//! read once or twice each, and mapping every one (mmap, mincore, munmap)
//! made `Auto` 2.9x slower than `pread` there with a warm cache. So the
//! mapping is made when first needed, residency is sampled at open only
//! for a file that does not fit in memory (where it decides between
//! O_DIRECT and the page cache) and otherwise from the [`FIRST_SAMPLE`]th
//! request on, and a file gets its mapping only once it has had
//! [`FIRST_SAMPLE`] requests (a copy from a mapping beats a `pread` only
//! when the mapping is reused).
//!
//! Small random reads that miss the page cache count against their 1 MiB
//! region ([`Around`]); a region whose misses have paid for it is read
//! whole before the next read there. Once those reads are dense (half the
//! regions that missed were read whole) and have waited as long as the
//! rest of a file that fits takes to read, the whole file is asked for
//! ahead, once ([`policy::read_ahead_whole`]).
//!
//! Reads in order of a large cold file go to the file's own O_DIRECT
//! stream ([`DirectAhead`], made at the first such choice, after a
//! residency sample). Each open also tells [`super::siblings`], which asks
//! for the next files of the directory when opens follow its order.

use super::around::Around;
use super::buffered::Buffered;
use super::counter::{add, bump32};
use super::direct::{Direct, DirectAhead};
use super::guard::{Arm, Guard, Switch};
use super::many::ReadReq;
use super::mapped::Mapped;
use super::policy::{self, Choice, Situation};
use super::profile::{Profile, ProfileRef};
use super::siblings::First;
use super::stream::Stream;
use super::uring::UringReader;
use super::{Backend, Result, Src};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};

/// Environment variable that makes `Auto` log each decision on stderr.
pub const TRACE_ENV: &str = "IOLAB_TRACE_POLICY";

/// The request from which a file that fits in memory has its residency
/// sampled and may be mapped (before it, `Mapped` choices are `pread`s).
pub const FIRST_SAMPLE: u64 = 8;

/// Bytes per `POSIX_FADV_WILLNEED` call when a whole file is read ahead
/// and its device's limits are unknown.
const WILLNEED_STEP: u64 = 128 << 10;

/// Whether `IOLAB_TRACE_POLICY` asks for decisions on stderr (read once:
/// looking the environment up at every open showed in replays).
pub(crate) fn trace_policy() -> bool {
    static T: OnceLock<bool> = OnceLock::new();
    *T.get_or_init(|| std::env::var_os(TRACE_ENV).is_some_and(|v| v != "0"))
}

/// Checks the profile's device against the file's (`dev`, from the one
/// `fstat` that measured it) once per device: the check resolves /sys
/// links, several system calls, too many for every file.
fn warn_device_once(profile: &Profile, path: &std::path::Path, dev: u64) {
    static LAST_DEV: AtomicU64 = AtomicU64::new(u64::MAX);
    if profile.device.is_none() {
        return;
    }
    // A load first: every measured file of every thread comes here, and
    // a swap would take the shared line for writing each time.
    if LAST_DEV.load(Relaxed) == dev {
        return;
    }
    LAST_DEV.store(dev, Relaxed);
    if let Some(w) = profile.device_warning(path) {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| super::warn::emit(&w));
    }
}

/// A file's counters and what has been learnt of it. `repr(C)`, in this
/// order: what every request's quick decision reads comes first, within a
/// few cache lines, and the parts only a timed or O_DIRECT read uses
/// come last (laid out by the compiler, a 512-byte ring of O_DIRECT
/// ranges lay between the quick path's first field and its others).
#[repr(C)]
struct State {
    requests: AtomicU64,
    resident: AtomicU64,
    /// The request at which residency is sampled again: every
    /// `refresh_every` requests (a comparison, not a division per read).
    next_refresh: AtomicU64,
    /// Taken as cached from the open until the first refresh, not sampled
    /// at the [`FIRST_SAMPLE`]th request ([`trusts_warm_dir`]).
    trusted: bool,
    /// The whole file was asked for ahead ([`policy::read_ahead_whole`]).
    read_ahead: AtomicBool,
    /// Timed small random reads in a row that found the page cache
    /// (waited less than [`policy::MISS_NS`]): from [`policy::HIT_STREAK`]
    /// on, only one in [`policy::HIT_SAMPLE`] is timed and decided in full.
    hits: AtomicU32,
    /// End of the last request that continued a sequential run: a request
    /// there continues the stream even after reads elsewhere came between
    /// (a database's table scan reads an interior page now and then).
    stream_end: AtomicU64,
    last_end: AtomicU64,
    run: AtomicU32,
    /// Bytes of the current stream (see [`Situation::stream_bytes`]).
    stream_bytes: AtomicU64,
    /// Requests that continued a stream.
    streamed: AtomicU64,
    /// The last few reads of at most [`policy::EXACT_MAX`] bytes, as
    /// [`exact_key`]s (0: none), and where the next one goes.
    recent: [AtomicU64; RECENT],
    recent_next: AtomicU32,
    /// The last of them that was read again: kept apart from the ring, so
    /// a header re-read between more than [`RECENT`] other small reads
    /// (SQLite's, between a look-up's pages) is still known.
    again_key: AtomicU64,
    chunk_shift: u32,
    chunks: u64,
    /// Regions read: one bit each (see [`State::word`]).
    touched: Touched,
    touched_n: AtomicU64,
    /// Where the last O_DIRECT read ended (`u64::MAX`: none, or a read
    /// already followed it there); O_DIRECT reads, and reads that started
    /// where one ended ([`policy::keeps_direct_tail`]).
    direct_end: AtomicU64,
    refresh_every: u64,
    /// Residency was sampled at least once.
    sampled: AtomicBool,
    /// The stream's window the range probe last found uncached.
    probed_from: AtomicU64,
    probed_to: AtomicU64,
    available: AtomicU64,
    /// Time spent in `read_at` so far, ns, until the file is read ahead
    /// or found cached ([`Situation::waited_ns`]).
    waited_ns: AtomicU64,
    directs: AtomicU64,
    tails: AtomicU64,
    /// Misses of small random reads per region, and the regions read
    /// around them ([`Around`]).
    around: Around,
    /// The last ranges read with O_DIRECT (see [`DirectReads`]).
    direct_reads: OnceLock<Box<std::sync::Mutex<DirectReads>>>,
}

/// Small reads [`State::recent`] keeps.
const RECENT: usize = 4;

/// A read of `len` bytes at `off` as one number, when it is small enough
/// to be looked for again ([`policy::EXACT_MAX`]); never 0.
fn exact_key(off: u64, len: usize) -> Option<u64> {
    (len > 0 && len <= policy::EXACT_MAX).then_some(off << 13 | len as u64)
}

impl State {
    /// The state of a file of `len` bytes nothing has been read from;
    /// `first`: what its first read found of its page and directory.
    fn new(len: u64, first: First) -> State {
        let (chunk_shift, chunks) = policy::regions(len);
        // mincore walks the page cache, tens of ns per page (at pages/256
        // it took 40 % of Auto's time replaying a SQLite trace of a 283 MB
        // file): sample it about once per quarter of the file's pages in
        // requests, so its cost per request stays a few pages' worth.
        let refresh_every = (len / 4096 + 1) / 4;
        let refresh_every = refresh_every.clamp(64, 1 << 20);
        State {
            last_end: AtomicU64::new(u64::MAX),
            run: AtomicU32::new(0),
            stream_end: AtomicU64::new(u64::MAX),
            streamed: AtomicU64::new(0),
            stream_bytes: AtomicU64::new(0),
            probed_from: AtomicU64::new(0),
            probed_to: AtomicU64::new(0),
            chunk_shift,
            touched: Touched::new(chunks),
            touched_n: AtomicU64::new(0),
            chunks,
            requests: AtomicU64::new(0),
            refresh_every,
            next_refresh: AtomicU64::new(refresh_every),
            resident: AtomicU64::new(first_guess(first, len).to_bits()),
            trusted: trusts_warm_dir(first, len),
            available: AtomicU64::new(0),
            read_ahead: AtomicBool::new(false),
            waited_ns: AtomicU64::new(0),
            sampled: AtomicBool::new(false),
            direct_reads: OnceLock::new(),
            around: Around::new(len),
            recent: Default::default(),
            recent_next: AtomicU32::new(0),
            again_key: AtomicU64::new(0),
            direct_end: AtomicU64::new(u64::MAX),
            directs: AtomicU64::new(0),
            tails: AtomicU64::new(0),
            hits: AtomicU32::new(0),
        }
    }
}

/// Ranges of a file read last with O_DIRECT, `[start, end)`, so a read of
/// the same bytes again goes through the page cache (and a third is a
/// copy) instead of to the device each time. A ring of the last
/// [`DIRECT_READS`]: a program that reads a record again does so soon.
#[derive(Default)]
struct DirectReads {
    ranges: [(u64, u64); DIRECT_READS],
    next: usize,
}

/// Ranges [`DirectReads`] keeps.
const DIRECT_READS: usize = 32;

impl DirectReads {
    /// Whether `[off, end)` overlaps a range read with O_DIRECT.
    fn overlaps(&self, off: u64, end: u64) -> bool {
        self.ranges.iter().any(|&(a, b)| a < end && off < b)
    }

    fn note(&mut self, off: u64, end: u64) {
        self.ranges[self.next] = (off, end);
        self.next = (self.next + 1) % DIRECT_READS;
    }
}

/// The bitmap of regions read: the first 64 regions inline (a file of up
/// to 64 MiB, most of what programs open, allocates nothing for it), the
/// rest in a slice (an empty boxed slice allocates nothing either).
struct Touched {
    first: AtomicU64,
    rest: Box<[AtomicU64]>,
}

impl Touched {
    fn new(regions: u64) -> Touched {
        let words = regions.div_ceil(64).max(1);
        Touched {
            first: AtomicU64::new(0),
            rest: (1..words).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Words of 64 regions.
    fn words(&self) -> u64 {
        1 + self.rest.len() as u64
    }

    /// Word `i` (regions `64 i ..`).
    fn word(&self, i: u64) -> &AtomicU64 {
        match i {
            0 => &self.first,
            _ => &self.rest[(i - 1) as usize],
        }
    }
}

/// Residency assumed before the first sample: for a file no larger than
/// what the read-ahead across a directory asks for of each file, whether
/// the page its first read starts in was cached (`cachestat`, no I/O):
/// such a file is cached whole, or where the program reads it, or not at
/// all. A larger one counts as not cached (that page may be all a
/// sibling's read-ahead brought in); choices that bypass the cache probe
/// their range first anyway.
fn first_guess(first: First, len: u64) -> f64 {
    if first.cached == Some(true) && len <= policy::SIBLING_BYTES || trusts_warm_dir(first, len) {
        1.0
    } else {
        0.0
    }
}

/// Whether a file is taken as cached until its first refresh, without
/// the sample at its [`FIRST_SAMPLE`]th request: opened in a directory
/// found warm (a cached tree) and no larger than
/// [`policy::WARM_DIR_TRUST_MAX`]. `sha256sum` over a warm tree of
/// images spent about 2 µs a file on that sample, for choices a file read
/// in order in 32 KiB pieces does not depend on.
fn trusts_warm_dir(first: First, len: u64) -> bool {
    first.warm_dir && len <= policy::WARM_DIR_TRUST_MAX
}

/// `MemAvailable`, read from /proc/meminfo at most every 100 ms by the
/// whole process: every `Auto` open samples it, and a replay of a trace
/// that opens thousands of small files spent more system calls reading
/// /proc/meminfo than reading the files.
fn available_recent() -> Option<u64> {
    static T0: OnceLock<std::time::Instant> = OnceLock::new();
    static VALUE: AtomicU64 = AtomicU64::new(0);
    static STAMP_MS: AtomicU64 = AtomicU64::new(0);
    let now_ms = T0
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_millis() as u64
        + 1;
    let stamp = STAMP_MS.load(Relaxed);
    if stamp != 0 && now_ms.saturating_sub(stamp) < 100 {
        return Some(VALUE.load(Relaxed));
    }
    let v = super::mem_available()?;
    VALUE.store(v, Relaxed);
    LAST_AVAILABLE.store(v, Relaxed);
    STAMP_MS.store(now_ms, Relaxed);
    Some(v)
}

/// The last `MemAvailable` [`available_recent`] read (0 before the first).
static LAST_AVAILABLE: AtomicU64 = AtomicU64::new(0);

/// Places a residency sample looks at, at most (the windows of the
/// mincore fallback, [`iolab::cache::residency_sampled`]).
const RESIDENCY_WINDOWS: usize = 32;

/// Places a residency sample looks at first: when they agree (all cached
/// or none), the file is taken to be so and the others are not looked at.
/// Four: at eight places (eight system calls, each walking the page
/// cache's tree) the request at a file's [`FIRST_SAMPLE`] took 8.6 µs
/// against 1.4 for a `pread` alone, the largest cost `Auto` adds to a
/// file read a dozen times (SQLite's look-ups across attached databases);
/// a file cached in scattered pages, a fifth of them, passes four places
/// as cached about once in 600 files.
const RESIDENCY_FIRST: u64 = 4;

/// The fraction of `src`'s pages in the page cache, from `cachestat(2)`
/// of one page at each of [`RESIDENCY_WINDOWS`] evenly spaced places (of
/// all of it when it has no more pages than that); None without
/// cachestat. The walk costs per page, the call about a page's worth: a
/// cached page took 0.24 µs to ask about alone, 16 in a row 0.7 µs, all
/// 482 of a 1.9 MB library 15 µs, each time `Auto` sampled it (2 % of a
/// warm replay of `find -exec cat`, which reads the library's header nine
/// times). What the cache holds comes in read-ahead windows and
/// folios many pages long, so a run of pages says little more than its
/// first one. Most files are cached whole or not at all:
/// [`RESIDENCY_FIRST`] places spread over the file say so for an eighth
/// of the calls; a file they find partly cached gets all of them.
fn sampled_residency(src: &Src) -> Option<f64> {
    let pages = src.len().div_ceil(4096);
    if pages == 0 {
        return Some(1.0);
    }
    let places = RESIDENCY_WINDOWS as u64;
    if pages <= places {
        let n = iolab::kernel::fs::cached_pages(&src.file, 0, src.len())?;
        return Some(n as f64 / pages as f64);
    }
    let page = |w: u64| iolab::kernel::fs::cached_pages(&src.file, w * pages / places * 4096, 1);
    // The first places at every (places / first)th: spread over the whole
    // file like the full sample, which then adds the places between.
    let stride = places / RESIDENCY_FIRST;
    let mut cached = 0;
    for k in 0..RESIDENCY_FIRST {
        cached += page(k * stride)?;
    }
    if cached == 0 || cached == RESIDENCY_FIRST {
        return Some(cached as f64 / RESIDENCY_FIRST as f64);
    }
    for w in (0..places).filter(|w| w % stride != 0) {
        cached += page(w)?;
    }
    Some(cached as f64 / places as f64)
}

/// The adaptive technique's state for a measured file (its length known):
/// what [`super::first_read::Auto`] reads with after its first read.
/// `repr(C)`: what a request's quick decision reads (the profile, the
/// file, the mappings, the state's first fields) lies together at the
/// start; the techniques a decision in full may pick come after.
#[repr(C)]
pub(crate) struct Adaptive {
    profile: ProfileRef,
    src: Arc<Src>,
    trace: bool,
    ahead: OnceLock<Option<Box<DirectAhead>>>,
    /// Made on first use: `None` inside when the file cannot be mapped.
    mapped: OnceLock<Option<Mapped>>,
    /// The file's first page alone, mapped for exact re-reads within it
    /// while the whole file is not ([`policy::HEAD_MAP_MAX`]).
    head: OnceLock<Option<Mapped>>,
    st: State,
    guard: Guard,
    stream: Stream,
    buffered: OnceLock<Buffered>,
    uring_seq: UringReader,
    uring_rand: UringReader,
    direct: OnceLock<Option<Direct>>,
    budget: Option<u64>,
    /// [`policy::cold_seq_mib_s`] of the profile, looked up at the first
    /// timed read (it scans the profile's measurements; most files a
    /// program opens are never timed).
    seq_mib_s: OnceLock<f64>,
    /// The last 2 MiB region probed for large folios ([`Adaptive::region_huge`]):
    /// `(region + 1) << 1 | huge`, 0 before any.
    huge: AtomicU64,
    /// Regions probed in a row that were not held in large folios.
    not_huge: AtomicU32,
}

impl Adaptive {
    /// Measures `src` (one `fstat`, which refuses what cannot be read at
    /// offsets) and starts its state; `first`: what its first read found
    /// of the page it starts in and of the directory
    /// ([`super::siblings::opened`]).
    pub(crate) fn new(
        src: Arc<Src>,
        profile: impl Into<ProfileRef>,
        budget: Option<u64>,
        first: First,
    ) -> Result<Self> {
        let profile = profile.into();
        let meta = src.meta()?;
        warn_device_once(&profile, &src.path, meta.dev);
        let st = State::new(src.len(), first);
        let a = Adaptive {
            stream: Stream::new(src.clone()),
            uring_seq: UringReader::new(src.clone(), profile.seq_depth),
            uring_rand: UringReader::new(src.clone(), profile.random_depth),
            buffered: OnceLock::new(),
            direct: OnceLock::new(),
            ahead: OnceLock::new(),
            budget,
            seq_mib_s: OnceLock::new(),
            huge: AtomicU64::new(0),
            not_huge: AtomicU32::new(0),
            trace: trace_policy(),
            mapped: OnceLock::new(),
            head: OnceLock::new(),
            profile,
            src,
            st,
            guard: Guard::default(),
        };
        let avail = a.available_at_open();
        a.st.available.store(avail, Relaxed);
        let fits = (a.src.len() as f64) <= avail as f64 * a.profile.fit_fraction;
        if !fits {
            a.refresh();
        }
        Ok(a)
    }

    /// Counts a read served before this state existed (the first read,
    /// see [`super::first_read`]) as if it had been decided here: a
    /// first read is never timed, and a small one is always one `pread`.
    pub(crate) fn seen(&self, off: u64, len: usize) {
        let _ = self.observe(off, len, 1);
    }

    /// Requests counted so far.
    #[cfg(test)]
    pub(crate) fn requests(&self) -> u64 {
        n_before(&self.st)
    }

    fn available_now(&self) -> u64 {
        self.budget.or_else(available_recent).unwrap_or(u64::MAX)
    }

    /// Available memory for the open's decision whether the file fits: the
    /// last value read when the file is a small share of it (no clock
    /// read, no /proc/meminfo: most files a program opens are small).
    fn available_at_open(&self) -> u64 {
        let last = LAST_AVAILABLE.load(Relaxed);
        if self.budget.is_none() && last > 0 && self.src.len() < last / 64 {
            return last;
        }
        self.available_now()
    }

    /// The mapping, made the first time it is asked for.
    fn mapped(&self) -> Option<&Mapped> {
        // A file too large to map on this machine is simply never mapped.
        self.mapped
            .get_or_init(|| Mapped::new(self.src.clone()).ok())
            .as_ref()
    }

    /// The mapping that copies `len` bytes at `off`: the whole file's once
    /// made; before, the first page's for a read that ends within it
    /// ([`policy::HEAD_MAP_MAX`]), made on first use; else the whole
    /// file's, made now.
    fn mapping_for(&self, off: u64, len: usize) -> Option<&Mapped> {
        if let Some(m) = self.made_mapping(off, len) {
            return Some(m);
        }
        if self.mapped.get().is_none() && policy::in_head(off, len) {
            return self
                .head
                .get_or_init(|| Mapped::head(self.src.clone()).ok())
                .as_ref();
        }
        self.mapped()
    }

    /// A mapping already made that copies `len` bytes at `off`, if any.
    fn made_mapping(&self, off: u64, len: usize) -> Option<&Mapped> {
        match (self.mapped.get(), self.head.get()) {
            (Some(Some(m)), _) => Some(m),
            (_, Some(Some(h))) if policy::in_head(off, len) => Some(h),
            _ => None,
        }
    }

    /// Samples the file's residency (see [`sampled_residency`]).
    fn refresh(&self) {
        let r = sampled_residency(&self.src).or_else(|| {
            iolab::cache::residency_sampled(&self.src.path, self.src.len(), RESIDENCY_WINDOWS)
                .ok()
                .map(|r| r.fraction())
        });
        self.st.resident.store(r.unwrap_or(0.0).to_bits(), Relaxed);
        self.st.sampled.store(true, Relaxed);
        self.st.available.store(self.available_now(), Relaxed);
    }

    /// Whether a request continues a stream (a run of requests in a row,
    /// or the end of the last stream), and the stream's bytes so far: a
    /// stream found by a run starts with the run's bytes.
    ///
    /// The counters here and in [`Auto::observe`] are updated with a load
    /// and a store, not an atomic read-modify-write: they only steer
    /// heuristics, a count two threads race on may lose one, and a locked
    /// instruction per counter cost a few percent of a cached 4 KiB read.
    fn stream(&self, off: u64, len: usize) -> (bool, u64) {
        let st = &self.st;
        let end = off.saturating_add(len as u64);
        let prev = st.last_end.load(Relaxed);
        st.last_end.store(end, Relaxed);
        let run = if prev == off {
            bump32(&st.run)
        } else {
            st.run.store(0, Relaxed);
            0
        };
        let stream_end = st.stream_end.load(Relaxed);
        let continues = len > 0 && off >= stream_end && off - stream_end <= policy::STREAM_SKIP;
        let sequential = run >= 2 || continues;
        let stream_bytes = if continues {
            add(&st.stream_bytes, len as u64)
        } else if sequential {
            let b = len as u64 * (run as u64 + 1);
            st.stream_bytes.store(b, Relaxed);
            b
        } else {
            0
        };
        if sequential {
            st.stream_end.store(end, Relaxed);
            add(&st.streamed, 1);
        }
        (sequential, stream_bytes)
    }

    /// Whether request `n` (counted from 0) samples residency again.
    fn sample_due(&self, n: u64) -> bool {
        n == FIRST_SAMPLE && !self.st.trusted || n >= self.st.next_refresh.load(Relaxed)
    }

    /// Marks the regions of a request read; whether one had been before
    /// (at most 64 regions per request: enough to see re-reads).
    fn mark(&self, off: u64, len: usize) -> bool {
        let st = &self.st;
        let mut reread = false;
        if len > 0 {
            let end = off.saturating_add(len as u64);
            let first = off >> st.chunk_shift;
            let last = ((end - 1) >> st.chunk_shift).min(st.chunks - 1);
            for c in first..=last.min(first + 63) {
                let bit = 1u64 << (c % 64);
                let word = st.touched.word(c / 64);
                let old = word.load(Relaxed);
                if old & bit != 0 {
                    reread = true;
                } else {
                    word.store(old | bit, Relaxed);
                    add(&st.touched_n, 1);
                }
            }
        }
        reread
    }

    /// Counts a timed small random read that waited `wait` ns beyond
    /// moving its bytes in the streak of hits ([`policy::HIT_STREAK`]).
    fn count_hit(&self, wait: u64) {
        let h = self.st.hits.load(Relaxed);
        self.st
            .hits
            .store(policy::hit_streak_next(h, wait), Relaxed);
    }

    /// Whether a read of `len` bytes at `off` repeats one of the last few
    /// small reads.
    fn seen_again(&self, off: u64, len: usize) -> bool {
        exact_key(off, len).is_some_and(|key| self.remembered(key))
    }

    /// Whether `key` ([`exact_key`]) is among the last few small reads.
    fn remembered(&self, key: u64) -> bool {
        let st = &self.st;
        st.again_key.load(Relaxed) == key || st.recent.iter().any(|k| k.load(Relaxed) == key)
    }

    /// The profile's cold sequential speed ([`policy::cold_seq_mib_s`]).
    fn seq_mib_s(&self) -> f64 {
        *self
            .seq_mib_s
            .get_or_init(|| policy::cold_seq_mib_s(&self.profile))
    }

    /// Whether a read of `len` bytes at `off` repeats one of the last few
    /// small reads; remembers it when it does not.
    fn again(&self, off: u64, len: usize) -> bool {
        let Some(key) = exact_key(off, len) else {
            return false;
        };
        let st = &self.st;
        if self.remembered(key) {
            st.again_key.store(key, Relaxed);
            return true;
        }
        let i = bump32(&st.recent_next) as usize % RECENT;
        st.recent[i].store(key, Relaxed);
        false
    }

    /// Updates what this reader has seen with one request and describes it.
    fn observe(&self, off: u64, len: usize, batch: usize) -> Situation {
        let st = &self.st;
        let n = add(&st.requests, 1) - 1;
        if self.sample_due(n) {
            self.refresh();
            if n >= st.next_refresh.load(Relaxed) {
                st.next_refresh.store(n + st.refresh_every, Relaxed);
            }
        }
        let follows = len > 0 && st.last_end.load(Relaxed) == off;
        let (sequential, stream_bytes) = self.stream(off, len);
        // The fraction read *before* this request: counting it would make
        // the first read of a small file look like "most of the file".
        let regions_read = st.touched_n.load(Relaxed);
        let fraction_read = regions_read as f64 / st.chunks as f64;
        let reread = self.mark(off, len);
        let exact_again = self.again(off, len);
        Situation {
            len,
            offset: off,
            file_len: self.src.len(),
            sequential,
            fraction_read,
            regions_read,
            waited_ns: st.waited_ns.load(Relaxed),
            reread,
            resident: f64::from_bits(st.resident.load(Relaxed)),
            range_cached: None,
            available: st.available.load(Relaxed),
            batch,
            requests: n_before(st),
            stream_bytes,
            direct_again: false,
            follows,
            dense: st.around.dense(),
            exact_again,
        }
    }

    /// Asks the kernel, once, to read the whole file ahead when the policy
    /// says so, then samples residency again (the file is now cached or on
    /// its way, which the next decisions should know).
    fn read_ahead_whole(&self, s: &Situation) {
        // Not before FIRST_SAMPLE requests: the spread is counted in chunks
        // of at least 1 MiB, so one 832-byte read of a 2 MiB library looks
        // like half of it (20 threads each read libc ahead in a replay of
        // python's imports, and waited for it).
        if self.st.read_ahead.load(Relaxed) || n_before(&self.st) < FIRST_SAMPLE {
            return;
        }
        // Nor for a file read mostly in order: its stream reads it (a
        // table scan's few interior pages wait behind the stream's reads,
        // and looked like random reads that had waited long).
        if self.st.streamed.load(Relaxed) * 2 >= n_before(&self.st) {
            return;
        }
        let Some(why) = policy::read_ahead_whole(s, &self.profile) else {
            return;
        };
        if self.st.read_ahead.swap(true, Relaxed) {
            return;
        }
        // The kernel reads at most max(read-ahead window, largest device
        // request) per WILLNEED call, so one call per step of that size
        // (128 KiB, the smallest default window, when the device is not
        // known): no part is skipped, and the device gets requests as large
        // as it takes (128 KiB steps left this reading 20 % behind a
        // mapping's 8 MiB read-around here). Each call only queues the
        // reads; it waits only when the device's queue is full. (Asking
        // 16 MiB at a time, the next once the last had been read in, took
        // as long on the train half's look-ups and the test half's shard
        // loader, with a worse 99th percentile.)
        let step = iolab::file::block_device_of(&self.src.path)
            .and_then(|d| {
                Some(
                    d.queue_num("read_ahead_kb")?
                        .max(d.queue_num("max_sectors_kb")?)
                        << 10,
                )
            })
            .unwrap_or(WILLNEED_STEP)
            .max(WILLNEED_STEP);
        let mut r = Ok(());
        let mut at = 0u64;
        while at < self.src.len() && r.is_ok() {
            let n = step.min(self.src.len() - at);
            r = iolab::kernel::fs::fadvise_range(&self.src.file, at, n, libc::POSIX_FADV_WILLNEED);
            at += n;
        }
        if self.trace {
            eprintln!(
                "policy: {}: whole file read ahead ({} bytes; {why}: {:.0} % read, {:.1} ms waited){}",
                self.src.path.display(),
                self.src.len(),
                s.fraction_read * 100.0,
                s.waited_ns as f64 / 1e6,
                r.err().map_or(String::new(), |e| format!(": {e}"))
            );
        }
        self.refresh();
    }

    /// Reads the region of `off` in the background when its misses have
    /// paid for it ([`Around::due`]), before the read at `off` itself,
    /// which then waits for the region: that wait is what the region
    /// cost. Whether it did.
    fn read_around(&self, off: u64) -> bool {
        let Some((start, end)) = self.st.around.due(off, self.seq_mib_s()) else {
            return false;
        };
        let end = end.min(self.src.len());
        let r = iolab::kernel::fs::fadvise_range(
            &self.src.file,
            start,
            end - start,
            libc::POSIX_FADV_WILLNEED,
        );
        if self.trace {
            eprintln!(
                "policy: {}: bytes {start}..{end} read around the misses of their region{}",
                self.src.path.display(),
                r.as_ref().err().map_or(String::new(), |e| format!(": {e}"))
            );
        }
        r.is_ok()
    }

    /// The way to read one request, and whether it continues a stream
    /// (`before`: a batch's requests are judged on what was read before it).
    fn choose(
        &self,
        off: u64,
        len: usize,
        batch: usize,
        before: Option<&Before>,
    ) -> (Choice, bool) {
        let mut s = self.observe(off, len, batch);
        if let Some(b) = before {
            b.apply(&mut s, off, len, &self.st);
        }
        self.read_ahead_whole(&s);
        let mut d = policy::decide(&s, &self.profile);
        // O_DIRECT bypasses the cache: probe what it would read first
        // (cachestat, no I/O), and decide again knowing.
        if policy::bypasses_cache(d.choice) {
            s.range_cached = Some(self.range_cached(off, len, d.choice));
            d = policy::decide(&s, &self.profile);
        }
        if d.choice == Choice::Direct {
            let end = off.saturating_add(len as u64);
            let mut seen = self
                .st
                .direct_reads
                .get_or_init(Box::default)
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            if seen.overlaps(off, end) {
                s.direct_again = true;
                d = policy::decide(&s, &self.profile);
            }
            if d.choice == Choice::Direct {
                seen.note(off, end);
            }
        }
        if d.choice == Choice::Mapped
            && self.made_mapping(off, len).is_none()
            && n_before(&self.st) <= FIRST_SAMPLE
        {
            d = policy::Decision {
                choice: Choice::Pread,
                reason: "few requests of this file yet: one pread rather than a mapping",
            };
        }
        if self.trace {
            eprintln!(
                "policy: {} offset {off} len {len}: {:?} ({}) [seq {} read {:.2} reread {} resident {:.2} range {:?}]",
                self.src.path.display(),
                d.choice,
                d.reason,
                s.sequential,
                s.fraction_read,
                s.reread,
                s.resident,
                s.range_cached
            );
        }
        (d.choice, s.sequential)
    }

    /// Fraction of what `c` would read for a request at `off` of `len`
    /// bytes that is in the page cache: the request itself, or for the
    /// read-ahead stream the window it fills (unknown counts as not
    /// cached: the guard still watches). Sampled: runs of 16 pages at four
    /// places of the span (cachestat walks the cache at 0.1 µs a page: all
    /// of an 8 MiB window is 0.2 ms). A stream's window found uncached is
    /// not probed again until a request passes it.
    fn range_cached(&self, off: u64, len: usize, c: Choice) -> f64 {
        let w = &self.profile.whole;
        let span = match c {
            Choice::Ahead => (w.block as u64 * w.depth as u64).max(len as u64),
            _ => len as u64,
        };
        let span = span.min(self.src.len().saturating_sub(off)).max(1);
        let probed = &self.st.probed_to;
        if c == Choice::Ahead
            && off >= self.st.probed_from.load(Relaxed)
            && off < probed.load(Relaxed)
        {
            return 0.0;
        }
        const RUN: u64 = 16 * 4096;
        let runs: Vec<(u64, u64)> = if span <= 4 * RUN {
            vec![(off, span)]
        } else {
            (0..4)
                .map(|k| (off + k * (span / 4) / 4096 * 4096, RUN))
                .collect()
        };
        let (mut cached, mut pages) = (0, 0);
        for (at, n) in runs {
            match iolab::kernel::fs::cached_pages(&self.src.file, at, n) {
                Some(c) => cached += c,
                None => return 0.0,
            }
            pages += n.div_ceil(4096);
        }
        let f = cached as f64 / pages.max(1) as f64;
        if c == Choice::Ahead && f < policy::WARM {
            self.st.probed_from.store(off, Relaxed);
            probed.store(off + span, Relaxed);
        }
        f
    }

    /// A read out of order served from the file's O_DIRECT stream when the
    /// stream's window holds all of it (the data is in memory already, or
    /// on its way; the page cache does not have it).
    fn within_stream(&self, off: u64, buf: &mut [u8]) -> Option<Result<usize>> {
        let r = self.ahead.get()?.as_ref()?.read_within(off, buf)?;
        if self.trace {
            eprintln!(
                "policy: {} offset {off} len {}: served from the read-ahead stream's window",
                self.src.path.display(),
                buf.len()
            );
        }
        Some(r)
    }

    /// A read that starts where this file's last O_DIRECT read ended: it
    /// counts ([`policy::keeps_direct_tail`]), and is copied from the tail
    /// that read kept when it lies within it (read by this thread).
    fn after_direct(&self, off: u64, buf: &mut [u8]) -> Option<Result<usize>> {
        let st = &self.st;
        if st.direct_end.load(Relaxed) != off {
            return None;
        }
        st.direct_end.store(u64::MAX, Relaxed);
        add(&st.tails, 1);
        let n = self.direct.get()?.as_ref()?.take_kept(off, buf)?;
        if self.trace {
            eprintln!(
                "policy: {} offset {off} len {n}: copied from the bytes the O_DIRECT read before it read past its end",
                self.src.path.display()
            );
        }
        Some(Ok(n))
    }

    /// Before an O_DIRECT read of `len` bytes at `off`: counts it, notes
    /// where it ends, and says whether it reads a tail to keep.
    fn before_direct(&self, off: u64, len: usize) {
        let st = &self.st;
        let directs = add(&st.directs, 1) - 1;
        st.direct_end.store(off.saturating_add(len as u64), Relaxed);
        if let Some(Some(d)) = self.direct.get() {
            d.keep_tails(policy::keeps_direct_tail(st.tails.load(Relaxed), directs));
        }
    }

    /// A read in order of cached data that the rules read with `pread`,
    /// copied from the mapping instead where the page cache holds its
    /// region in large folios ([`policy::huge_in_order`]).
    fn huge_choice(&self, c: Choice, sequential: bool, off: u64, len: usize) -> Choice {
        let candidate = c == Choice::Pread
            && sequential
            && policy::huge_in_order(len, self.src.len())
            && n_before(&self.st) > FIRST_SAMPLE
            && f64::from_bits(self.st.resident.load(Relaxed)) >= policy::WARM;
        if candidate && self.region_huge(off) {
            Choice::Mapped
        } else {
            c
        }
    }

    /// Whether the 2 MiB region of `off` is held in large folios: its
    /// first byte touched through the mapping, a touch
    /// [`policy::LARGE_PROBE_AT`] further on finds it mapped already
    /// ([`policy::HUGE_TOUCH_NS`]). Probed once per region a stream enters
    /// (two touches, which the copies from a large folio would make
    /// anyway), spaced out after regions found in small pages
    /// ([`policy::huge_probe_due`]).
    fn region_huge(&self, off: u64) -> bool {
        let region = off / policy::HUGE_REGION;
        let known = self.huge.load(Relaxed);
        if known >> 1 == region + 1 {
            return known & 1 == 1;
        }
        let last = (known != 0).then(|| ((known >> 1) - 1, known & 1 == 1));
        if !policy::huge_probe_due(region, last, self.not_huge.load(Relaxed)) {
            return false;
        }
        let start = region * policy::HUGE_REGION;
        let huge = start + policy::HUGE_REGION <= self.src.len()
            && self.mapped().is_some_and(|m| {
                m.touch_ns(start).is_some()
                    && m.touch_ns(start + policy::LARGE_PROBE_AT)
                        .is_some_and(|ns| ns < policy::HUGE_TOUCH_NS)
            });
        self.huge.store((region + 1) << 1 | huge as u64, Relaxed);
        if huge {
            self.not_huge.store(0, Relaxed);
        } else {
            bump32(&self.not_huge);
        }
        if self.trace {
            eprintln!(
                "policy: {}: bytes {start}.. {} in large folios: {}",
                self.src.path.display(),
                if huge { "held" } else { "not held" },
                if huge {
                    "reads in order copied from the mapping"
                } else {
                    "one pread each"
                }
            );
        }
        huge
    }

    /// Gives the guard a timed request of the technique `c`, or a `pread`
    /// sample for it, that read `bytes` in `ns`.
    fn tell_guard(&self, arm: Option<Arm>, c: Choice, ns: u64, bytes: usize) {
        match arm {
            Some(Arm::Timed) => self.guard.technique(ns, bytes),
            Some(Arm::Sample) => {
                let from = c.to_string();
                let n = n_before(&self.st);
                if let Some(s) = self.guard.sample(ns, bytes, &self.src.path, &from, n) {
                    if self.trace {
                        eprintln!("policy: guard: {s}");
                    }
                }
            }
            _ => {}
        }
    }

    /// [`Adaptive::backend`], with the mapping that serves this read.
    fn backend_for(&self, c: Choice, off: u64, len: usize) -> &dyn Backend {
        match c {
            Choice::Mapped => match self.mapping_for(off, len) {
                Some(m) => m,
                None => &self.stream,
            },
            _ => self.backend(c),
        }
    }

    fn backend(&self, c: Choice) -> &dyn Backend {
        match c {
            Choice::Mapped => match self.mapped() {
                Some(m) => m,
                None => &self.stream,
            },
            Choice::Pread => &self.stream,
            // A block larger than the file would only cost memory.
            Choice::Buffered { block } => self.buffered.get_or_init(|| {
                let whole = self.src.len().div_ceil(4096).max(1) * 4096;
                Buffered::new(self.src.clone(), block.min(whole as usize))
            }),
            Choice::Uring { depth } if depth == self.profile.random_depth => &self.uring_rand,
            Choice::Uring { .. } => &self.uring_seq,
            Choice::Direct => match self
                .direct
                .get_or_init(|| Direct::new(self.src.clone()).ok())
            {
                Some(d) => d,
                None => &self.uring_seq,
            },
            Choice::Ahead => match self.ahead.get_or_init(|| {
                let w = &self.profile.whole;
                DirectAhead::new(self.src.clone(), w.block, w.depth as usize)
                    .ok()
                    .map(Box::new)
            }) {
                Some(a) => &**a,
                None => &self.stream,
            },
        }
    }
}

/// Requests this reader has been asked (including the one being decided).
fn n_before(st: &State) -> u64 {
    st.requests.load(Relaxed)
}

/// What a batch of `read_many` is decided on: the regions of the file read
/// before its first request. The batch's own requests say where it reads,
/// not where later reads will go: 10,000 random 4 KiB reads touch 91 % of
/// a 4 GiB file's 1 MiB regions while reading 1 % of its bytes, and judged
/// request by request they read the whole file ahead (and go to the
/// mapping as "re-reads") halfway through the batch. A next batch is
/// decided on all of them.
struct Before {
    regions: u64,
    touched: Vec<u64>,
}

impl Before {
    fn take(st: &State) -> Before {
        Before {
            regions: st.touched_n.load(Relaxed),
            touched: (0..st.touched.words())
                .map(|i| st.touched.word(i).load(Relaxed))
                .collect(),
        }
    }

    /// `s` as it was before the batch: its spread, and whether the
    /// request's regions had been read then.
    fn apply(&self, s: &mut Situation, off: u64, len: usize, st: &State) {
        s.regions_read = self.regions;
        // A batch's misses are not counted region by region (its reads
        // wait together): the time it waited decides alone.
        s.dense = true;
        s.fraction_read = self.regions as f64 / st.chunks as f64;
        if len > 0 {
            let first = off >> st.chunk_shift;
            let end = off.saturating_add(len as u64);
            let last = ((end - 1) >> st.chunk_shift).min(st.chunks - 1);
            s.reread = (first..=last.min(first + 63))
                .any(|c| self.touched[(c / 64) as usize] & (1u64 << (c % 64)) != 0);
        }
    }
}

impl Adaptive {
    /// A read neither timed nor sampled, with `backend` as `arm` chose it:
    /// a `pread` is made here, inlined, not through `self.stream`, one
    /// function less for its result to return through (see
    /// `backend::pread_full`).
    #[inline(always)]
    fn untimed(
        &self,
        arm: Option<Arm>,
        backend: &dyn Backend,
        off: u64,
        buf: &mut [u8],
    ) -> Result<usize> {
        match arm {
            None | Some(Arm::FellBack) => self.src.pread_full(off, buf),
            _ => backend.read_at(off, buf),
        }
    }

    /// The choice for a read of a file found cached (or, between samples,
    /// a small random read of a file whose such reads keep finding the
    /// cache: [`policy::HIT_STREAK`]), made without the
    /// situation and the rules where it can only be one: a read not in
    /// order is one `pread`, a read in order is copied from the mapping
    /// (once made) where [`policy::maps_in_order`] says so and is otherwise
    /// a `pread` too. Left to [`Self::choose`]: a read where residency is
    /// sampled again; one of a file that has had as many requests as pages
    /// (its re-reads may then go to the mapping: see the policy's small
    /// random reads); the same small range as a recent read until a
    /// decision in full has made the mapping it is copied from (a header
    /// read again); any read while an O_DIRECT stream
    /// exists whose window might hold it. What [`Self::observe`] counts is
    /// counted the same. Deciding a cached read in full (the situation,
    /// the rules, the checks after them) was half of the 45 to 50 ns `Auto`
    /// added to a cached 16-byte `pread` of some 350 ns: a key-value
    /// store's warm look-ups are 3,000 such reads, a table scan 50,000
    /// reads in order of 4 KiB.
    fn quick(&self, off: u64, len: usize) -> Option<(Choice, bool)> {
        let st = &self.st;
        let n = st.requests.load(Relaxed);
        if self.trace || len == 0 || self.sample_due(n) || self.ahead.get().is_some() {
            return None;
        }
        let warm = f64::from_bits(st.resident.load(Relaxed)) >= policy::WARM;
        // As `stream` will find it: a run of two in a row, or the stream's
        // continuation.
        let stream_end = st.stream_end.load(Relaxed);
        let sequential = off >= stream_end && off - stream_end <= policy::STREAM_SKIP
            || st.last_end.load(Relaxed) == off && st.run.load(Relaxed) >= 1;
        let p = &self.profile;
        // A file not cached whole whose small random reads keep finding
        // the page cache (the part a program looks up is in memory, the
        // rest is not): its reads between samples are as of cached data.
        if !warm
            && (sequential
                || len > p.small_max
                || st.read_ahead.load(Relaxed)
                || !policy::hit_streak_skips(st.hits.load(Relaxed), n))
        {
            return None;
        }
        let choice = if !sequential {
            let map_small = p.mmap_small_warm && len <= p.small_max;
            let again = map_small && self.seen_again(off, len);
            if again && self.made_mapping(off, len).is_some() {
                // As the decision in full reads an exact re-read of cached
                // data, once it has made the mapping (SQLite's header).
                Choice::Mapped
            } else if again || map_small && n + 1 >= self.src.len().div_ceil(4096) {
                return None;
            } else {
                Choice::Pread
            }
        } else if len <= p.small_max && policy::maps_in_order(off, len, self.src.len(), p) {
            // Made by a decision in full (which waits for the file's
            // first requests).
            self.mapped.get()?;
            Choice::Mapped
        } else {
            Choice::Pread
        };
        st.requests.store(n + 1, Relaxed);
        self.stream(off, len);
        self.mark(off, len);
        self.again(off, len);
        Some((choice, sequential))
    }
}

impl Backend for Adaptive {
    fn read_at(&self, off: u64, buf: &mut [u8]) -> Result<usize> {
        let quick = self.quick(off, buf.len());
        // Only a read decided in full is timed: the quick ones are of
        // cached data, or between the samples of a streak of hits.
        let decided = quick.is_none();
        let (c, sequential) = quick.unwrap_or_else(|| self.choose(off, buf.len(), 1, None));
        let c = self.huge_choice(c, sequential, off, buf.len());
        if let Some(r) = self.after_direct(off, buf) {
            return r;
        }
        if !sequential && c != Choice::Ahead {
            if let Some(r) = self.within_stream(off, buf) {
                return r;
            }
        }
        let arm = (c != Choice::Pread).then(|| self.guard.arm());
        let backend: &dyn Backend = match arm {
            None | Some(Arm::Sample | Arm::FellBack) => &self.stream,
            Some(Arm::Technique | Arm::Timed) => self.backend_for(c, off, buf.len()),
        };
        if c == Choice::Direct && matches!(arm, Some(Arm::Technique | Arm::Timed)) {
            self.before_direct(off, buf.len());
        }
        // Timed while it may still decide a read ahead (two clock reads,
        // against a read that may wait for the device): random reads from
        // the second request on (most files of a source tree are read
        // once; a stream's waits are the read-ahead's business); and for
        // the guard.
        let st = &self.st;
        let waiting = decided
            && !sequential
            && n_before(st) > 1
            && !st.read_ahead.load(Relaxed)
            && f64::from_bits(st.resident.load(Relaxed)) < policy::WARM;
        if !waiting && !matches!(arm, Some(Arm::Timed | Arm::Sample)) {
            return self.untimed(arm, backend, off, buf);
        }
        // A small random read through the page cache counts against its
        // region; the one that finds the region due reads it whole first.
        let around = waiting && c == Choice::Pread && buf.len() <= self.profile.small_max;
        let bought = around && self.read_around(off);
        let t0 = std::time::Instant::now();
        let r = backend.read_at(off, buf);
        let ns = t0.elapsed().as_nanos() as u64;
        let bytes = *r.as_ref().unwrap_or(&buf.len());
        if waiting {
            let wait = policy::avoidable_wait(ns, bytes, self.seq_mib_s());
            add(&st.waited_ns, wait);
            match (around, bought) {
                (true, true) => st.around.bought(wait),
                (true, false) => st.around.miss(off, wait),
                _ => {}
            }
            if around {
                self.count_hit(wait);
            }
        }
        self.tell_guard(arm, c, ns, bytes);
        r
    }

    fn switched(&self) -> Option<Switch> {
        self.guard.switch()
    }

    fn read_many(&self, reqs: &mut [ReadReq<'_>], done: &mut dyn FnMut(usize, &ReadReq<'_>)) {
        let batch = reqs.len();
        let before = Before::take(&self.st);
        let choices: Vec<Choice> = reqs
            .iter()
            .map(|r| self.choose(r.offset, r.buf.len(), batch, Some(&before)).0)
            .collect();
        // A batch's time counts as waiting too (see `read_at`): batches of
        // random reads are what the whole file's read-ahead saves.
        let st = &self.st;
        let t0 = (!st.read_ahead.load(Relaxed)
            && f64::from_bits(st.resident.load(Relaxed)) < policy::WARM)
            .then(std::time::Instant::now);
        // Cheap choices (copies out of memory) inline; the rest grouped by
        // technique and handed over as batches.
        let mut groups: Vec<(Choice, Vec<usize>)> = Vec::new();
        for (i, c) in choices.iter().enumerate() {
            match c {
                Choice::Mapped | Choice::Pread | Choice::Buffered { .. } | Choice::Ahead => {
                    let r = &mut reqs[i];
                    r.result = Some(self.backend(*c).read_at(r.offset, r.buf));
                    done(i, &reqs[i]);
                }
                _ => match groups.iter_mut().find(|(g, _)| g == c) {
                    Some((_, v)) => v.push(i),
                    None => groups.push((*c, vec![i])),
                },
            }
        }
        for (c, idx) in groups {
            let mut sub: Vec<ReadReq<'_>> = idx
                .iter()
                .map(|&i| ReadReq::new(reqs[i].offset, std::mem::take(&mut reqs[i].buf)))
                .collect();
            self.backend(c).read_many(&mut sub, &mut |_, _| {});
            for (k, &i) in idx.iter().enumerate() {
                let s = &mut sub[k];
                reqs[i].buf = std::mem::take(&mut s.buf);
                reqs[i].result = s.result.take();
                done(i, &reqs[i]);
            }
        }
        if let Some(t0) = t0 {
            let bytes = reqs.iter().map(|r| r.buf.len()).sum();
            let ns = t0.elapsed().as_nanos() as u64;
            add(
                &st.waited_ns,
                policy::avoidable_wait(ns, bytes, self.seq_mib_s()),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{Options, Reader, Technique};

    fn mapped_here(path: &std::path::Path) -> bool {
        mapped_bytes(path) > 0
    }

    #[test]
    fn a_file_read_a_few_times_is_never_mapped_one_read_often_is() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("few");
        let data: Vec<u8> = (0..1u32 << 20).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let r = Reader::open(&path, Options::new(Technique::Auto)).unwrap();
        let mut buf = vec![0u8; 4096];
        // The same eight blocks in turn, apart (not in order, and more
        // than the exact re-reads it looks for): re-reads of a file that fits, which the policy sends
        // to the mapping once the file has had more requests than it has
        // pages (256).
        let at = |i: usize| 8192 + (i % 8) * 3 * 4096;
        for i in 0..200 {
            r.read_exact_at(at(i) as u64, &mut buf).unwrap();
            assert_eq!(&buf[..], &data[at(i)..at(i) + 4096]);
        }
        assert!(!mapped_here(&path), "mapped after 200 reads of 256 pages");
        for i in 0..64 {
            r.read_exact_at(at(i) as u64, &mut buf).unwrap();
            assert_eq!(&buf[..], &data[at(i)..at(i) + 4096]);
        }
        assert!(mapped_here(&path), "re-read often and never mapped");
        drop(r);
        assert!(!mapped_here(&path), "the mapping outlived the reader");
    }

    /// Bytes of this process's mappings of `path` (/proc/self/maps).
    fn mapped_bytes(path: &std::path::Path) -> u64 {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        maps.lines()
            .filter(|l| l.ends_with(&*path.to_string_lossy()))
            .map(|l| {
                let range = l.split(' ').next().unwrap();
                let (a, b) = range.split_once('-').unwrap();
                u64::from_str_radix(b, 16).unwrap() - u64::from_str_radix(a, 16).unwrap()
            })
            .sum()
    }

    #[test]
    fn a_header_read_again_is_copied_from_its_page_mapped_alone_and_shows_what_was_written() {
        use std::os::unix::fs::FileExt;
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("db");
        let mut data: Vec<u8> = (0..1u32 << 20).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let r = Reader::open(&path, Options::new(Technique::Auto)).unwrap();
        let mut head = [0u8; 16];
        let mut page = vec![0u8; 4096];
        let check = |data: &[u8], off: usize, buf: &mut [u8]| {
            r.read_exact_at(off as u64, buf).unwrap();
            assert!(buf[..] == data[off..off + buf.len()], "bytes at {off}");
        };
        // A database's look-ups: its header's 16 bytes before each, then
        // a page somewhere (never the same twice).
        for i in 0..40usize {
            check(&data, 24, &mut head);
            check(&data, (1 + i * 5) * 4096, &mut page);
        }
        assert_eq!(
            mapped_bytes(&path),
            crate::policy::HEAD_MAP_MAX,
            "a header read 40 times: not mapped, or more than its page"
        );
        // Another writer changes the header: the next read sees it.
        let w = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        w.write_all_at(&[0xAB; 16], 24).unwrap();
        data[24..40].fill(0xAB);
        for _ in 0..20 {
            check(&data, 24, &mut head);
        }
        // Re-reads of eight blocks, more requests than the file has pages:
        // the policy maps the whole file for them, and the header is read
        // right through either mapping.
        let at = |i: usize| 8192 + (i % 8) * 3 * 4096;
        for i in 0..300 {
            check(&data, at(i), &mut page);
            check(&data, 24, &mut head);
        }
        assert!(
            mapped_bytes(&path) >= data.len() as u64,
            "re-read often and the whole file never mapped"
        );
        drop(r);
        assert_eq!(mapped_bytes(&path), 0, "a mapping outlived the reader");
    }

    #[test]
    fn reads_in_order_of_a_large_cold_file_through_the_direct_stream_are_exact() {
        use crate::policy::{self, Choice, Situation};
        use crate::profile::Profile;
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("big");
        let len = policy::AHEAD_MIN_FILE as usize + 12_345;
        let data: Vec<u8> = (0..len as u64)
            .map(|i| (i.wrapping_mul(0x9E37_79B9) >> 11) as u8)
            .collect();
        std::fs::write(&path, &data).unwrap();
        iolab::cache::evict(&path).unwrap();
        let mut p = Profile::thesis_defaults();
        p.seq_direct = true;
        // The decision the reads below get from their third on.
        let s = Situation {
            len: 10_240,
            offset: 20_480,
            file_len: len as u64,
            sequential: true,
            fraction_read: 0.0,
            regions_read: 1,
            waited_ns: 0,
            reread: true,
            resident: 0.0,
            range_cached: None,
            available: 1 << 30,
            batch: 1,
            requests: 2,
            stream_bytes: policy::AHEAD_MIN_STREAM,
            direct_again: false,
            follows: true,
            dense: false,
            exact_again: false,
        };
        assert_eq!(policy::decide(&s, &p).choice, Choice::Ahead);
        let opts = Options::new(Technique::Auto)
            .profile(std::sync::Arc::new(p))
            .memory_budget(1 << 30);
        let r = Reader::open(&path, opts).unwrap();
        // tar's 10 KiB records, to the end; then from the start again.
        read_in_order_twice(&r, &data, 10_240);
    }

    /// Reads all of `r` in order in pieces of `piece` bytes, twice, and
    /// checks every byte against `data` and the end.
    fn read_in_order_twice(r: &Reader, data: &[u8], piece: usize) {
        let mut buf = vec![0u8; piece];
        for pass in 0..2 {
            let mut off = 0usize;
            while off < data.len() {
                let n = r.read_at(off as u64, &mut buf).unwrap();
                assert!(n > 0, "pass {pass}: nothing at {off}");
                assert!(
                    buf[..n] == data[off..off + n],
                    "pass {pass}: bytes at {off}"
                );
                off += n;
            }
            assert_eq!(r.read_at(data.len() as u64, &mut buf).unwrap(), 0);
        }
    }

    #[test]
    fn large_reads_in_order_of_a_cached_file_are_exact_from_the_mapping_or_pread() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("big");
        let len = 16usize << 20;
        let data: Vec<u8> = (0..len as u64)
            .map(|i| (i.wrapping_mul(0x9E37_79B9) >> 11) as u8)
            .collect();
        std::fs::write(&path, &data).unwrap();
        iolab::cache::warm(&path, len as u64).unwrap();
        let r = Reader::open(&path, Options::new(Technique::Auto)).unwrap();
        // A compressor's 128 KiB pieces, to the end, twice: each region's
        // region probed for large folios (and the mapping made for it)
        // whatever it finds.
        read_in_order_twice(&r, &data, 128 << 10);
    }

    /// Whether the page `off` bytes into a fresh mapping of `path` is in
    /// its page table after a touch of the first byte alone, from
    /// `/proc/self/pagemap` (bit 63: present): the kernel's own word on
    /// how much one fault mapped.
    fn mapped_by_first_touch(path: &std::path::Path, off: u64) -> bool {
        use std::io::{Read, Seek, SeekFrom};
        let f = std::fs::File::open(path).unwrap();
        let len = f.metadata().unwrap().len() as usize;
        let m = iolab::kernel::mman::Mapping::new(&f, len).unwrap();
        std::hint::black_box(m.bytes()[0]);
        let page = (m.ptr() as u64 + off) / 4096;
        let mut pm = std::fs::File::open("/proc/self/pagemap").unwrap();
        pm.seek(SeekFrom::Start(page * 8)).unwrap();
        let mut e = [0u8; 8];
        pm.read_exact(&mut e).unwrap();
        u64::from_le_bytes(e) >> 63 == 1
    }

    #[test]
    fn the_large_folio_probe_agrees_with_the_page_table_on_large_and_small_writes() {
        let d = tempfile::tempdir().unwrap();
        let len = 8usize << 20;
        let data: Vec<u8> = (0..len as u64).map(|i| (i * 7 % 253) as u8).collect();
        // Written in 1 MiB pieces (large folios where the file system
        // has them), and 4 KiB at a time (4 KiB folios).
        for (name, piece) in [("large", 1usize << 20), ("small", 4096)] {
            let path = d.path().join(name);
            let mut f = std::fs::File::create(&path).unwrap();
            for c in data.chunks(piece) {
                std::io::Write::write_all(&mut f, c).unwrap();
            }
            drop(f);
            let expected = mapped_by_first_touch(&path, crate::policy::LARGE_PROBE_AT);
            let r = Reader::open(&path, Options::new(Technique::Auto)).unwrap();
            // The probe times a touch: an interrupt in it can make a large
            // folio look small, so a fresh state probes up to three times.
            let agrees = (0..3).any(|_| {
                let profile = std::sync::Arc::new(crate::profile::Profile::thesis_defaults());
                let first = crate::siblings::First::default();
                let a = super::Adaptive::new(r.imp.src().clone(), profile, None, first).unwrap();
                a.region_huge(0) == expected
            });
            assert!(
                agrees,
                "{name}: the probe never found what the page table shows ({expected})"
            );
            if name == "small" {
                assert!(!expected, "one fault mapped 4 KiB folios 128 KiB on");
            }
            // Whatever it found, the copies are the file's bytes.
            read_in_order_twice(&r, &data, 16 << 10);
        }
    }

    #[test]
    fn a_buffered_readers_remainder_after_an_o_direct_read_is_kept_from_it() {
        use crate::profile::Profile;
        let d = tempfile::tempdir().unwrap();
        let (path, before) = cold_file(d.path(), 16 << 20);
        assert!(
            before < 0.01,
            "{} stays cached after eviction",
            path.display()
        );
        let data = std::fs::read(&path).unwrap();
        iolab::cache::evict(&path).unwrap();
        let mut p = Profile::thesis_defaults();
        p.seq_direct = true;
        let opts = Options::new(Technique::Auto)
            .profile(std::sync::Arc::new(p))
            .memory_budget(1 << 30);
        let r = Reader::open(&path, opts).unwrap();
        // A loader's records in shuffled order, each read as a buffered
        // reader reads it: most of it straight, the rest (4 KiB) through
        // its buffer, from where the first read ended.
        let (body, rest) = (200_000usize, 4096usize);
        let mut big = vec![0u8; body];
        let mut tail = vec![0u8; rest];
        let mut ends = Vec::new();
        for i in 0..24usize {
            let off = (i * 37 % 24) * 650_000 + 1234;
            assert_eq!(r.read_at(off as u64, &mut big).unwrap(), body);
            assert!(big[..] == data[off..off + body], "record {i}");
            let at = off + body;
            assert_eq!(r.read_at(at as u64, &mut tail).unwrap(), rest);
            assert!(tail[..] == data[at..at + rest], "remainder of record {i}");
            ends.push(at);
        }
        // From the second record on, the remainder came from the bytes its
        // O_DIRECT read kept, not through the page cache: the page only the
        // remainder reaches (the one after the record's last) is not cached.
        // Apart from the guard's samples: a record it read with `pread`
        // (one in SAMPLE_GAP) had no O_DIRECT read to keep from.
        let file = std::fs::File::open(&path).unwrap();
        let map = iolab::kernel::mman::Mapping::new(&file, data.len()).unwrap();
        let through_cache: Vec<usize> = ends[1..]
            .iter()
            .filter(|&&at| map.residency_pages(at / 4096 + 1, 1).unwrap().0 > 0)
            .copied()
            .collect();
        let samples = ends.len() / crate::guard::SAMPLE_GAP as usize;
        assert!(
            through_cache.len() <= samples,
            "remainders read through the page cache at {through_cache:?}"
        );
    }

    #[test]
    fn bytes_read_with_o_direct_are_known_again_by_their_range() {
        let mut d = super::DirectReads::default();
        d.note(1000, 2000);
        assert!(d.overlaps(1500, 1600));
        assert!(d.overlaps(0, 1001));
        assert!(
            !d.overlaps(2000, 3000),
            "a range that starts where it ended"
        );
        assert!(!d.overlaps(0, 1000));
        // The ring keeps the last DIRECT_READS ranges.
        for k in 0..super::DIRECT_READS as u64 {
            d.note(10_000 + k * 10, 10_005 + k * 10);
        }
        assert!(!d.overlaps(1000, 2000), "the oldest range was let go");
        assert!(d.overlaps(10_000, 10_001));
    }

    #[test]
    fn what_a_quick_decision_reads_lies_in_the_first_cache_lines() {
        use super::{Adaptive, State};
        use std::mem::{offset_of, size_of};
        // The state's fields every request reads, up to the last of them.
        let hot_end = offset_of!(State, direct_end) + 8;
        assert!(hot_end <= 192, "{hot_end} bytes");
        // The profile, the file and the mappings before the state.
        let st = offset_of!(Adaptive, st);
        assert!(st + hot_end <= 384, "state at {st}");
        // The rarely used parts boxed: an open file's state stays small.
        assert!(size_of::<Adaptive>() <= 1024, "{}", size_of::<Adaptive>());
    }

    #[test]
    fn the_region_bitmap_keeps_its_first_word_inline_and_the_rest_apart() {
        use std::sync::atomic::Ordering::Relaxed;
        let small = super::Touched::new(3);
        assert_eq!(small.words(), 1);
        assert!(small.rest.is_empty());
        let big = super::Touched::new(200);
        assert_eq!(big.words(), 4);
        for i in 0..4 {
            big.word(i).store(1 << i, Relaxed);
        }
        let got: Vec<u64> = (0..4).map(|i| big.word(i).load(Relaxed)).collect();
        assert_eq!(got, vec![1, 2, 4, 8]);
    }

    #[test]
    fn a_scan_that_read_a_page_ahead_of_itself_stays_one_stream() {
        use crate::policy::STREAM_SKIP;
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("db");
        std::fs::write(&path, vec![1u8; 4 << 20]).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        let src = std::sync::Arc::new(crate::Src::new(path, file));
        let profile = crate::profile::process_profile();
        let a =
            super::Adaptive::new(src, profile, None, crate::siblings::First::default()).unwrap();
        let page = 4096u64;
        // Three pages in order: a stream.
        for k in 0..3 {
            a.stream(k * page, page as usize);
        }
        assert!(a.stream(3 * page, page as usize).0);
        // A page well ahead read out of order, then the scan goes on.
        assert!(!a.stream(40 * page, page as usize).0);
        assert!(a.stream(4 * page, page as usize).0);
        // The scan skips pages it has read: still the same stream.
        let (seq, bytes) = a.stream(6 * page, page as usize);
        assert!(seq);
        assert_eq!(bytes, 6 * page, "the stream's bytes go on counting");
        // A jump further than STREAM_SKIP past the stream's end is not.
        let end = 7 * page;
        assert!(!a.stream(end + STREAM_SKIP + page, page as usize).0);
    }

    /// A file of `len` bytes whose byte at `i` is `(i * 7 % 251) as u8`,
    /// evicted, and the fraction of it still cached (tmpfs keeps it all).
    fn cold_file(d: &std::path::Path, len: u64) -> (std::path::PathBuf, f64) {
        let path = d.join("cold");
        let data: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        iolab::cache::evict(&path).unwrap();
        let before = iolab::cache::residency(&path, len).unwrap().fraction();
        (path, before)
    }

    #[test]
    fn a_small_file_of_a_warm_directory_is_taken_as_cached_until_its_first_refresh() {
        use super::{Adaptive, Backend, FIRST_SAMPLE};
        use crate::policy::WARM_DIR_TRUST_MAX;
        use crate::siblings::First;
        use std::sync::atomic::Ordering::Relaxed;
        let d = tempfile::tempdir().unwrap();
        let warm = First {
            cached: Some(true),
            warm_dir: true,
        };
        let page = First {
            cached: Some(true),
            warm_dir: false,
        };
        // (length, what the open found, taken as cached at once, sampled
        // at the eighth request)
        let cases = [
            (WARM_DIR_TRUST_MAX, warm, true, false),
            (WARM_DIR_TRUST_MAX + 4096, warm, false, true),
            (WARM_DIR_TRUST_MAX, page, false, true),
            (64 << 10, page, true, true),
        ];
        for (len, first, at_once, sampled) in cases {
            let path = d.path().join(format!("f{len}-{}", first.warm_dir));
            let data: Vec<u8> = (0..len).map(|i| (i % 253) as u8).collect();
            std::fs::write(&path, &data).unwrap();
            let src = std::sync::Arc::new(crate::Src::new(
                path.clone(),
                std::fs::File::open(&path).unwrap(),
            ));
            let profile = crate::profile::process_profile();
            let a = Adaptive::new(src, profile, None, first).unwrap();
            let resident = || f64::from_bits(a.st.resident.load(Relaxed));
            assert_eq!(
                resident() >= crate::policy::WARM,
                at_once,
                "{len} {first:?}"
            );
            let mut buf = vec![0u8; 4096];
            for i in 0..=FIRST_SAMPLE {
                let at = (i * 4096) as usize;
                assert_eq!(a.read_at(at as u64, &mut buf).unwrap(), 4096);
                assert!(buf[..] == data[at..at + 4096], "{len} read {i}");
            }
            assert_eq!(a.st.sampled.load(Relaxed), sampled, "{len} {first:?}");
            // Cached whole (written just now): sampled or trusted, the
            // same conclusion.
            assert!(resident() >= crate::policy::WARM, "{len} {first:?}");
        }
    }

    #[test]
    fn the_residency_sample_tells_a_file_cached_whole_in_part_or_not_at_all() {
        let d = tempfile::tempdir().unwrap();
        let len = 8u64 << 20;
        let (path, before) = cold_file(d.path(), len);
        iolab::require!(
            before < 0.01,
            "{} stays {:.0} % cached after POSIX_FADV_DONTNEED (tmpfs?)",
            path.display(),
            before * 100.0
        );
        let src = crate::Src::new(path.clone(), std::fs::File::open(&path).unwrap());
        src.meta().unwrap();
        let sample = || super::sampled_residency(&src).expect("cachestat (Linux 6.5)");
        assert_eq!(sample(), 0.0);
        // The first 3/16 cached (read-ahead off), the rest not: the first
        // places (every eighth) disagree, 1 of 4 cached, so all 32 are
        // asked about, 6 cached.
        let f = std::fs::File::open(&path).unwrap();
        iolab::kernel::fs::fadvise(&f, libc::POSIX_FADV_RANDOM).unwrap();
        let mut buf = vec![0u8; (len * 3 / 16) as usize];
        std::os::unix::fs::FileExt::read_exact_at(&f, &mut buf, 0).unwrap();
        let part = sample();
        assert!((part - 6.0 / 32.0).abs() < 0.02, "{part}");
        iolab::cache::warm(&path, len).unwrap();
        assert_eq!(sample(), 1.0);
        // A file of no more pages than places is walked whole.
        let small = d.path().join("small");
        std::fs::write(&small, vec![1u8; 5 * 4096]).unwrap();
        iolab::cache::evict(&small).unwrap();
        let f = std::fs::File::open(&small).unwrap();
        iolab::kernel::fs::fadvise(&f, libc::POSIX_FADV_RANDOM).unwrap();
        std::os::unix::fs::FileExt::read_exact_at(&f, &mut buf[..4096], 4096).unwrap();
        let src = crate::Src::new(small.clone(), f);
        src.meta().unwrap();
        let s = super::sampled_residency(&src).unwrap();
        let all = iolab::cache::residency(&small, 5 * 4096)
            .unwrap()
            .fraction();
        assert!(
            s > 0.0 && s < 1.0 && (s - all).abs() < 1e-9,
            "{s} against {all}"
        );
    }

    #[test]
    // Long on purpose: one reader through sparse, then dense, random reads.
    fn regions_are_read_whole_as_their_misses_pay_and_dense_reads_read_the_file() {
        let d = tempfile::tempdir().unwrap();
        let len = 64u64 << 20;
        let (path, before) = cold_file(d.path(), len);
        iolab::require!(
            before < 0.1,
            "{} stays {:.0} % cached after POSIX_FADV_DONTNEED (tmpfs?)",
            path.display(),
            before * 100.0
        );
        let resident = || iolab::cache::residency(&path, len).unwrap().fraction();
        // A device measured at 10 TiB/s: a region costs no more than a
        // miss, so each is due at its second miss, and any wait is longer
        // than the whole file takes.
        let opts = Options::new(Technique::Auto)
            .profile(std::sync::Arc::new(
                crate::profile::Profile::builtin().with_seq_cold_cached(10e6),
            ))
            .memory_budget(1 << 30);
        let r = Reader::open(&path, opts).unwrap();
        let mut buf = vec![0u8; 4096];
        let regions = [
            41u64, 3, 17, 58, 9, 30, 22, 50, 1, 36, 12, 61, 27, 45, 6, 33, 19, 54, 14, 39,
        ];
        // Sparse: one miss in each of 20 regions (the first read is not
        // timed: 19 count). None is due; nothing is read beyond the reads.
        for &m in &regions {
            r.read_exact_at((m << 20) + 8192, &mut buf).unwrap();
        }
        assert!(
            resident() < 0.1,
            "read ahead while sparse: {:.2}",
            resident()
        );
        // A second read in a region that missed: due, read whole, and the
        // read returns its own bytes.
        let at = (regions[1] << 20) + 300_000;
        r.read_exact_at(at, &mut buf).unwrap();
        let want: Vec<u8> = (at..at + 4096).map(|i| (i * 7 % 251) as u8).collect();
        assert_eq!(buf, want);
        let region = || iolab::cache::residency(&path, len).unwrap();
        let wait = |ok: &dyn Fn() -> bool| {
            // The read-ahead is asynchronous: wait for it (a bound, not a
            // speed).
            let t0 = std::time::Instant::now();
            while !ok() && t0.elapsed() < std::time::Duration::from_secs(60) {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        };
        let first = |f: f64| f >= 1.0 / 64.0 * 0.9;
        wait(&|| first(region().fraction()));
        assert!(
            first(resident()) && resident() < 0.1,
            "one region read whole: {:.3}",
            resident()
        );
        // What that region cost the read that waited for it now sets when
        // the next is due (at most 63 misses). Dense: half of the 19
        // regions that missed miss until read whole. The whole file is
        // asked for.
        for &m in &regions[2..11] {
            for j in 1..64u64 {
                r.read_exact_at((m << 20) + j * 16384, &mut buf).unwrap();
            }
        }
        r.read_exact_at((regions[11] << 20) + 700_000, &mut buf)
            .unwrap();
        wait(&|| resident() >= 0.95);
        assert!(resident() >= 0.95, "not read ahead: {:.2}", resident());
    }

    #[test]
    fn short_runs_of_small_reads_that_a_technique_serves_slower_fall_back_to_pread() {
        let d = tempfile::tempdir().unwrap();
        let len = 32u64 << 20;
        // Runs of three 2 KiB reads, each run 512 KiB after the last. The
        // third read of a run looks sequential (and tiny): the block cache
        // reads its whole 256 KiB block for 2 KiB. Once the kernel's
        // read-ahead has cached the file, the first two look like random
        // reads of cached data: the mapping faults a page in for each.
        // Either way the technique loses to a pread of the 2 KiB, cached or
        // not (tmpfs).
        let path = d.path().join("runs");
        let data: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let _ = iolab::cache::evict(&path);
        let mut p = crate::profile::Profile::builtin();
        p.seq_block = 256 << 10;
        let opts = Options::new(Technique::Auto)
            .profile(std::sync::Arc::new(p))
            .memory_budget(1 << 30);
        let r = Reader::open(&path, opts).unwrap();
        let mut buf = vec![0u8; 2048];
        for run in 0..64u64 {
            for k in 0..3u64 {
                let off = run * (512 << 10) + k * 2048;
                r.read_exact_at(off, &mut buf).unwrap();
                assert!(
                    buf[..] == data[off as usize..off as usize + 2048],
                    "at {off}"
                );
            }
        }
        let s = r.switched().expect("the guard never fell back");
        assert!(
            s.from.contains("block cache") || s.from.contains("mapping"),
            "{s}"
        );
        assert!(
            s.technique_us_per_mib > crate::policy::GUARD_LOSING * s.pread_us_per_mib,
            "{s}"
        );
        assert!(s.samples >= crate::policy::GUARD_MIN_SAMPLES, "{s}");
        assert!(s.to_string().contains(&path.display().to_string()), "{s}");
        let (log, _) = crate::guard::take_switches();
        assert!(
            log.iter().any(|x| x.path == path),
            "not in the log: {log:?}"
        );
    }

    /// The state of a file of `len` bytes cached whole (written just now,
    /// and read once more to be sure), and its bytes.
    /// Reads `buf.len()` bytes at `off` through `a` and checks them
    /// against `data`, the file's contents.
    fn read_checked(a: &super::Adaptive, data: &[u8], off: u64, buf: &mut [u8]) {
        use super::Backend;
        assert_eq!(a.read_at(off, buf).unwrap(), buf.len());
        let o = off as usize;
        assert!(buf[..] == data[o..o + buf.len()], "bytes at {o}");
    }

    fn cached_state(d: &std::path::Path, len: u64) -> (super::Adaptive, Vec<u8>) {
        let path = d.join("warm");
        let data: Vec<u8> = (0..len).map(|i| (i * 13 % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        assert_eq!(std::fs::read(&path).unwrap().len() as u64, len);
        let r = Reader::open(&path, Options::new(Technique::Auto)).unwrap();
        let profile = std::sync::Arc::new(crate::profile::Profile::thesis_defaults());
        let first = crate::siblings::First::default();
        let a = super::Adaptive::new(r.imp.src().clone(), profile, None, first).unwrap();
        (a, data)
    }

    #[test]
    fn a_header_read_again_skips_the_decision_once_mapped_and_stays_known() {
        use super::{Choice, FIRST_SAMPLE};
        let d = tempfile::tempdir().unwrap();
        let (a, data) = cached_state(d.path(), 4 << 20);
        let read = |off: u64, buf: &mut [u8]| read_checked(&a, &data, off, buf);
        let mut buf = vec![0u8; 4096];
        let random = |i: u64| (i * 97 % 1000) * 4096;
        // Past the first sample (the file found cached), then three reads
        // in order, whose decision in full makes the mapping.
        for i in 0..=FIRST_SAMPLE {
            read(random(i), &mut buf);
        }
        let s0 = 2u64 << 20;
        for k in 0..3 {
            read(s0 + k * 4096, &mut buf);
        }
        assert!(a.mapped.get().is_some());
        // A header's exact re-read: copied from the mapping without a
        // decision, and still known after more small reads than the ring
        // of recent ones holds.
        let mut head = [0u8; 16];
        read(24, &mut head);
        assert_eq!(a.quick(24, 16), Some((Choice::Mapped, false)));
        for i in 0..2 * super::RECENT as u64 {
            read(random(100 + i), &mut buf);
        }
        assert_eq!(a.quick(24, 16), Some((Choice::Mapped, false)));
        read(24, &mut head);
    }

    #[test]
    // Long on purpose: one reader through each case the shortcut takes
    // and each it leaves to a decision in full.
    fn reads_of_a_cached_file_skip_the_decision_where_it_has_one_choice() {
        use super::{Choice, FIRST_SAMPLE};
        use std::sync::atomic::Ordering::Relaxed;
        let d = tempfile::tempdir().unwrap();
        let len = 4u64 << 20;
        let (a, data) = cached_state(d.path(), len);
        let mut buf = vec![0u8; 4096];
        let random = |i: u64| (i * 97 % 1000) * 4096;
        let read = |off: u64, buf: &mut [u8]| read_checked(&a, &data, off, buf);
        let requests = || a.st.requests.load(Relaxed);
        // Decided in full until the residency sample finds the file cached.
        for i in 0..=FIRST_SAMPLE {
            assert_eq!(a.quick(random(i), 4096), None, "request {i}");
            read(random(i), &mut buf);
        }
        // Then a read not in order is one pread, and counted.
        let at = random(FIRST_SAMPLE + 1);
        assert_eq!(a.quick(at, 4096), Some((Choice::Pread, false)));
        assert_eq!(requests(), FIRST_SAMPLE + 2);
        assert_eq!(a.st.last_end.load(Relaxed), at + 4096);
        read(random(FIRST_SAMPLE + 2), &mut buf);
        assert_eq!(requests(), FIRST_SAMPLE + 3);
        // The same 4 KiB again may go to the mapping: decided in full.
        assert_eq!(a.quick(random(FIRST_SAMPLE + 2), 4096), None);
        // Reads in order: one pread while not yet a stream; the mapping
        // once a decision in full has made it, then without one.
        let s0 = 2u64 << 20;
        read(s0, &mut buf);
        read(s0 + 4096, &mut buf);
        assert!(a.mapped.get().is_none());
        assert_eq!(a.quick(s0 + 8192, 4096), None);
        read(s0 + 8192, &mut buf);
        assert!(a.mapped.get().is_some());
        assert_eq!(a.quick(s0 + 12288, 4096), Some((Choice::Mapped, true)));
        read(s0 + 16384, &mut buf);
        // Up to three pages in order, the mapping; larger reads in order
        // one pread each.
        assert_eq!(a.quick(s0 + 20480, 8192), Some((Choice::Mapped, true)));
        let mut big = vec![0u8; 16384];
        assert_eq!(a.quick(s0 + 28672, 16384), Some((Choice::Pread, true)));
        read(s0 + 45056, &mut big);
        // Not where residency is sampled again.
        let n = requests();
        a.st.next_refresh.store(n, Relaxed);
        assert_eq!(a.quick(random(3), 4096), None);
        // Nor once the file has had as many requests as pages, when its
        // re-reads may go to the mapping.
        a.st.next_refresh.store(u64::MAX, Relaxed);
        a.st.requests.store(len / 4096 - 1, Relaxed);
        assert_eq!(a.quick(random(5), 4096), None);
        assert_eq!(
            requests(),
            len / 4096 - 1,
            "a read left to a decision was counted"
        );
    }

    #[test]
    fn small_random_reads_of_a_file_not_cached_whole_that_keep_hitting_skip_the_decision() {
        use super::{Choice, FIRST_SAMPLE};
        use crate::policy::{HIT_SAMPLE, HIT_STREAK};
        use std::sync::atomic::Ordering::Relaxed;
        let d = tempfile::tempdir().unwrap();
        let (a, data) = cached_state(d.path(), 4 << 20);
        let mut buf = vec![0u8; 4096];
        let random = |i: u64| (i * 97 % 1000) * 4096;
        let read = |off: u64, buf: &mut [u8]| read_checked(&a, &data, off, buf);
        for i in 0..=FIRST_SAMPLE {
            read(random(i), &mut buf);
        }
        // As if the file were mostly not cached (the part read is, as a
        // program's look-ups find the pages they read before).
        a.st.resident.store(0.1f64.to_bits(), Relaxed);
        a.st.next_refresh.store(u64::MAX, Relaxed);
        assert_eq!(a.quick(random(1), 4096), None, "no streak yet");
        // Cached reads, timed: a copy takes microseconds, far below a miss.
        for i in 0..64 {
            read(random(i), &mut buf);
        }
        assert!(a.st.hits.load(Relaxed) > 0, "no timed read counted a hit");
        // In a streak: one pread without a decision, but for each eighth.
        a.st.hits.store(HIT_STREAK, Relaxed);
        // (Fewer requests than the file has pages: past them a re-read may
        // go to the mapping, which a decision in full makes.)
        let n = 40 * HIT_SAMPLE;
        a.st.requests.store(n, Relaxed);
        assert_eq!(a.quick(random(3), 4096), None, "the sample");
        a.st.requests.store(n + 1, Relaxed);
        assert_eq!(a.quick(random(3), 4096), Some((Choice::Pread, false)));
        assert_eq!(a.st.requests.load(Relaxed), n + 2, "it was counted");
        read(random(4), &mut buf);
        // Reads in order and large reads are still decided in full.
        let s0 = 2u64 << 20;
        read(s0, &mut buf);
        read(s0 + 4096, &mut buf);
        assert_eq!(a.quick(s0 + 8192, 4096), None);
        let mut big = vec![0u8; 256 << 10];
        assert_eq!(a.quick(random(7), big.len()), None);
        read(random(7), &mut big);
    }

    #[test]
    fn a_batch_is_decided_on_what_was_read_before_it() {
        use super::{Adaptive, Backend, FIRST_SAMPLE};
        use crate::profile::Profile;
        use crate::ReadReq;
        use std::sync::atomic::Ordering::Relaxed;
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("big");
        let len = 64u64 << 20;
        let data: Vec<u8> = (0..len)
            .map(|i| (i.wrapping_mul(0x9E37_79B9) >> 13) as u8)
            .collect();
        std::fs::write(&path, &data).unwrap();
        iolab::cache::evict(&path).unwrap();
        // A device that reads the file in a moment: whatever the first
        // batch waited is as long as reading it all takes, so only the
        // regions a batch sees decide (see `policy::read_ahead_whole`).
        let p = Profile::thesis_defaults().with_seq_cold_cached(1e9);
        let opts = Options::new(Technique::Auto)
            .profile(std::sync::Arc::new(p))
            .memory_budget(1 << 30);
        let r = Reader::open(&path, opts.clone()).unwrap();
        let a = Adaptive::new(
            r.imp.src().clone(),
            opts.profile.clone().unwrap(),
            opts.memory_budget,
            crate::siblings::First::default(),
        )
        .unwrap();
        // 512 reads of 4 KiB, one in every 1 MiB region and then again: a
        // batch that touches every region but reads 3 % of the file.
        let offs: Vec<u64> = (0..512u64)
            .map(|i| (i % 64) * (1 << 20) + (i / 64) * 8192)
            .collect();
        let mut bufs = vec![vec![0u8; 4096]; offs.len()];
        let mut reqs = ReadReq::batch(&offs, &mut bufs);
        a.read_many(&mut reqs, &mut |_, _| {});
        for q in &reqs {
            let o = q.offset as usize;
            assert!(matches!(q.result, Some(Ok(4096))), "request at {o}");
            assert!(q.buf[..] == data[o..o + 4096], "bytes at {o}");
        }
        assert!(a.st.requests.load(Relaxed) > FIRST_SAMPLE);
        assert!(
            !a.st.read_ahead.load(Relaxed),
            "the batch's own spread read the whole file ahead"
        );
        // The next batch knows the reads so far touched all of it.
        let mut reqs = ReadReq::batch(&offs[..16], &mut bufs[..16]);
        a.read_many(&mut reqs, &mut |_, _| {});
        assert!(
            a.st.read_ahead.load(Relaxed),
            "a second batch did not read ahead"
        );
    }
}
