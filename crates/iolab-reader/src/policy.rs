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
    /// Time this reader has spent in reads of the file so far, ns (counted
    /// until the file is read ahead whole or found cached).
    pub waited_ns: u64,
    /// The request re-reads data this reader read before.
    pub reread: bool,
    /// Fraction of the file in the page cache (sampled with mincore).
    pub resident: f64,
    /// Memory available for the page cache, bytes.
    pub available: u64,
    /// Requests in the batch this one came with (1 for `read_at`).
    pub batch: usize,
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

/// Whether reads in order of a large cold file go to [`Choice::Ahead`]:
/// the profile measured O_DIRECT faster than the page cache for cold
/// sequential reads, the file is at least [`AHEAD_MIN_FILE`], and it is
/// not cached. Whatever the request size: a program reading 10 KiB at a
/// time (`tar`) otherwise gets the kernel's read-ahead (or the block
/// cache's 4 MiB preads, one at a time), and one reading 128 KiB at a time
/// an O_DIRECT read per request with the device idle in between.
/// Re-reads do not count against it: reads in order of 10 KiB touch the
/// same 1 MiB region many times.
fn ahead_pays(s: &Situation, p: &Profile, warm: bool) -> bool {
    s.sequential && !warm && p.seq_direct && s.file_len >= AHEAD_MIN_FILE
}

/// Decides how to read one request.
pub fn decide(s: &Situation, p: &Profile) -> Decision {
    let fits = (s.file_len as f64) <= s.available as f64 * p.fit_fraction;
    let warm = s.resident >= WARM;
    let small = s.len <= p.small_max;
    let large = s.len >= p.seq_block.min(1 << 20) / 4;
    if s.len == 0 {
        return d(Choice::Pread, "empty request");
    }
    if ahead_pays(s, p, warm) {
        return d(
            Choice::Ahead,
            "reads in order of a large uncached file: O_DIRECT pieces read ahead, the queue kept full",
        );
    }
    if small {
        return small_request(s, p, warm, fits);
    }
    if warm {
        return d(Choice::Pread, "cached data: one copy out of the page cache");
    }
    if large || s.sequential {
        if p.seq_direct && !fits {
            return d(
                Choice::Direct,
                "large read of uncached data that will not stay cached: O_DIRECT",
            );
        }
        // The tuner found O_DIRECT faster for cold large reads: the page
        // cache only pays for data read again, which shows as re-reads.
        if p.seq_direct && !s.reread {
            return d(
                Choice::Direct,
                "first large read of uncached data: O_DIRECT (measured faster than read-ahead)",
            );
        }
        // Buffered io_uring reads of uncached data lose the kernel's
        // read-ahead (they are punted to workers): plain pread keeps it.
        return d(
            Choice::Pread,
            "large read of uncached data: pread with the kernel's read-ahead",
        );
    }
    if s.batch > 1 {
        return queued(
            p,
            "a batch of medium reads of uncached data: keep the queue full",
        );
    }
    d(Choice::Pread, "medium random read: one pread")
}

/// The rules for a small request (at most the profile's `small_max`), in
/// order: sequential ones by blocks (or the mapping when cached), random
/// ones by the mapping, a batch, or one pread.
fn small_request(s: &Situation, p: &Profile, warm: bool, fits: bool) -> Decision {
    if s.sequential {
        if warm && p.mmap_small_warm {
            return d(
                Choice::Mapped,
                "small sequential reads of a cached file: copy from the mapping",
            );
        }
        // A block cache would read the whole block again from its start
        // (a file's tail after 96 KiB reads: all of the file once more).
        if s.offset.saturating_add(s.len as u64) >= s.file_len {
            return d(
                Choice::Pread,
                "the last piece of a sequential read: one pread, nothing left to read ahead",
            );
        }
        return d(
            Choice::Buffered { block: p.seq_block },
            "small sequential reads: whole blocks with read-ahead",
        );
    }
    if (warm || s.reread && fits) && p.mmap_small_warm {
        return d(
            Choice::Mapped,
            "small random read of cached data: a copy beats a system call",
        );
    }
    if fits && p.mmap_small_cold && s.fraction_read > super::thesis::LARGER_PORTION {
        return d(
            Choice::Mapped,
            "small random reads over much of a file that fits: the mapping's read-around pays",
        );
    }
    if s.batch > 1 {
        return queued(
            p,
            "a batch of small reads of uncached data: keep the device's queue full",
        );
    }
    d(
        Choice::Pread,
        "small random read of uncached data: one pread, no read-around",
    )
}

/// Share of the time the whole file takes to read (at the profile's cold
/// sequential speed) that random reads of it may wait before the whole
/// file is read ahead anyway (see [`read_ahead_whole`]).
pub const WAIT_SHARE: f64 = 0.25;

/// Whether to ask the kernel, once per file, to read the whole file ahead
/// (`POSIX_FADV_WILLNEED`) before this request, and why. Small reads of
/// uncached data jump about a file that fits in memory twice over; one
/// sequential stream of large requests reads it at the device's speed,
/// where the mapping's read-around or a `pread` per page waits for the
/// device once per piece. Either
///
/// - they have touched more than the thesis's "larger portion" (13 %) of
///   it, so most of it will be read; or
/// - they have already waited [`WAIT_SHARE`] of the time the whole file
///   takes at the profile's cold sequential speed (a slow or busy device:
///   a SQLite query waited 2.6 ms per 4 KiB page and spent 100 ms of a
///   330 ms replay before the 13 % came). Ski rental: a program that
///   stops reading right after has waited at most 1 / `WAIT_SHARE` times
///   longer than it would have.
///
/// Either way only once the reads have touched [`SPREAD_REGIONS`] regions
/// (python's imports read the first 832 bytes of libc twelve times, "half
/// of" a 2 MiB file in regions), and never for a file of at most one
/// sequential block (the kernel's own read-around covers it).
pub fn read_ahead_whole(s: &Situation, p: &Profile) -> Option<&'static str> {
    let roomy = s.file_len as f64 * 2.0 <= s.available as f64 * p.fit_fraction;
    let candidate = s.len > 0
        && s.len <= p.small_max
        && !s.sequential
        && s.resident < WARM
        && s.file_len > p.seq_block as u64
        && roomy
        && s.regions_read >= SPREAD_REGIONS;
    if !candidate {
        return None;
    }
    if s.fraction_read > super::thesis::LARGER_PORTION {
        return Some("random reads over more than 13 % of a file that fits");
    }
    // Last: the only test that looks through the profile's measurements.
    let whole_ns = p
        .seq_cold_cached_mib_s()
        .map(|mib_s| s.file_len as f64 / (mib_s * (1u64 << 20) as f64) * 1e9)?;
    (s.waited_ns as f64 >= WAIT_SHARE * whole_ns).then_some(
        "random reads of a file that fits have waited a quarter of the time reading all of it takes",
    )
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
    const OVER_PORTION: &str = "random reads over more than 13 % of a file that fits";

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
            available: 8 * G,
            batch: 1,
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
            // Small random, cached: the mapping.
            (
                Situation {
                    resident: 1.0,
                    ..base()
                },
                Choice::Mapped,
            ),
            // Small random re-read of a file that fits: the mapping.
            (
                Situation {
                    reread: true,
                    resident: 0.5,
                    ..base()
                },
                Choice::Mapped,
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
            // Small sequential, cold, of a file under AHEAD_MIN_FILE: the
            // block cache with read-ahead.
            (
                Situation {
                    sequential: true,
                    file_len: AHEAD_MIN_FILE - 1,
                    offset: 4096,
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
            // ... read again: pread with the kernel's read-ahead, to cache it.
            (
                Situation {
                    len: 4 << 20,
                    reread: true,
                    ..base()
                },
                Choice::Pread,
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
            // Medium random, cold, alone: pread.
            (
                Situation {
                    len: 128 << 10,
                    ..base()
                },
                Choice::Pread,
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
            // Empty.
            (Situation { len: 0, ..base() }, Choice::Pread),
        ];
        for (s, want) in cases {
            assert_eq!(decide(&s, &p).choice, want, "{s:?}");
        }
    }

    #[test]
    fn defaults_follow_the_thesis() {
        let p = Profile::thesis_defaults();
        // Small random over most of a file that fits: mapped, cold or not.
        let s = Situation {
            fraction_read: 0.5,
            ..base()
        };
        assert_eq!(decide(&s, &p).choice, Choice::Mapped);
        // Large: 4 MiB pieces, no O_DIRECT.
        let s = Situation {
            len: 8 << 20,
            file_len: 64 * G,
            ..base()
        };
        assert_eq!(decide(&s, &p).choice, Choice::Pread);
        assert!(!decide(&s, &p).reason.is_empty());
    }

    #[test]
    fn re_reads_of_the_start_of_a_small_file_do_not_read_it_all_ahead() {
        let p = tuned();
        // Python's imports: libc (1.9 MB, two 1 MiB regions) has its first
        // 832 bytes read again and again: "half of the file" in regions,
        // but only one region.
        let libc = Situation {
            len: 832,
            offset: 0,
            file_len: 1_974_096,
            fraction_read: 0.5,
            regions_read: 1,
            reread: true,
            ..base()
        };
        assert_eq!(read_ahead_whole(&libc, &p), None);
        assert_eq!(read_ahead_whole(&libc, &Profile::thesis_defaults()), None);
        // The same spread over as many regions as the rule asks for: read ahead.
        let spread = Situation {
            file_len: 6 << 20,
            regions_read: SPREAD_REGIONS,
            fraction_read: 4.0 / 7.0,
            ..libc
        };
        assert_eq!(read_ahead_whole(&spread, &p), Some(OVER_PORTION));
        // One region fewer: not.
        let fewer = Situation {
            regions_read: SPREAD_REGIONS - 1,
            ..spread
        };
        assert_eq!(read_ahead_whole(&fewer, &p), None);
    }

    #[test]
    fn random_reads_that_waited_a_quarter_of_the_whole_files_time_read_it_ahead() {
        let mut p = tuned();
        // The profile read cold files into the page cache at 1024 MiB/s:
        // all of a 256 MiB file in 250 ms.
        p.measurements.push(crate::profile::Measurement {
            pattern: "seq".into(),
            cache: "cold".into(),
            technique: "whole:buffered".into(),
            block: 1 << 20,
            depth: 8,
            threads: 1,
            mib_s: 1024.0,
            p999_us: 0.0,
            cpu_ms_per_gib: 0.0,
            pareto: true,
        });
        // 16 random 4 KiB reads over 16 of its 257 regions (6 %), each
        // waiting 4 ms for a busy device: 64 ms, a quarter of 250 ms.
        let busy = Situation {
            file_len: 256 << 20,
            fraction_read: 16.0 / 257.0,
            regions_read: 16,
            waited_ns: 64_000_000,
            ..base()
        };
        let why = read_ahead_whole(&busy, &p).expect("read ahead");
        assert!(why.contains("waited a quarter"), "{why}");
        let not = [
            // A little less waiting: not yet.
            Situation {
                waited_ns: 62_000_000,
                ..busy
            },
            // Waited as long, but within fewer regions than SPREAD_REGIONS.
            Situation {
                regions_read: SPREAD_REGIONS - 1,
                ..busy
            },
            // Does not fit twice in memory.
            Situation {
                available: 384 << 20,
                ..busy
            },
        ];
        for s in not {
            assert_eq!(read_ahead_whole(&s, &p), None, "{s:?}");
        }
        // Without a measured speed (the built-in profile) waiting alone
        // never reads ahead.
        assert_eq!(read_ahead_whole(&busy, &tuned()), None);
    }

    #[test]
    fn the_whole_file_is_read_ahead_once_random_reads_spread_over_it() {
        let p = tuned();
        // Random 4 KiB reads over 20 % of a cold 1 GiB file, 8 GiB free.
        let spread = Situation {
            fraction_read: 0.2,
            regions_read: 205,
            ..base()
        };
        assert_eq!(read_ahead_whole(&spread, &p), Some(OVER_PORTION));
        assert_eq!(
            read_ahead_whole(&spread, &Profile::thesis_defaults()),
            Some(OVER_PORTION)
        );
        let not = [
            // Not yet a larger portion of the file.
            Situation {
                fraction_read: 0.1,
                ..base()
            },
            // Cached already.
            Situation {
                resident: 0.95,
                ..spread
            },
            // Reads running on: the kernel's read-ahead does this.
            Situation {
                sequential: true,
                ..spread
            },
            // Large requests: read as they come.
            Situation {
                len: 1 << 20,
                ..spread
            },
            // Would take more than half the memory left.
            Situation {
                available: G + G / 2,
                ..spread
            },
            // One block or less: the read-around covers it.
            Situation {
                file_len: 4 << 20,
                ..spread
            },
            Situation { len: 0, ..spread },
        ];
        for s in not {
            assert_eq!(read_ahead_whole(&s, &p), None, "{s:?}");
        }
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
