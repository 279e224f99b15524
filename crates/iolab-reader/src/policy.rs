//! The adaptive policy: a pure function from what is known about one
//! request to the way to read it, with the reason in words. `Auto` calls
//! [`decide`] for every request; `IOLAB_TRACE_POLICY=1` logs each decision.

use super::profile::Profile;

/// Everything the policy looks at for one request.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Situation {
    /// Request size, bytes.
    pub len: usize,
    /// Request offset.
    pub offset: u64,
    /// File length, bytes.
    pub file_len: u64,
    /// This request continues a run of sequential requests (the stream
    /// detector saw at least two in a row ending where this one starts).
    pub sequential: bool,
    /// Fraction of the file read so far (0..=1), counted in regions (see
    /// `regions_read`).
    pub fraction_read: f64,
    /// Distinct regions of the file read so far: the file cut into at
    /// most 65,536 equal regions of at least 1 MiB, so a small file has
    /// few and one read of it may count as half of it.
    pub regions_read: u64,
    /// Time this reader has spent in reads of the file so far beyond
    /// moving their bytes ([`avoidable_wait`]), ns (counted until the file
    /// is read ahead whole or found cached).
    pub waited_ns: u64,
    /// The request re-reads data this reader read before.
    pub reread: bool,
    /// Fraction of the file in the page cache (sampled with mincore).
    pub resident: f64,
    /// Fraction of the pages this request (or, for reads in order, the
    /// stream ahead of it) would read that are in the page cache, probed
    /// with `cachestat(2)` just before a choice that bypasses the cache;
    /// None when not probed.
    pub range_cached: Option<f64>,
    /// Memory available for the page cache, bytes.
    pub available: u64,
    /// Requests in the batch this one came with (1 for `read_at`).
    pub batch: usize,
    /// Requests of the file before this one.
    pub requests: u64,
    /// Bytes read in order in the stream this request continues, this
    /// one included (0 when it continues none).
    pub stream_bytes: u64,
    /// The request reads bytes this reader read with O_DIRECT before:
    /// they are not in the page cache, and a read through it would make
    /// the next one a copy (set only when [`decide`] chose O_DIRECT).
    pub direct_again: bool,
    /// The request starts where the previous one ended (a stream may be
    /// starting; [`Situation::sequential`] needs two such in a row).
    pub follows: bool,
    /// The random reads of the file are dense: of the regions where they
    /// missed the page cache (at least [`DENSE_REGIONS`]), at least half
    /// have missed often enough to be read whole ([`dense`]; see
    /// [`read_ahead_whole`]).
    pub dense: bool,
    /// The request reads exactly the bytes (offset and length) of one of
    /// the file's last few reads of at most [`EXACT_MAX`] bytes: a header
    /// a program reads again before each operation.
    pub exact_again: bool,
}

/// A way to read one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Choice {
    /// Copy from the memory mapping.
    Mapped,
    /// One `pread` into the caller's buffer.
    Pread,
    /// Through the block cache, with read-ahead.
    Buffered {
        /// Block size.
        block: usize,
    },
    /// io_uring, page cache, `depth` pieces in flight.
    Uring {
        /// Depth.
        depth: u32,
    },
    /// O_DIRECT (io_uring for batches).
    Direct,
    /// O_DIRECT pieces of the file read ahead of the caller through
    /// io_uring, `whole.depth` of `whole.block` bytes in flight, requests
    /// copied out of them: one stream per open file, for reads in order.
    Ahead,
}

impl std::fmt::Display for Choice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Choice::Mapped => write!(f, "the mapping"),
            Choice::Pread => write!(f, "pread"),
            Choice::Buffered { block } => write!(f, "the block cache ({} KiB blocks)", block >> 10),
            Choice::Uring { depth } => write!(f, "io_uring (depth {depth})"),
            Choice::Direct => write!(f, "O_DIRECT"),
            Choice::Ahead => write!(f, "the O_DIRECT read-ahead stream"),
        }
    }
}

/// A choice and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    /// The way to read.
    pub choice: Choice,
    /// Why, in a few words.
    pub reason: &'static str,
}

fn d(choice: Choice, reason: &'static str) -> Decision {
    Decision { choice, reason }
}

/// A batch of reads of uncached data: io_uring at the profile's random
/// depth keeps the device's queue full.
fn queued(p: &Profile, reason: &'static str) -> Decision {
    d(
        Choice::Uring {
            depth: p.random_depth,
        },
        reason,
    )
}

/// Residency at or above which a file counts as cached.
pub const WARM: f64 = 0.9;

/// Most regions a file is cut into (see [`Situation::regions_read`]).
pub const MAX_REGIONS: u64 = 1 << 16;

/// How a file of `file_len` bytes is cut into regions: the log2 of their
/// size (at least 1 MiB) and how many there are (at most
/// [`MAX_REGIONS`] + 1: the last may be partial).
pub fn regions(file_len: u64) -> (u32, u64) {
    let mut shift = 20u32;
    while (file_len >> shift) > MAX_REGIONS {
        shift += 1;
    }
    (shift, (file_len >> shift) + 1)
}

/// Distinct regions (see [`Situation::regions_read`]) random reads must
/// have touched before the whole file is read ahead: the fraction read
/// alone says "half of it" after one read of a 2 MiB file's first bytes.
pub const SPREAD_REGIONS: u64 = 4;

/// Smallest file whose reads in order [`decide`] sends to
/// [`Choice::Ahead`]: 16 pieces of the tuned profile's 4 MiB, so setting
/// up the stream (a ring, 16 MiB of buffers) is paid back many times.
pub const AHEAD_MIN_FILE: u64 = 64 << 20;

/// Whether the data a request reads counts as not cached: the probe of
/// its range when there is one (at most 1 − [`WARM`] of it cached), else
/// the file's sampled residency.
fn uncached(s: &Situation) -> bool {
    match s.range_cached {
        Some(c) => c <= 1.0 - WARM,
        None => s.resident < WARM,
    }
}

/// Whether the stream ahead of a request is not (mostly) cached: the
/// kernel's own read-ahead of the first requests of a stream, before it
/// counted as one, may have cached part of it.
fn stream_uncached(s: &Situation) -> bool {
    match s.range_cached {
        Some(c) => c < WARM,
        None => s.resident < WARM,
    }
}

/// Sequential requests of uncached data below this size go through the
/// block cache (see [`decide`]); larger ones are `pread`s that the kernel
/// reads ahead of.
pub const BLOCKS_BELOW: usize = 4096;

/// Largest request of reads in order of a cached file that is copied out
/// of the mapping. Reads in order go through a mapping once, so each page
/// is a first touch, and what a first touch costs depends on how the page
/// cache holds the file, which the policy cannot see: in large folios (a
/// file written in large pieces, or brought in by the kernel's read-ahead)
/// one fault maps many pages; in 4 KiB ones (a file still cached since it
/// was written 4 KiB at a time) one fault maps few. Reading a cached 64
/// MiB file in order here, `Auto` with the mapping over `pread` took 0.47
/// (large folios) and 0.86 (4 KiB folios) at 10 KiB a read (`tar`'s
/// records), 0.88 on the second at 8 KiB, 1.03 at 12 KiB and 1.11 at 16
/// KiB (the guard falling back late). Three pages is where the system call
/// a read saves still pays for the first touches it costs, however the
/// file is held.
pub const MAPPED_SEQ_MAX: usize = 12 << 10;

/// Largest file that a read of it whole goes through the page cache
/// however large the read: O_DIRECT saves a small file's reader little
/// (one request either way) and leaves nothing cached for the next one.
/// Replaying `gcc -fsyntax-only` cold without the read-ahead across a
/// directory, each of 120 compiler threads read `stdlib.h` (36 KiB) with
/// O_DIRECT from the device, and the replay took 1.7 to 1.9 times
/// `pread`'s time.
pub const WHOLE_SMALL_MAX: u64 = 64 << 10;

/// Largest file that `Auto` takes as cached, without sampling it at its
/// eighth request, when it was opened in a directory found warm (a cached
/// tree): a wrong guess costs at most about one read of the file, which
/// its reader was doing anyway, and the next refresh corrects it.
pub const WARM_DIR_TRUST_MAX: u64 = 1 << 20;

/// Largest read that [`Situation::exact_again`] looks for: a header or a
/// page. SQLite reads the same 16 bytes of its database's header before
/// each statement (2,500 times over a replay of index look-ups), each a
/// system call that a copy from the mapping saves once the header's page
/// is mapped; unlike a copy kept in the reader's own memory, the mapping
/// shows what another process wrote, which is what the program reads the
/// header again to learn.
pub const EXACT_MAX: usize = 4096;

/// Largest end of an exact re-read ([`Situation::exact_again`]) served by
/// a mapping of the file's first page alone, until a read of the rest
/// needs the whole mapping: a mapping costs more to make, touch first and
/// let go the more of the file it spans (a cached 100 MB database here:
/// 11 to 12 µs for the whole file, 5.5 µs for one page), and a header's
/// copies (SQLite's 16 bytes at offset 24, a library's first 832 bytes)
/// need no more. Replaying warm look-ups over six databases (one mapping
/// each per replay), `Auto` over the better of `pread` and `buffered:4k`
/// went from 1.10 to 1.02 (median of 5 rounds).
pub const HEAD_MAP_MAX: u64 = 4096;

/// Whether a read of `len` bytes at `off` ends within the file's first
/// page, which a mapping of that page alone serves ([`HEAD_MAP_MAX`]).
pub fn in_head(off: u64, len: usize) -> bool {
    off.checked_add(len as u64)
        .is_some_and(|end| end <= HEAD_MAP_MAX)
}

/// Bytes past the end of an O_DIRECT read that are read with it, in the
/// same request, once the file's reads have shown they follow such reads
/// ([`keeps_direct_tail`]); the next read, when it lies within them, is
/// copied from them. A buffered reader (Python's, C's stdio) splits a
/// large read into a part read straight into the caller's memory and a
/// remainder read through its own buffer (`st_blksize`, 4 KiB here;
/// Python's default is 8 KiB), so each record a loader reads costs two
/// waits for the device: the second for a few KiB next to the first.
pub const DIRECT_TAIL: usize = 8 << 10;

/// Whether a file's O_DIRECT reads read [`DIRECT_TAIL`] bytes more: once a
/// read has followed one of them at its end (`tails`), and while at least
/// every second one (of `directs`) is followed so. A program that never
/// reads on from where it stopped pays nothing; one that does, one
/// device request per record instead of two.
pub fn keeps_direct_tail(tails: u64, directs: u64) -> bool {
    tails >= 1 && tails * 2 >= directs
}

/// Bytes of a huge page, the unit [`huge_in_order`] probes a file's
/// mapping by.
pub const HUGE_REGION: u64 = 2 << 20;

/// How far into a region [`huge_in_order`]'s second touch goes: past the
/// kernel's fault-around window (64 KiB), within a large folio. A fault
/// maps the whole large folio it lands in (Linux 6.18: a file written in
/// 1 MiB pieces, a fault at a folio's start left the next 15 windows of
/// 64 KiB mapped), but only the 16 pages about it where the file is held
/// in 4 KiB pages; a touch 1 MiB on, as the probe first did, faulted
/// again in 1 MiB folios and found only 2 MiB pages.
pub const LARGE_PROBE_AT: u64 = 128 << 10;

/// Smallest read in order of a cached file that [`huge_in_order`] may send
/// to the mapping: from 16 KiB the copies through a mapping of a file
/// held in large folios beat `pread` (below that [`MAPPED_SEQ_MAX`] maps
/// whatever the folios).
pub const HUGE_MIN_READ: usize = 16 << 10;

/// A touch of the mapping [`LARGE_PROBE_AT`] into a region, just after its
/// first byte was touched, that took less than this (ns) found the region
/// mapped already: one large folio maps it (20 to 450 ns here, with the
/// clock's own cost), where a region held in small pages faults again
/// (4 to 7 µs).
pub const HUGE_TOUCH_NS: u64 = 1_500;

/// Whether a read in order of `len` bytes of a cached file of `file_len`
/// bytes is copied from the mapping where the page cache holds its region
/// in large folios ([`HUGE_TOUCH_NS`]). Read in by the kernel's read-ahead
/// or written in large pieces, a large file is held in folios of up to 2
/// MiB, which a mapping maps with one fault each and lets go of cheaply: a
/// 256 MiB file in 128 KiB pieces took 9.2–9.4 ms through the mapping (its
/// `munmap` 0.2 ms) against 9.7–9.8 ms of `pread`. Held in small pages,
/// the copies through the mapping took 14.2–14.5 ms, and letting it go
/// 2.7 ms more, against 11.9 ms: there each read stays a `pread`. Probing
/// every region of such a file cost 7 % of reading it; `Auto` spaces its
/// probes out after each region found in small pages.
pub fn huge_in_order(len: usize, file_len: u64) -> bool {
    len >= HUGE_MIN_READ && file_len >= 2 * HUGE_REGION
}

/// Whether `Auto` probes the huge page's region `region` of a file's
/// mapping ([`huge_in_order`]), given the last region it probed and what
/// it found (`last`), and how many probes in a row found small pages
/// (`misses`). A probe that finds small pages costs two faults, so from
/// the second such in a row the next waits twice as many regions each
/// time (gaps of 1, 1, 2, 4, ...): a file held in small pages throughout is
/// probed a few times, and one whose first megabytes alone are (the
/// kernel's read-ahead starts small) is found out right after them.
pub fn huge_probe_due(region: u64, last: Option<(u64, bool)>, misses: u32) -> bool {
    match last {
        Some((at, false)) => region.abs_diff(at) >= 1u64 << misses.min(32).saturating_sub(2),
        _ => true,
    }
}

/// Requests of its size that must be left in a file read in order for the
/// mapping to be made for them: an `mmap` and its `munmap` cost about what
/// that many system calls do, and each saves one. The last piece of a
/// file read whole in 32 KiB reads (a checksum over image files) got a
/// mapping of its own, which made reading a warm tree of them 5 % slower.
pub const MAP_PAYS_AFTER: u64 = 16;

/// Whether the data a request reads counts as cached: the file is
/// (sampled residency), or the probe of the range says so.
fn cached(s: &Situation) -> bool {
    s.resident >= WARM || s.range_cached.is_some_and(|c| c >= WARM)
}

/// Whether reads in order of a large cold file go to [`Choice::Ahead`]:
/// the profile measured O_DIRECT faster than the page cache for cold
/// sequential reads, the file is at least [`AHEAD_MIN_FILE`], and what
/// the stream would read is not cached. Whatever the request size: a
/// program reading 10 KiB at a time (`tar`) otherwise gets the kernel's
/// read-ahead (or the block cache's preads, one at a time), and one
/// reading 128 KiB at a time an O_DIRECT read per request with the device
/// idle in between. Re-reads do not count against it: reads in order of
/// 10 KiB touch the same 1 MiB region many times.
fn ahead_pays(s: &Situation, p: &Profile) -> bool {
    s.sequential
        && s.stream_bytes >= AHEAD_MIN_STREAM
        && stream_uncached(s)
        && p.seq_direct
        && s.file_len >= AHEAD_MIN_FILE
}

/// How far past a stream's end a request may start and still continue
/// it: a scan that read a page ahead of itself out of order (a database's
/// interior page) skips that page when it gets there, and must not count
/// as a new stream (that restarted the O_DIRECT stream, and its read-ahead,
/// every MiB of a SQLite table scan). Below the kernel's smallest
/// read-ahead window, so what is skipped was read ahead anyway.
pub const STREAM_SKIP: u64 = 64 << 10;

/// Bytes a stream must have read in order before [`ahead_pays`]: the
/// O_DIRECT stream keeps `whole.depth` pieces of `whole.block` in flight
/// (up to 32 MiB), so a run of three small reads that happens to be in
/// order (a record's header and body, then a jump) would have it read
/// tens of MiB for a few KiB, unseen by the guard (the pieces arrive
/// in the background). The kernel's read-ahead serves the first MiB of a
/// real stream about as well.
pub const AHEAD_MIN_STREAM: u64 = 1 << 20;

/// Whether [`decide`] would bypass the page cache for this request (so
/// `Auto` probes the range first and decides again with
/// [`Situation::range_cached`] set).
pub fn bypasses_cache(c: Choice) -> bool {
    matches!(c, Choice::Direct | Choice::Ahead)
}

/// Decides how to read one request. Every choice other than
/// [`Choice::Pread`] is watched at run time by `Auto`'s guard (see
/// [`guard`]); the rules only pick what is worth trying.
pub fn decide(s: &Situation, p: &Profile) -> Decision {
    if s.len == 0 {
        return d(Choice::Pread, "empty request");
    }
    if ahead_pays(s, p) {
        return d(
            Choice::Ahead,
            "reads in order of a large uncached file: O_DIRECT pieces read ahead, the queue kept full",
        );
    }
    if small(s, p) {
        return small_request(s, p);
    }
    if cached(s) {
        return d(Choice::Pread, "cached data: one copy out of the page cache");
    }
    if s.offset == 0 && s.len as u64 >= s.file_len && s.file_len <= WHOLE_SMALL_MAX {
        return d(
            Choice::Pread,
            "a small file read whole: one request either way, and the page cache keeps it for the next reader",
        );
    }
    larger_uncached(s, p)
}

/// [`decide`] for a request larger than a small one, of data not known
/// cached and not all of a small file.
fn larger_uncached(s: &Situation, p: &Profile) -> Decision {
    let fits = (s.file_len as f64) <= s.available as f64 * p.fit_fraction;
    let large = s.len >= p.seq_block.min(1 << 20) / 4;
    let random = !s.sequential && !s.follows;
    let direct = if random {
        !fits || !s.direct_again
    } else {
        // The start of a stream: the kernel's read-ahead takes it up from
        // the second read on (one O_DIRECT read at a time, each waited
        // for, left a paced 128 KiB stream 15 % behind `pread` until the
        // O_DIRECT stream started); large pieces of a stream read once
        // still go O_DIRECT.
        large && (!fits || !s.reread)
    };
    if p.seq_direct && uncached(s) && direct {
        // The tuner found O_DIRECT faster for cold large reads: the page
        // cache only pays for data read again. Whatever the request's
        // size above `small_max`: a pread of a 200 KiB image file read
        // whole inserts every page into the cache first (and primes the
        // kernel's read-ahead for the next read), and took 1.07 to 1.11
        // times as long as O_DIRECT over the train half's data loader.
        // A read again is known by its bytes, not by its 1 MiB region
        // ([`Situation::reread`]): records of 24 to 320 KiB read in
        // shuffled order fall in regions read before without a byte read
        // twice. What was cached is found by the range's probe; what was
        // read with O_DIRECT is `direct_again`.
        return d(
            Choice::Direct,
            "read larger than a small one of uncached data: O_DIRECT (measured faster than read-ahead)",
        );
    }
    if s.batch > 1 && !large && !s.sequential {
        return queued(
            p,
            "a batch of medium reads of uncached data: keep the queue full",
        );
    }
    d(
        Choice::Pread,
        "read of uncached data: pread with the kernel's read-ahead",
    )
}

/// The profile's cold sequential speed into the page cache, or
/// [`ASSUMED_SEQ_MIB_S`] without a measurement, MiB/s: what a read's bytes
/// take to move when it waits for nothing else ([`avoidable_wait`]).
pub fn cold_seq_mib_s(p: &Profile) -> f64 {
    p.seq_cold_cached_mib_s().unwrap_or(ASSUMED_SEQ_MIB_S)
}

/// Whether a request is small (see [`small_request`]): at most the
/// profile's `small_max`, and, unless known cached, its `cold_small_max`.
/// Where one O_DIRECT read beats a `pread` of cold data is not where a
/// copy from the mapping beats a `pread` of cached data; a medium read not
/// known cached takes the large path, whose range probe says whether it
/// is cached after all.
fn small(s: &Situation, p: &Profile) -> bool {
    s.len <= p.small_max && (s.len <= p.cold_small_max || cached(s))
}

/// Whether a read in order of `len` bytes at `offset` of a cached file of
/// `file_len` bytes is copied from the mapping: small enough
/// ([`MAPPED_SEQ_MAX`]), with enough such reads left for the mapping to pay
/// ([`MAP_PAYS_AFTER`]), where the tuner found the mapping faster.
pub fn maps_in_order(offset: u64, len: usize, file_len: u64, p: &Profile) -> bool {
    let left = file_len.saturating_sub(offset.saturating_add(len as u64));
    p.mmap_small_warm && len <= MAPPED_SEQ_MAX && left >= MAP_PAYS_AFTER * len as u64
}

/// [`small_request`]'s rules for a request that continues a stream.
fn small_sequential(s: &Situation, p: &Profile, cached: bool) -> Decision {
    if cached && maps_in_order(s.offset, s.len, s.file_len, p) {
        return d(
            Choice::Mapped,
            "small sequential reads of a cached file: copy from the mapping",
        );
    }
    // A block cache would read the whole block again from its start
    // (a file's tail after 96 KiB reads: all of the file once more).
    if cached || s.offset.saturating_add(s.len as u64) >= s.file_len {
        return d(
            Choice::Pread,
            "small sequential read of cached data, or the file's last piece: one pread",
        );
    }
    // The kernel's read-ahead follows a stream as well as a block cache
    // does, without a second copy: 4 KiB pages of a table scan took 10
    // to 15 % longer through 4 MiB blocks. Blocks only pay for requests
    // so small that a system call each costs more than the copy.
    if s.len < BLOCKS_BELOW {
        return d(
            Choice::Buffered { block: p.seq_block },
            "tiny sequential reads of uncached data: whole blocks, one system call per block",
        );
    }
    d(
        Choice::Pread,
        "small sequential reads of uncached data: pread with the kernel's read-ahead",
    )
}

/// The rules for a small request (at most the profile's `small_max`), in
/// order: sequential ones by blocks (or the mapping when cached), random
/// ones of cached data by one pread (the mapping for the same small range
/// read again, and once the file's pages are likely mapped), a batch, or
/// one pread. Uncached
/// data is never read through the mapping: each fault reads the device's
/// whole read-ahead window around it (8 MiB on some machines) for one
/// small read.
fn small_request(s: &Situation, p: &Profile) -> Decision {
    let cached = cached(s);
    if s.sequential {
        return small_sequential(s, p, cached);
    }
    // The mapping for random reads of cached data only once the file has
    // had more requests than it has pages: the tuner measures a mapping
    // whose pages are mapped after its first pass, but a program's
    // look-ups read most pages of a file once, and each first read of a
    // page through a fresh mapping is a fault. On the train half's warm
    // look-ups (0.1 requests a page) the guard found the mapping 2 to 5
    // times pread's time per byte, and fell back on every file it had
    // been tried on.
    if cached && p.mmap_small_warm && s.exact_again {
        return d(
            Choice::Mapped,
            "the same small range of a cached file read again: a copy from the mapping, no system call",
        );
    }
    // A header read again is in memory whatever the rest of the file is:
    // its last read brought its page in, and a mapping of the first page
    // alone faults in nothing else.
    if p.mmap_small_warm && s.exact_again && in_head(s.offset, s.len) {
        return d(
            Choice::Mapped,
            "the same small range of the file's first page read again: a copy from the mapping of that page, no system call",
        );
    }
    if cached && p.mmap_small_warm && s.reread && s.requests >= s.file_len.div_ceil(4096) {
        return d(
            Choice::Mapped,
            "small random re-read of a cached file read more times than it has pages: a copy beats a system call",
        );
    }
    if cached {
        return d(
            Choice::Pread,
            "small random read of cached data: one copy, no fault per page read first",
        );
    }
    if s.batch > 1 && !cached {
        return queued(
            p,
            "a batch of small reads of uncached data: keep the device's queue full",
        );
    }
    d(
        Choice::Pread,
        "small random read: one pread, no read-around",
    )
}

/// How many times the time the whole file takes to read (at the profile's
/// cold sequential speed) random reads of it wait before the whole file
/// is read ahead (see [`read_ahead_whole`]): 1, the break-even of ski
/// rental. Reading it ahead is a bet on reads to come, lost both ways: a
/// program that stops right after pays the read-ahead on top of what it
/// waited (at most twice; more, as the read-ahead slows the reads it
/// races), and one that goes on reading at random keeps waiting until
/// the share is reached (share + 1 times the one read of the file). A
/// share of 20 bounded the first side at 5 % and cost the second 3.4
/// times `mapped`'s time on SQLite range queries over a 220 MB table
/// (against 1.10 with 1); 1 is the smallest worst case of the two.
pub const WAIT_SHARE: f64 = 1.0;

/// Cold sequential speed into the page cache assumed when the profile
/// measured none (the built-in one), MiB/s: the low end of what this kind
/// of machine reads (0.8–2.5 GB/s on the virtio disk the corpus was
/// recorded on), so without a measurement the whole file is read ahead
/// later rather than sooner.
pub const ASSUMED_SEQ_MIB_S: f64 = 1024.0;

/// Of a read of `bytes` that took `ns`, the part the whole file's
/// read-ahead could save, ns: what is beyond moving the bytes at the
/// profile's cold sequential speed (or [`ASSUMED_SEQ_MIB_S`]). A 4 KiB
/// look-up's wait is nearly all seek; a 240 KiB record read with O_DIRECT
/// is half transfer, which reading the whole file ahead does not shorten
/// (it moves more bytes, not faster). Counting the whole wait had records
/// from six 48 MiB shards read ahead whole for 40 % of them. `mib_s`:
/// [`cold_seq_mib_s`] of the profile (looked up once per file: it scans
/// the profile's measurements).
pub fn avoidable_wait(ns: u64, bytes: usize, mib_s: f64) -> u64 {
    let moving = bytes as f64 / (mib_s * (1u64 << 20) as f64) * 1e9;
    ns.saturating_sub(moving as u64)
}

/// The region a small random read of uncached data counts against, and
/// that is read around it once its misses pay for it (see
/// [`around_after`]): 1 MiB, one device request here.
pub const AROUND_REGION: u64 = 1 << 20;

/// A read counts as a miss for [`around_after`] when it waited at least
/// this long beyond moving its bytes ([`avoidable_wait`]), ns: a copy out
/// of the page cache takes a microsecond or two, a read from this kind of
/// device tens.
pub const MISS_NS: u64 = 15_000;

/// Timed small random reads in a row that found the page cache (each
/// waited less than [`MISS_NS`]) after which a file's small random reads
/// are timed only one in [`HIT_SAMPLE`]: the part of a large file that a
/// program looks up is often all in memory when the file is not, and
/// timing each read (two clock reads) and deciding it in full cost a
/// key-value store's cached look-ups about a tenth of their time.
pub const HIT_STREAK: u32 = 32;

/// During a streak of hits ([`HIT_STREAK`]), one small random read in
/// this many is timed and decided in full; a miss among them ends the
/// streak, so at most this many misses go uncounted where a program
/// leaves the cached part of a file.
pub const HIT_SAMPLE: u64 = 8;

/// Whether request `n` of a file whose last `hits` timed small random
/// reads found the cache may skip the timing and the decision in full.
pub fn hit_streak_skips(hits: u32, n: u64) -> bool {
    hits >= HIT_STREAK && !n.is_multiple_of(HIT_SAMPLE)
}

/// The streak of hits after a timed small random read that waited `wait`
/// ns beyond moving its bytes ([`avoidable_wait`]): one longer, at most
/// [`HIT_STREAK`], or ended by a miss.
pub fn hit_streak_next(hits: u32, wait: u64) -> u32 {
    if wait >= MISS_NS {
        0
    } else {
        (hits + 1).min(HIT_STREAK)
    }
}

/// Regions that must have missed before the random reads of a file can
/// count as [`Situation::dense`]: the few regions of a look-up's index are
/// due early, whatever the rest of the file sees.
pub const DENSE_REGIONS: u64 = 16;

/// Whether random reads are dense: of the `missed` regions where they
/// missed the page cache (at least [`DENSE_REGIONS`]), `bought` have been
/// read whole, at least half (see [`Situation::dense`]).
pub fn dense(bought: u64, missed: u64) -> bool {
    missed >= DENSE_REGIONS && bought * 2 >= missed
}

/// Misses of one [`AROUND_REGION`] after which the rest of it is read
/// whole (`POSIX_FADV_WILLNEED`, just before the read that finds it due):
/// ski rental per region. `miss_ns` is the file's mean miss so far;
/// `region_ns` what reading a region has cost the read that waited for it
/// (its mean so far; before any, [`region_prior`]). A region is bought
/// once its misses have cost what buying it costs beyond the miss it
/// replaces, so a region read no more often costs at most twice its
/// misses, and one that goes on being read waits no more. A mapping's
/// read-around takes a window at every fault until 100 faults found
/// nothing: it read 3.3 times less than `pread` on range queries over a
/// 220 MB SQLite table (most regions are read some 65 times) and 1.6
/// times more on point look-ups of the same database (regions read 14
/// times, a few pages each), where this rule reads only the regions the
/// index keeps coming back to. At least 1, at most 63.
pub fn around_after(miss_ns: f64, region_ns: f64) -> u32 {
    let k = region_ns / miss_ns.max(1.0) - 1.0;
    (k.ceil().max(0.0) as u32).clamp(1, 63)
}

/// Whether the part of a region ahead of a walk forward through a file
/// (each miss past the last, as an index rebuild reads each record's
/// header and seeks past its body) is worth reading in one request: the
/// walk reads nothing behind it again, so of a region due only the
/// `ahead` bytes from the miss on are read, and only when the misses the
/// walk's mean `step` puts there are at least the `after` misses that
/// pay for a region ([`around_after`]). Walking three 48 MiB shards in
/// steps of 24 to 320 KiB, whole regions bought behind the walk served
/// a miss or two each.
pub fn walk_pays(ahead: u64, step: u64, after: u32) -> bool {
    ahead / step.max(1) >= u64::from(after)
}

/// What reading a region is assumed to cost before one was read, ns: a
/// miss's wait plus the region's bytes at the profile's cold sequential
/// speed (or [`ASSUMED_SEQ_MIB_S`]). A lone 1 MiB read at a random place
/// costs more than its share of a stream (on the train half's look-ups
/// its reader waited some 16 misses' time for it, against 7 by this
/// guess), so the first region is bought early and what it cost sets
/// when the next ones are. `seq_mib_s`: [`cold_seq_mib_s`] of the
/// profile, looked up once per file (it scans the measurements).
pub fn region_prior(miss_ns: f64, seq_mib_s: f64) -> f64 {
    miss_ns + AROUND_REGION as f64 / (seq_mib_s * (1u64 << 20) as f64) * 1e9
}

/// Whether to ask the kernel, once per file, to read the whole file ahead
/// (`POSIX_FADV_WILLNEED`) before this request, and why. Reads that jump
/// about a file that fits in memory twice over wait for the device once
/// per piece; one sequential stream reads it all at the device's speed.
/// But a program that reads a few pieces of a large file (index look-ups
/// of a database) would wait for the whole file instead of a few pieces.
/// So: ski rental. Once the reads have waited [`WAIT_SHARE`] times as
/// long as reading the uncached rest of the file takes (at the profile's
/// cold sequential speed, or [`ASSUMED_SEQ_MIB_S`]), the rest is asked
/// for. How much of the file has been read says nothing by
/// itself: 13 % of the regions of a 220 MiB database are touched by 30
/// look-ups of 4 KiB.
///
/// Only once the reads have touched [`SPREAD_REGIONS`] regions (python's
/// imports read the first 832 bytes of libc twelve times), never for reads
/// in order (the kernel's read-ahead follows them), and never for a file
/// of at most one sequential block (the kernel's read-around covers it).
///
/// And only once the reads are [`Situation::dense`]: until then each
/// region is read whole by itself when its misses pay for it
/// ([`around_after`]). Waiting alone bet on the whole file for point
/// look-ups of a 220 MB SQLite database that read 6 % of the bytes of the
/// regions they touch (1.6 to 1.8 times `pread`'s time); their regions
/// are rarely due, those of range queries over the same table nearly all.
pub fn read_ahead_whole(s: &Situation, p: &Profile) -> Option<&'static str> {
    let roomy = s.file_len as f64 * 2.0 <= s.available as f64 * p.fit_fraction;
    let candidate = s.len > 0
        && s.dense
        && !s.sequential
        && s.resident < WARM
        && s.file_len > p.seq_block as u64
        && roomy
        && s.regions_read >= SPREAD_REGIONS;
    if !candidate {
        return None;
    }
    let mib_s = cold_seq_mib_s(p);
    let rest = s.file_len as f64 * (1.0 - s.resident);
    let whole_ns = rest / (mib_s * (1u64 << 20) as f64) * 1e9;
    (s.waited_ns as f64 >= WAIT_SHARE * whole_ns).then_some(
        "random reads of a file that fits have waited as long as reading the rest of it takes",
    )
}

/// Requests read one way and what they took (see [`guard`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Requests.
    pub n: u64,
    /// Bytes they read.
    pub bytes: u64,
    /// Time they took, ns.
    pub ns: u64,
    /// The slowest request per byte among them: its time, ns (0: not kept).
    pub worst_ns: u64,
    /// ... and its bytes.
    pub worst_bytes: u64,
}

impl Tally {
    /// Time per byte, ns (None before any byte).
    pub fn ns_per_byte(&self) -> Option<f64> {
        (self.bytes > 0).then(|| self.ns as f64 / self.bytes as f64)
    }

    /// The tally without its slowest request, once it has at least three
    /// (one sample that waited for a busy device, or for the CPU, must not
    /// decide alone); as it is otherwise.
    pub fn trimmed(&self) -> Tally {
        if self.n < 3 || self.worst_bytes == 0 || self.worst_bytes >= self.bytes {
            return *self;
        }
        Tally {
            n: self.n - 1,
            bytes: self.bytes - self.worst_bytes,
            ns: self.ns.saturating_sub(self.worst_ns),
            worst_ns: 0,
            worst_bytes: 0,
        }
    }
}

/// What the run-time guard does after a `pread` sample (see [`guard`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GuardVerdict {
    /// Too little evidence, or too close to call: go on sampling.
    Sample,
    /// The technique wins clearly: keep it and sample half as often.
    Keep,
    /// The technique loses: `pread` for the rest of the open file.
    FallBack,
}

/// `pread` samples before the guard judges.
pub const GUARD_MIN_SAMPLES: u64 = 3;

/// Timed technique requests before the guard judges.
pub const GUARD_MIN_TIMED: u64 = 8;

/// The guard falls back when the technique's time per byte is above this
/// many times `pread`'s.
pub const GUARD_LOSING: f64 = 1.25;

/// The guard samples less once the technique's time per byte is at most
/// this many times `pread`'s.
pub const GUARD_WINNING: f64 = 0.8;

/// The run-time guard's judgement of a technique (`tech`: its timed
/// requests) against `pread` samples of the same file (`pread`, without
/// its slowest sample: [`Tally::trimmed`]), by time per byte: fall back
/// when it loses by more than [`GUARD_LOSING`], sample less when it wins
/// by [`GUARD_WINNING`], else go on sampling.
/// The samples share the page cache with the technique, so data the
/// technique read ahead makes them cheaper: the judgement leans towards
/// `pread`, the safe side.
pub fn guard(tech: Tally, pread: Tally) -> GuardVerdict {
    if pread.n < GUARD_MIN_SAMPLES || tech.n < GUARD_MIN_TIMED {
        return GuardVerdict::Sample;
    }
    let (Some(t), Some(p)) = (tech.ns_per_byte(), pread.trimmed().ns_per_byte()) else {
        return GuardVerdict::Sample;
    };
    if t > GUARD_LOSING * p {
        GuardVerdict::FallBack
    } else if t <= GUARD_WINNING * p {
        GuardVerdict::Keep
    } else {
        GuardVerdict::Sample
    }
}

/// Files after the one being opened that [`siblings_ahead`] asks for.
pub const SIBLINGS_AHEAD: usize = 8;

/// Bytes from the start of each such file asked for: a small file whole,
/// a large one's first piece (what its first reads need).
pub const SIBLING_BYTES: u64 = 128 << 10;

/// Opens in a row, each of the file after the last one opened in the same
/// directory (in the directory's order or by name), before
/// [`siblings_ahead`] reads ahead.
pub const SIBLING_STREAK: u32 = 2;

/// Which files of a directory to ask the kernel for (a range of indices in
/// one order of the directory's regular files) when the one at `at` is
/// opened: the [`SIBLINGS_AHEAD`] after it, less those asked for already
/// (below `asked_to`), once `streak` opens in a row have each been of the
/// file after the previous one. A program that reads a tree file by file
/// (`tar`, `grep -r`, `cp -r`) waits for the device once per small file,
/// and no technique for reading one file can shorten that wait; asking for
/// the next files while it reads this one overlaps the waits. Nothing is
/// asked for a program that opens files out of order.
pub fn siblings_ahead(
    streak: u32,
    at: usize,
    asked_to: usize,
    files: usize,
) -> std::ops::Range<usize> {
    if streak < SIBLING_STREAK {
        return 0..0;
    }
    let end = (at + 1 + SIBLINGS_AHEAD).min(files);
    let start = (at + 1).max(asked_to).min(end);
    start..end
}

/// The streak [`siblings_ahead`] counts: one more when the file opened
/// (at `at`) is the one after the previous open's (`prev`), else none.
pub fn sibling_streak(streak: u32, prev: Option<usize>, at: usize) -> u32 {
    match prev {
        Some(p) if p + 1 == at => streak.saturating_add(1),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const G: u64 = 1 << 30;

    fn base() -> Situation {
        Situation {
            len: 4096,
            offset: 12345 * 4096,
            file_len: G,
            sequential: false,
            fraction_read: 0.0,
            regions_read: 0,
            waited_ns: 0,
            reread: false,
            resident: 0.0,
            range_cached: None,
            available: 8 * G,
            batch: 1,
            requests: 0,
            // Long enough for the O_DIRECT stream, where it is sequential.
            stream_bytes: AHEAD_MIN_STREAM,
            direct_again: false,
            follows: false,
            dense: true,
            exact_again: false,
        }
    }

    fn tuned() -> Profile {
        let mut p = Profile::thesis_defaults();
        p.mmap_small_cold = false;
        p.seq_direct = true;
        p.seq_depth = 8;
        p.random_depth = 32;
        p
    }

    #[test]
    // Long on purpose: a table of situations and the choice each must get.
    fn crafted_situations() {
        let p = tuned();
        let cases: Vec<(Situation, Choice)> = vec![
            // Small random, cold, alone: pread.
            (base(), Choice::Pread),
            // ... in a batch: io_uring at the random depth.
            (
                Situation {
                    batch: 32,
                    ..base()
                },
                Choice::Uring { depth: 32 },
            ),
            // Small random, cached: pread (a fresh mapping faults on
            // each page it reads first).
            (
                Situation {
                    resident: 1.0,
                    reread: true,
                    ..base()
                },
                Choice::Pread,
            ),
            // Small random re-read of a file that fits, half cached: pread
            // (a fault of the mapping would read around it).
            (
                Situation {
                    reread: true,
                    resident: 0.5,
                    ..base()
                },
                Choice::Pread,
            ),
            // ... of a file that does not fit: not the mapping.
            (
                Situation {
                    reread: true,
                    resident: 0.5,
                    available: G / 4,
                    ..base()
                },
                Choice::Pread,
            ),
            // Small sequential, cold, of a file under AHEAD_MIN_FILE: pread
            // with the kernel's read-ahead.
            (
                Situation {
                    sequential: true,
                    file_len: AHEAD_MIN_FILE - 1,
                    offset: 4096,
                    ..base()
                },
                Choice::Pread,
            ),
            // ... in requests of 512 bytes: the block cache.
            (
                Situation {
                    sequential: true,
                    file_len: AHEAD_MIN_FILE - 1,
                    offset: 4096,
                    len: 512,
                    ..base()
                },
                Choice::Buffered { block: 4 << 20 },
            ),
            // ... of a larger file: O_DIRECT read ahead of the reader.
            (
                Situation {
                    sequential: true,
                    ..base()
                },
                Choice::Ahead,
            ),
            // Large, cold, fits, read for the first time: O_DIRECT (the
            // tuned profile measured it faster than read-ahead).
            (
                Situation {
                    len: 4 << 20,
                    ..base()
                },
                Choice::Direct,
            ),
            // ... its bytes read again after an O_DIRECT read: pread with
            // the kernel's read-ahead, to cache them.
            (
                Situation {
                    len: 4 << 20,
                    direct_again: true,
                    ..base()
                },
                Choice::Pread,
            ),
            // ... in a region read before, but not these bytes: O_DIRECT.
            (
                Situation {
                    len: 4 << 20,
                    reread: true,
                    ..base()
                },
                Choice::Direct,
            ),
            // Large, cold, bigger than memory: O_DIRECT.
            (
                Situation {
                    len: 4 << 20,
                    file_len: 64 * G,
                    ..base()
                },
                Choice::Direct,
            ),
            // Large, cached: one pread.
            (
                Situation {
                    len: 4 << 20,
                    resident: 0.95,
                    ..base()
                },
                Choice::Pread,
            ),
            // Medium random (above small_max), cold, alone: O_DIRECT,
            // which the profile measured faster than the page cache.
            (
                Situation {
                    len: 128 << 10,
                    ..base()
                },
                Choice::Direct,
            ),
            // Small sequential, cold, the file's last piece: one pread
            // (a block would read the start of the file again).
            (
                Situation {
                    sequential: true,
                    offset: 196608,
                    len: 10926,
                    file_len: 196608 + 10926,
                    reread: true,
                    fraction_read: 1.0,
                    ..base()
                },
                Choice::Pread,
            ),
            // Large, the file not sampled cached, but the probe of the
            // range finds it cached: pread, not O_DIRECT.
            (
                Situation {
                    len: 4 << 20,
                    range_cached: Some(1.0),
                    ..base()
                },
                Choice::Pread,
            ),
            // Reads in order of a large file whose stream ahead is cached:
            // not the O_DIRECT stream.
            (
                Situation {
                    sequential: true,
                    range_cached: Some(0.95),
                    ..base()
                },
                Choice::Mapped,
            ),
            // Empty.
            (Situation { len: 0, ..base() }, Choice::Pread),
        ];
        for (s, want) in cases {
            assert_eq!(decide(&s, &p).choice, want, "{s:?}");
        }
        // Where the page cache measured faster, the medium read is a pread.
        let cache_faster = Profile {
            seq_direct: false,
            ..tuned()
        };
        let medium = Situation {
            len: 128 << 10,
            ..base()
        };
        assert_eq!(decide(&medium, &cache_faster).choice, Choice::Pread);
        // ... and so is one that reads bytes read with O_DIRECT before.
        let again = Situation {
            direct_again: true,
            ..medium
        };
        assert_eq!(decide(&again, &p).choice, Choice::Pread);
    }

    #[test]
    fn a_short_run_in_order_does_not_start_the_o_direct_stream() {
        // Three 2 KiB reads in a row of a cold 256 MiB file: the stream
        // would read 32 MiB ahead for them.
        let p = Profile::builtin();
        let run = Situation {
            len: 2048,
            file_len: 256 << 20,
            sequential: true,
            stream_bytes: 3 * 2048,
            ..base()
        };
        assert_ne!(decide(&run, &p).choice, Choice::Ahead);
        let long = Situation {
            stream_bytes: AHEAD_MIN_STREAM,
            ..run
        };
        assert_eq!(decide(&long, &p).choice, Choice::Ahead);
    }

    #[test]
    fn random_reads_of_cached_data_are_mapped_only_once_they_outnumber_its_pages() {
        // 220 MiB of cached database, 6,900 look-ups: a fault for most
        // page read, pread's one copy is cheaper.
        let p = tuned();
        let look_ups = Situation {
            file_len: 220 << 20,
            resident: 1.0,
            reread: true,
            requests: 6_900,
            ..base()
        };
        assert_eq!(decide(&look_ups, &p).choice, Choice::Pread);
        // A 1 MiB file read 300 times at random: its pages are mapped.
        let hot = Situation {
            file_len: 1 << 20,
            offset: 8192,
            requests: 300,
            ..look_ups
        };
        assert_eq!(decide(&hot, &p).choice, Choice::Mapped);
        // ... not before it was read again, nor with a profile that
        // found the mapping slower.
        let first = Situation {
            reread: false,
            ..hot
        };
        assert_eq!(decide(&first, &p).choice, Choice::Pread);
        let q = Profile {
            mmap_small_warm: false,
            ..p
        };
        assert_eq!(decide(&hot, &q).choice, Choice::Pread);
    }

    #[test]
    fn medium_random_reads_of_cold_data_are_small_only_up_to_the_cold_bound() {
        // A profile whose mapping beat pread on cached reads up to 128 KiB,
        // and whose pread kept up with O_DIRECT on cold ones up to 32 KiB.
        let mut p = tuned();
        p.small_max = 128 << 10;
        p.cold_small_max = 32 << 10;
        let at = |len: usize| Situation {
            len,
            file_len: 48 << 20,
            ..base()
        };
        assert_eq!(decide(&at(32 << 10), &p).choice, Choice::Pread);
        assert_eq!(decide(&at(64 << 10), &p).choice, Choice::Direct);
        // Cached after all (the range probe): one copy.
        let probed = Situation {
            range_cached: Some(1.0),
            ..at(64 << 10)
        };
        assert_eq!(decide(&probed, &p).choice, Choice::Pread);
        // Where pread kept up at 128 KiB, it is a small read.
        p.cold_small_max = 128 << 10;
        assert_eq!(decide(&at(64 << 10), &p).choice, Choice::Pread);
    }

    #[test]
    fn reads_in_order_of_a_cached_file_are_mapped_only_where_the_mapping_pays() {
        let p = tuned();
        let at = |offset: u64, len: usize| Situation {
            file_len: 4 << 20,
            offset,
            len,
            sequential: true,
            resident: 1.0,
            requests: 40,
            ..base()
        };
        // 4 MiB of 4 KiB reads in order: a system call saved per read.
        assert_eq!(decide(&at(1 << 20, 4096), &p).choice, Choice::Mapped);
        // Up to three pages (`tar`'s 10 KiB records): the system call
        // saved still pays for the first touches.
        assert_eq!(decide(&at(1 << 20, 8192), &p).choice, Choice::Mapped);
        assert_eq!(decide(&at(1 << 20, 10240), &p).choice, Choice::Mapped);
        // 16 KiB ones: the first touches of four pages may cost more than
        // the system call they save.
        assert_eq!(decide(&at(1 << 20, 16384), &p).choice, Choice::Pread);
        // The file's last few reads (its tail after a checksum's reads):
        // fewer left than a mapping costs, one pread each.
        let tail = (4 << 20) - (MAP_PAYS_AFTER - 1) * 4096 - 4096;
        assert_eq!(decide(&at(tail, 4096), &p).choice, Choice::Pread);
        assert_eq!(
            decide(&at((4 << 20) - 4096, 4096), &p).choice,
            Choice::Pread
        );
    }

    #[test]
    fn a_small_range_read_again_is_copied_from_a_mapping_of_the_cached_file_or_of_its_first_page() {
        let p = tuned();
        let header = Situation {
            len: 16,
            offset: 24,
            resident: 1.0,
            requests: 40,
            reread: true,
            exact_again: true,
            ..base()
        };
        assert_eq!(decide(&header, &p).choice, Choice::Mapped);
        // The file not cached: the header's page is (its last read brought
        // it in), and a mapping of that page alone serves it.
        let cold = Situation {
            resident: 0.0,
            ..header
        };
        assert_eq!(decide(&cold, &p).choice, Choice::Mapped);
        // The same range past the first page of a file not cached: one
        // pread (the whole file's mapping would fault and read around).
        let past = Situation {
            offset: 2 * HEAD_MAP_MAX + 24,
            ..cold
        };
        assert_eq!(decide(&past, &p).choice, Choice::Pread);
        // Another range of the same region: one pread.
        let other = Situation {
            exact_again: false,
            ..header
        };
        assert_eq!(decide(&other, &p).choice, Choice::Pread);
        // Where the tuner found no mapping faster for small cached reads.
        let q = Profile {
            mmap_small_warm: false,
            ..tuned()
        };
        assert_eq!(decide(&header, &q).choice, Choice::Pread);
        assert_eq!(decide(&cold, &q).choice, Choice::Pread);
    }

    #[test]
    fn a_streak_of_hits_times_one_read_in_eight_until_one_misses() {
        let mut h = 0;
        for _ in 0..HIT_STREAK - 1 {
            h = hit_streak_next(h, 500);
        }
        assert!(!hit_streak_skips(h, 1), "one hit short of the streak");
        h = hit_streak_next(h, 500);
        assert_eq!(h, HIT_STREAK);
        assert!(hit_streak_skips(h, 1));
        assert!(!hit_streak_skips(h, 3 * HIT_SAMPLE), "each eighth is timed");
        assert_eq!(hit_streak_next(h, MISS_NS - 1), HIT_STREAK, "it stays");
        assert_eq!(hit_streak_next(h, MISS_NS), 0, "a miss ends it");
    }

    #[test]
    fn a_small_file_read_whole_goes_through_the_page_cache_a_larger_one_direct() {
        // A medium read of uncached data, larger than the cold bound: the
        // whole of a small file is one pread (the next reader finds it
        // cached); of a larger file, or a part of a small one, O_DIRECT.
        let p = tuned();
        let whole = |file_len: u64, offset: u64, len: usize| Situation {
            len,
            offset,
            file_len,
            ..base()
        };
        let s = whole(36 << 10, 0, 64 << 10);
        assert!(s.len > p.cold_small_max, "the case is above the cold bound");
        assert_eq!(decide(&s, &p).choice, Choice::Pread, "{s:?}");
        assert_eq!(
            decide(&whole(WHOLE_SMALL_MAX, 0, WHOLE_SMALL_MAX as usize), &p).choice,
            Choice::Pread
        );
        let big = WHOLE_SMALL_MAX + 4096;
        assert_eq!(
            decide(&whole(big, 0, big as usize), &p).choice,
            Choice::Direct
        );
        assert_eq!(
            decide(&whole(60 << 10, 4096, 48 << 10), &p).choice,
            Choice::Direct
        );
    }

    #[test]
    fn uncached_data_is_never_read_through_the_mapping() {
        // The thesis maps small random reads of a file that fits, cold or
        // not; each fault then reads the device's read-ahead window (8 MiB
        // here) for 4 KiB. Not with any profile, however much was read.
        for p in [Profile::thesis_defaults(), Profile::builtin(), tuned()] {
            let mut q = p.clone();
            q.mmap_small_cold = true;
            for fraction_read in [0.0, 0.5, 1.0] {
                let s = Situation {
                    fraction_read,
                    regions_read: 500,
                    reread: true,
                    ..base()
                };
                assert_eq!(decide(&s, &q).choice, Choice::Pread, "{s:?}");
            }
        }
        // Large reads of uncached data without a profile: O_DIRECT (the
        // built-in defaults read cold data as the train half's machine
        // did fastest); the thesis's profile leaves them to the kernel.
        let s = Situation {
            len: 8 << 20,
            file_len: 64 * G,
            ..base()
        };
        assert_eq!(decide(&s, &Profile::builtin()).choice, Choice::Direct);
        assert!(!decide(&s, &Profile::builtin()).reason.is_empty());
        assert_eq!(
            decide(&s, &Profile::thesis_defaults()).choice,
            Choice::Pread
        );
        // ... but never data that is cached.
        let warm = Situation { resident: 1.0, ..s };
        assert_eq!(decide(&warm, &Profile::builtin()).choice, Choice::Pread);
    }

    #[test]
    fn reads_are_dense_when_half_the_regions_that_missed_were_read_whole() {
        assert!(dense(8, 16));
        assert!(!dense(7, 16), "less than half");
        assert!(
            !dense(8, 15) && !dense(15, 15),
            "too few regions missed to say"
        );
        assert!(dense(100, 200) && !dense(25, 208));
    }

    #[test]
    fn re_reads_of_the_start_of_a_small_file_do_not_read_it_all_ahead() {
        let p = tuned().with_seq_cold_cached(1024.0);
        // Python's imports: libc (1.9 MB, two 1 MiB regions) has its first
        // 832 bytes read again and again: however long that waited, only
        // one region.
        let libc = Situation {
            len: 832,
            offset: 0,
            file_len: 1_974_096,
            fraction_read: 0.5,
            regions_read: 1,
            reread: true,
            waited_ns: 1_000_000_000,
            ..base()
        };
        assert_eq!(read_ahead_whole(&libc, &p), None);
        assert_eq!(read_ahead_whole(&libc, &Profile::builtin()), None);
        // Spread over as many regions as the rule asks for: read ahead.
        let spread = Situation {
            file_len: 6 << 20,
            regions_read: SPREAD_REGIONS,
            ..libc
        };
        assert!(read_ahead_whole(&spread, &p).is_some());
        // One region fewer: not.
        let fewer = Situation {
            regions_read: SPREAD_REGIONS - 1,
            ..spread
        };
        assert_eq!(read_ahead_whole(&fewer, &p), None);
    }

    #[test]
    // Long on purpose: one situation and the variations that must not read ahead.
    fn random_reads_that_waited_as_long_as_the_rest_of_the_file_takes_read_it_ahead() {
        // The profile read cold files into the page cache at 2048 MiB/s:
        // all of a 256 MiB file in 125 ms.
        let p = tuned().with_seq_cold_cached(2048.0);
        let whole_ns = 125e6;
        let busy = Situation {
            file_len: 256 << 20,
            fraction_read: 16.0 / 257.0,
            regions_read: 16,
            waited_ns: (WAIT_SHARE * whole_ns) as u64,
            ..base()
        };
        let why = read_ahead_whole(&busy, &p).expect("read ahead");
        assert!(why.contains("waited as long"), "{why}");
        // Half of it cached: half the time is enough.
        let half = Situation {
            resident: 0.5,
            waited_ns: (WAIT_SHARE * whole_ns * 0.51) as u64,
            ..busy
        };
        assert!(read_ahead_whole(&half, &p).is_some());
        let not = [
            // A little less waiting: not yet.
            Situation {
                waited_ns: (WAIT_SHARE * whole_ns * 0.96) as u64,
                ..busy
            },
            // Waited as long, but within fewer regions than SPREAD_REGIONS.
            Situation {
                regions_read: SPREAD_REGIONS - 1,
                ..busy
            },
            // Waited as long, but sparse: few regions missed often enough
            // to be read whole (point look-ups of a database).
            Situation {
                dense: false,
                ..busy
            },
            // Does not fit twice in memory.
            Situation {
                available: 384 << 20,
                ..busy
            },
            // Cached already.
            Situation {
                resident: 0.95,
                ..busy
            },
            // Reads running on: the kernel's read-ahead does this.
            Situation {
                sequential: true,
                ..busy
            },
            // One block or less: the read-around covers it.
            Situation {
                file_len: 4 << 20,
                ..busy
            },
            Situation { len: 0, ..busy },
        ];
        for s in not {
            assert_eq!(read_ahead_whole(&s, &p), None, "{s:?}");
        }
        // Without a measured speed the assumed one (slower: later).
        let b = Profile::builtin();
        assert_eq!(read_ahead_whole(&busy, &b), None);
        let assumed_ns = (256 << 20) as f64 / (ASSUMED_SEQ_MIB_S * (1 << 20) as f64) * 1e9;
        let long = Situation {
            waited_ns: (WAIT_SHARE * assumed_ns) as u64 + 1,
            ..busy
        };
        assert!(read_ahead_whole(&long, &b).is_some());
    }

    #[test]
    fn only_the_wait_beyond_moving_the_bytes_counts_toward_reading_ahead() {
        // 1024 MiB/s: a MiB moves in about 977 µs.
        let p = cold_seq_mib_s(&tuned().with_seq_cold_cached(1024.0));
        assert_eq!(p, 1024.0);
        assert_eq!(avoidable_wait(100_000, 4096, p), 100_000 - 3814);
        // A 1 MiB read that took no longer than moving it saves nothing.
        assert_eq!(avoidable_wait(900_000, 1 << 20, p), 0);
        assert_eq!(avoidable_wait(1_500_000, 1 << 20, p), 1_500_000 - 976_562);
    }

    #[test]
    fn look_ups_spread_over_a_large_file_do_not_read_it_all_ahead_before_they_waited() {
        // 30 look-ups of 4 KiB in a 220 MiB database touch 13 % of its
        // regions; they waited 1.5 ms, reading it all takes 100 ms.
        let p = tuned().with_seq_cold_cached(2048.0);
        let s = Situation {
            file_len: 220 << 20,
            fraction_read: 0.14,
            regions_read: 30,
            waited_ns: 1_500_000,
            ..base()
        };
        assert_eq!(read_ahead_whole(&s, &p), None);
    }

    #[test]
    fn the_guard_falls_back_only_on_enough_evidence_of_a_loss() {
        let t = |n: u64, bytes: u64, ns: u64| Tally {
            n,
            bytes,
            ns,
            ..Tally::default()
        };
        // Too few samples or timed requests: sample on.
        assert_eq!(
            guard(t(100, 400_000, 1_000_000), t(2, 8192, 1)),
            GuardVerdict::Sample
        );
        assert_eq!(
            guard(t(7, 28_672, 1_000_000), t(5, 20_480, 1)),
            GuardVerdict::Sample
        );
        // The technique takes twice pread's time per byte: fall back.
        assert_eq!(
            guard(t(8, 32_768, 20_000), t(3, 12_288, 3_000)),
            GuardVerdict::FallBack
        );
        // Within GUARD_LOSING of pread: keep sampling.
        assert_eq!(
            guard(t(8, 32_768, 12_000), t(3, 12_288, 4_000)),
            GuardVerdict::Sample
        );
        // Clearly faster: keep it (and sample less).
        assert_eq!(
            guard(t(8, 32_768, 4_000), t(3, 12_288, 4_000)),
            GuardVerdict::Keep
        );
        // Per byte, not per request: big technique requests, small samples.
        assert_eq!(
            guard(t(8, 8 << 20, 8_000_000), t(3, 12_288, 30_000)),
            GuardVerdict::Keep
        );
        // One sample that waited 3.6 ms for a busy device does not hide
        // that the technique takes 100 times pread's time per byte.
        let slow = Tally {
            worst_ns: 3_600_000,
            worst_bytes: 2048,
            ..t(3, 6144, 3_602_000)
        };
        assert_eq!(
            guard(t(24, 49_152, 35_000_000), slow),
            GuardVerdict::FallBack
        );
        assert_eq!(
            guard(
                t(24, 49_152, 35_000_000),
                Tally {
                    worst_bytes: 0,
                    ..slow
                }
            ),
            GuardVerdict::Sample
        );
    }

    #[test]
    fn huge_pages_are_probed_for_large_reads_in_order_of_large_files_less_often_after_misses() {
        assert!(huge_in_order(HUGE_MIN_READ, 2 * HUGE_REGION));
        assert!(!huge_in_order(HUGE_MIN_READ - 1, 1 << 30));
        assert!(!huge_in_order(1 << 20, 2 * HUGE_REGION - 1));
        // After a hit, or before any probe: every region.
        assert!(huge_probe_due(0, None, 0));
        assert!(huge_probe_due(8, Some((7, true)), 0));
        // Regions probed as a stream reads on through a file held in small
        // pages: each of the first three, then ever further apart.
        let (mut last, mut misses, mut probed) = (None, 0, Vec::new());
        for region in 0..64 {
            if huge_probe_due(region, last, misses) {
                probed.push(region);
                last = Some((region, false));
                misses += 1;
            }
        }
        assert_eq!(probed, [0, 1, 2, 4, 8, 16, 32]);
        // A hit after misses: every region again.
        assert!(huge_probe_due(33, Some((32, true)), 0));
    }

    #[test]
    fn files_of_a_directory_are_asked_for_once_opens_follow_its_order() {
        // Opens of files 0, 1, 2 in a row: the streak reaches 2 at file 2.
        let mut streak = 0;
        let mut prev = None;
        for at in 0..3 {
            streak = sibling_streak(streak, prev, at);
            prev = Some(at);
        }
        assert_eq!(streak, SIBLING_STREAK);
        // Then the 8 after file 2, of 100.
        assert_eq!(siblings_ahead(streak, 2, 0, 100), 3..3 + SIBLINGS_AHEAD);
        // The next open asks only for the one not asked for yet.
        let streak = sibling_streak(streak, Some(2), 3);
        assert_eq!(
            siblings_ahead(streak, 3, 3 + SIBLINGS_AHEAD, 100),
            3 + SIBLINGS_AHEAD..4 + SIBLINGS_AHEAD
        );
        // Near the directory's end: up to its last file, then nothing.
        assert_eq!(siblings_ahead(streak, 95, 0, 100), 96..100);
        assert_eq!(siblings_ahead(streak, 99, 100, 100), 100..100);
        // One open out of order ends the streak; a second in order is not
        // enough to ask again.
        assert_eq!(sibling_streak(streak, Some(3), 7), 0);
        assert_eq!(sibling_streak(0, Some(7), 8), 1);
        assert!(siblings_ahead(1, 8, 0, 100).is_empty());
        // The first open of a directory: nothing.
        assert_eq!(sibling_streak(5, None, 0), 0);
    }
}
