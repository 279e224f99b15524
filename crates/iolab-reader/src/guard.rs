//! `Auto`'s guard at run time: per open file, the time per byte of the
//! technique the policy chose against a sample of plain `pread`s of the
//! same file, and a fall back to `pread` when the technique is losing.
//!
//! A policy decides from what it has seen so far and from a profile
//! measured on other files; a program it has never seen can still make
//! its choice the slow one (a mapping that pays a page fault for every
//! 4 KiB read once, a block cache that reads 4 MiB for each scattered
//! record). So every [`SAMPLE_GAP`]th request the policy sends to a
//! technique other than `pread` is read with `pread` instead, and the
//! few technique requests before it are timed ([`WINDOW`]): each side's
//! nanoseconds and bytes add up in a [`Tally`], and
//! [`policy::guard`](super::policy::guard) says whether to keep the
//! technique, fall back, or sample more. While the technique keeps
//! winning the gap between samples doubles (up to [`MAX_GAP`]), so the
//! samples' cost (a sample of cold data waits for the device) shrinks as
//! the evidence grows. A fall back is for the rest of the open file and
//! is kept as a [`Switch`]: the reader's own record
//! ([`Reader::switched`](super::Reader::switched)) and the process's log
//! ([`take_switches`]), which a replay reports.
//!
//! The samples share the page cache with the technique: data the
//! technique brought in (a block cache's block, a mapping's read-around)
//! makes a later `pread` sample of it cheap. The comparison therefore
//! leans towards `pread`, the safe side: a technique is kept only when it
//! beats what its own read-ahead lets `pread` do.

use super::policy::{self, GuardVerdict, Tally};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, OnceLock};

/// Technique requests between two `pread` samples at first.
pub const SAMPLE_GAP: u64 = 16;

/// Most technique requests between two samples.
pub const MAX_GAP: u64 = 4096;

/// Technique requests timed before each sample (the rest are not timed:
/// two clock reads cost a tenth of a 4 KiB copy out of a mapping).
pub const WINDOW: u64 = 8;

/// Most switches the process's log keeps (later ones are only counted).
pub const LOG_MAX: usize = 256;

/// Why and when `Auto` stopped using its technique for one open file.
#[derive(Clone, Debug, PartialEq)]
pub struct Switch {
    /// The file.
    pub path: PathBuf,
    /// Requests of the file before the switch.
    pub request: u64,
    /// The technique it left, as the policy names it.
    pub from: String,
    /// Its time per MiB over the timed requests, µs.
    pub technique_us_per_mib: f64,
    /// `pread`'s time per MiB over the samples but the slowest, µs.
    pub pread_us_per_mib: f64,
    /// `pread` samples taken.
    pub samples: u64,
}

impl std::fmt::Display for Switch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {} took {:.0} µs/MiB against pread's {:.0} µs/MiB ({} samples): pread from request {} on",
            self.path.display(),
            self.from,
            self.technique_us_per_mib,
            self.pread_us_per_mib,
            self.samples,
            self.request
        )
    }
}

/// How to read one request the policy sent to a technique.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Arm {
    /// With the technique, untimed.
    Technique,
    /// With the technique, timed for the guard.
    Timed,
    /// With `pread`, timed: a sample.
    Sample,
    /// With `pread`: the guard fell back.
    FellBack,
}

/// The two tallies of one open file and where sampling stands.
#[derive(Default)]
pub(crate) struct Guard {
    tech: [AtomicU64; 3],
    pread: [AtomicU64; 3],
    /// The slowest sample per byte: its ns and bytes.
    worst: [AtomicU64; 2],
    since: AtomicU64,
    gap: AtomicU64,
    off: AtomicBool,
    switch: OnceLock<Switch>,
}

fn add(t: &[AtomicU64; 3], ns: u64, bytes: usize) {
    t[0].fetch_add(1, Relaxed);
    t[1].fetch_add(bytes as u64, Relaxed);
    t[2].fetch_add(ns, Relaxed);
}

fn tally(t: &[AtomicU64; 3]) -> Tally {
    Tally {
        n: t[0].load(Relaxed),
        bytes: t[1].load(Relaxed),
        ns: t[2].load(Relaxed),
        ..Tally::default()
    }
}

impl Guard {
    /// How to read the next request the policy sends to a technique.
    pub(crate) fn arm(&self) -> Arm {
        if self.off.load(Relaxed) {
            return Arm::FellBack;
        }
        let gap = match self.gap.load(Relaxed) {
            0 => SAMPLE_GAP,
            g => g,
        };
        let k = self.since.fetch_add(1, Relaxed) + 1;
        if k >= gap {
            self.since.store(0, Relaxed);
            Arm::Sample
        } else if k + WINDOW >= gap {
            Arm::Timed
        } else {
            Arm::Technique
        }
    }

    /// A timed technique request of `bytes` took `ns`.
    pub(crate) fn technique(&self, ns: u64, bytes: usize) {
        add(&self.tech, ns, bytes);
    }

    /// A `pread` sample of `bytes` took `ns`; decides. Returns the switch
    /// when this sample made the guard fall back (`from` names the
    /// technique, `request` counts the file's requests so far).
    pub(crate) fn sample(
        &self,
        ns: u64,
        bytes: usize,
        path: &Path,
        from: &str,
        request: u64,
    ) -> Option<&Switch> {
        add(&self.pread, ns, bytes);
        // The slowest sample per byte (two racing samples may both keep
        // theirs: either is fine).
        let (wn, wb) = (self.worst[0].load(Relaxed), self.worst[1].load(Relaxed));
        if wb == 0 || (ns as u128) * (wb as u128) > (wn as u128) * (bytes.max(1) as u128) {
            self.worst[0].store(ns, Relaxed);
            self.worst[1].store(bytes.max(1) as u64, Relaxed);
        }
        let t = tally(&self.tech);
        let p = Tally {
            worst_ns: self.worst[0].load(Relaxed),
            worst_bytes: self.worst[1].load(Relaxed),
            ..tally(&self.pread)
        };
        let gap = self.gap.load(Relaxed).max(SAMPLE_GAP);
        match policy::guard(t, p) {
            GuardVerdict::Sample => None,
            GuardVerdict::Keep => {
                self.gap.store((gap * 2).min(MAX_GAP), Relaxed);
                None
            }
            GuardVerdict::FallBack => {
                if self.off.swap(true, Relaxed) {
                    return None;
                }
                let per_mib = |x: Tally| x.ns_per_byte().unwrap_or(0.0) * (1 << 20) as f64 / 1e3;
                let s = Switch {
                    path: path.to_path_buf(),
                    request,
                    from: from.to_string(),
                    technique_us_per_mib: per_mib(t),
                    pread_us_per_mib: per_mib(p.trimmed()),
                    samples: p.n,
                };
                log(&s);
                Some(self.switch.get_or_init(|| s))
            }
        }
    }

    /// The switch, once the guard fell back.
    pub(crate) fn switch(&self) -> Option<&Switch> {
        self.switch.get()
    }
}

struct Log {
    switches: Vec<Switch>,
    more: u64,
}

static LOG: Mutex<Log> = Mutex::new(Log {
    switches: Vec::new(),
    more: 0,
});

fn log(s: &Switch) {
    let mut g = LOG.lock().unwrap_or_else(|e| e.into_inner());
    if g.switches.len() < LOG_MAX {
        g.switches.push(s.clone());
    } else {
        g.more += 1;
    }
}

/// The switches of every `Auto` reader of this process since the last
/// call (at most [`LOG_MAX`]), and how many more there were.
pub fn take_switches() -> (Vec<Switch>, u64) {
    let mut g = LOG.lock().unwrap_or_else(|e| e.into_inner());
    let more = std::mem::take(&mut g.more);
    (std::mem::take(&mut g.switches), more)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_come_every_gap_after_a_timed_window_and_thin_out_while_winning() {
        let g = Guard::default();
        let arms: Vec<Arm> = (0..SAMPLE_GAP).map(|_| g.arm()).collect();
        let timed_from = (SAMPLE_GAP - WINDOW) as usize;
        assert!(
            arms[..timed_from - 1].iter().all(|&a| a == Arm::Technique),
            "{arms:?}"
        );
        assert!(arms[timed_from - 1..SAMPLE_GAP as usize - 1]
            .iter()
            .all(|&a| a == Arm::Timed));
        assert_eq!(arms[SAMPLE_GAP as usize - 1], Arm::Sample);
        // The technique at a tenth of pread's time per byte: once there is
        // evidence enough, the gap doubles at every sample.
        let p = Path::new("f");
        for _ in 0..policy::GUARD_MIN_TIMED {
            g.technique(100, 4096);
        }
        for _ in 0..policy::GUARD_MIN_SAMPLES {
            assert!(g.sample(1000, 4096, p, "the mapping", 1).is_none());
        }
        assert_eq!(g.gap.load(Relaxed), 2 * SAMPLE_GAP);
        assert!(g.switch().is_none());
    }

    #[test]
    fn a_losing_technique_falls_back_once_with_its_reason() {
        let g = Guard::default();
        let p = Path::new("/data/f");
        for _ in 0..policy::GUARD_MIN_TIMED {
            g.technique(50_000, 4096);
        }
        assert!(g.sample(1_000, 4096, p, "the mapping", 40).is_none());
        assert!(g.sample(1_000, 4096, p, "the mapping", 56).is_none());
        let s = g.sample(1_000, 4096, p, "the mapping", 72).cloned();
        let s = s.expect("fell back");
        assert_eq!((s.request, s.samples), (72, 3));
        assert!(s.technique_us_per_mib > 40.0 * s.pread_us_per_mib, "{s}");
        assert!(
            s.to_string().starts_with("/data/f: the mapping took"),
            "{s}"
        );
        assert_eq!(g.arm(), Arm::FellBack);
        // Later samples change nothing.
        assert!(g.sample(1, 4096, p, "the mapping", 99).is_none());
        assert_eq!(g.switch().map(|x| x.request), Some(72));
    }
}
