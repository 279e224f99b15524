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
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::Mutex;

/// Technique requests between two `pread` samples at first.
pub const SAMPLE_GAP: u64 = 16;

/// Most technique requests between two samples.
pub const MAX_GAP: u64 = 4096;

/// Technique requests timed before each sample (the rest are not timed:
/// two clock reads cost a tenth of a 4 KiB copy out of a mapping).
pub const WINDOW: u64 = 8;

/// Requests read with `pread` after a fall back before the technique is
/// tried again.
pub const RETRY_FIRST: u64 = 1024;

/// Most requests between two trials of a technique that keeps losing.
pub const RETRY_MAX: u64 = 1 << 20;

/// Most switches the process's log keeps (later ones are only counted).
pub const LOG_MAX: usize = 256;

/// Why and when `Auto` stopped using its technique for one open file, or
/// took it back after a trial.
#[derive(Clone, Debug, PartialEq)]
pub struct Switch {
    /// The file.
    pub path: PathBuf,
    /// Requests of the file before the switch.
    pub request: u64,
    /// The technique it left (or took back), as the policy names it.
    pub from: String,
    /// Its time per MiB over the timed requests, µs.
    pub technique_us_per_mib: f64,
    /// `pread`'s time per MiB over the samples but the slowest, µs.
    pub pread_us_per_mib: f64,
    /// `pread` samples taken.
    pub samples: u64,
    /// False: a fall back to `pread`. True: a trial after one found the
    /// technique winning, and it reads the file again from `request` on.
    pub back: bool,
}

impl std::fmt::Display for Switch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (path, from) = (self.path.display(), &self.from);
        let (t, p, n) = (
            self.technique_us_per_mib,
            self.pread_us_per_mib,
            self.samples,
        );
        if self.back {
            write!(
                f,
                "{path}: {from} again from request {} on: a trial took {t:.0} µs/MiB against pread's {p:.0} µs/MiB ({n} samples)",
                self.request
            )
        } else {
            write!(
                f,
                "{path}: {from} took {t:.0} µs/MiB against pread's {p:.0} µs/MiB ({n} samples): pread from request {} on",
                self.request
            )
        }
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

/// Where a guard stands.
const USING: u8 = 0;
const FELL_BACK: u8 = 1;
const TRIAL: u8 = 2;

/// The two tallies of one open file and where sampling stands. `repr(C)`:
/// what [`Guard::arm`] reads at every request (where the guard stands and
/// the count to the next sample) first, in one cache line.
#[derive(Default)]
#[repr(C)]
pub(crate) struct Guard {
    /// [`USING`] the technique, [`FELL_BACK`] to `pread`, or in a
    /// [`TRIAL`] of the technique after a fall back.
    mode: AtomicU8,
    since: AtomicU64,
    gap: AtomicU64,
    /// Requests read with `pread` since the fall back or the last trial.
    idle: AtomicU64,
    /// Requests to read with `pread` before the next trial.
    retry: AtomicU64,
    tech: [AtomicU64; 3],
    pread: [AtomicU64; 3],
    /// The slowest sample per byte: its ns and bytes.
    worst: [AtomicU64; 2],
    /// The fall back in force (None while the technique is used).
    switch: Mutex<Option<Switch>>,
}

fn add(t: &[AtomicU64; 3], ns: u64, bytes: usize) {
    t[0].fetch_add(1, Relaxed);
    t[1].fetch_add(bytes as u64, Relaxed);
    t[2].fetch_add(ns, Relaxed);
}

fn clear(t: &[AtomicU64]) {
    for x in t {
        x.store(0, Relaxed);
    }
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
    ///
    /// The counts are a load and a store, not a locked read-modify-write
    /// (a few nanoseconds of every request the technique serves, against
    /// a copy of a cached 4 KiB page out of a mapping of some 400 ns): two
    /// threads racing on them only move a sample by a request.
    pub(crate) fn arm(&self) -> Arm {
        if self.mode.load(Relaxed) == FELL_BACK {
            let idle = self.idle.load(Relaxed) + 1;
            self.idle.store(idle, Relaxed);
            if idle < self.retry.load(Relaxed) {
                return Arm::FellBack;
            }
            self.start_trial();
        }
        let gap = match self.gap.load(Relaxed) {
            0 => SAMPLE_GAP,
            g => g,
        };
        let k = self.since.load(Relaxed) + 1;
        self.since.store(k, Relaxed);
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

    /// A trial of the technique: fresh tallies (what was judged before is
    /// not evidence now), sampled from the first gap again.
    fn start_trial(&self) {
        clear(&self.tech);
        clear(&self.pread);
        clear(&self.worst);
        self.since.store(0, Relaxed);
        self.gap.store(0, Relaxed);
        self.idle.store(0, Relaxed);
        self.mode.store(TRIAL, Relaxed);
    }

    /// A `pread` sample of `bytes` took `ns`; decides. Returns the switch
    /// when this sample made the guard fall back, or a trial took the
    /// technique back (`from` names the technique, `request` counts the
    /// file's requests so far).
    pub(crate) fn sample(
        &self,
        ns: u64,
        bytes: usize,
        path: &Path,
        from: &str,
        request: u64,
    ) -> Option<Switch> {
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
        let per_mib = |x: Tally| x.ns_per_byte().unwrap_or(0.0) * (1 << 20) as f64 / 1e3;
        let switch = |back| Switch {
            path: path.to_path_buf(),
            request,
            from: from.to_string(),
            technique_us_per_mib: per_mib(t),
            pread_us_per_mib: per_mib(p.trimmed()),
            samples: p.n,
            back,
        };
        let verdict = policy::guard(t, p);
        if verdict == GuardVerdict::Keep {
            self.gap.store((gap * 2).min(MAX_GAP), Relaxed);
        }
        self.act(verdict, switch)
    }

    /// What `verdict` does where the guard stands: a trial won takes the
    /// technique back, one lost waits twice as long for the next, and a
    /// loss while the technique is used falls back. Returns the switch it
    /// logged, made by `switch` (`back`: taken back).
    fn act(&self, verdict: GuardVerdict, switch: impl Fn(bool) -> Switch) -> Option<Switch> {
        match (verdict, self.mode.load(Relaxed)) {
            (GuardVerdict::Keep, TRIAL) => {
                if self.mode.swap(USING, Relaxed) != TRIAL {
                    return None;
                }
                let s = switch(true);
                *self.current() = None;
                log(&s);
                Some(s)
            }
            (GuardVerdict::FallBack, TRIAL) => {
                // Lost again: wait twice as long before the next trial.
                let r = self.retry.load(Relaxed).max(RETRY_FIRST);
                self.retry.store((r * 2).min(RETRY_MAX), Relaxed);
                self.idle.store(0, Relaxed);
                self.mode.store(FELL_BACK, Relaxed);
                None
            }
            (GuardVerdict::FallBack, USING) => {
                if self.mode.swap(FELL_BACK, Relaxed) != USING {
                    return None;
                }
                self.retry.store(RETRY_FIRST, Relaxed);
                self.idle.store(0, Relaxed);
                let s = switch(false);
                *self.current() = Some(s.clone());
                log(&s);
                Some(s)
            }
            _ => None,
        }
    }

    fn current(&self) -> std::sync::MutexGuard<'_, Option<Switch>> {
        self.switch.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The fall back in force: None before any, and after a trial took
    /// the technique back (a trial under way still shows it).
    pub(crate) fn switch(&self) -> Option<Switch> {
        self.current().clone()
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
        let s = g.sample(1_000, 4096, p, "the mapping", 72);
        let s = s.expect("fell back");
        assert_eq!((s.request, s.samples, s.back), (72, 3, false));
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

    /// Falls `g` back from a technique at `tech_ns` per 4 KiB against
    /// `pread` at 1,000 ns.
    fn fall_back(g: &Guard, tech_ns: u64) {
        let p = Path::new("/data/f");
        for _ in 0..policy::GUARD_MIN_TIMED {
            g.technique(tech_ns, 4096);
        }
        for i in 0..policy::GUARD_MIN_SAMPLES {
            g.sample(1_000, 4096, p, "the mapping", 40 + i);
        }
        assert!(g.switch().is_some());
    }

    /// Arms of a trial up to its first sample, timing the technique's
    /// window at `tech_ns` per 4 KiB; returns how many arms it took.
    fn trial_window(g: &Guard, tech_ns: u64) -> u64 {
        let mut n = 0;
        loop {
            n += 1;
            match g.arm() {
                Arm::Timed => g.technique(tech_ns, 4096),
                Arm::Sample => return n,
                Arm::FellBack => panic!("fell back during a trial's window"),
                Arm::Technique => {}
            }
        }
    }

    #[test]
    fn after_a_fall_back_the_technique_is_tried_again_and_taken_back_when_it_wins() {
        let g = Guard::default();
        let p = Path::new("/data/f");
        // Slow at first (a fresh mapping's faults), then fast.
        fall_back(&g, 5_000);
        for _ in 0..RETRY_FIRST - 1 {
            assert_eq!(g.arm(), Arm::FellBack);
        }
        // The trial: the technique again, judged on fresh tallies only.
        let mut back = None;
        for i in 0..policy::GUARD_MIN_SAMPLES {
            assert!(back.is_none(), "judged before its samples");
            trial_window(&g, 200);
            back = g.sample(1_000, 4096, p, "the mapping", 2_000 + i);
        }
        let s = back.expect("the trial took the technique back");
        assert!(s.back, "{s}");
        assert!(
            s.to_string()
                .starts_with("/data/f: the mapping again from request 2002 on"),
            "{s}"
        );
        assert!(s.technique_us_per_mib < s.pread_us_per_mib, "{s}");
        assert!(g.switch().is_none(), "the fall back still in force");
        assert_ne!(g.arm(), Arm::FellBack);
        let (log, _) = take_switches();
        assert!(log.iter().any(|x| x.back && x.request == 2_002), "{log:?}");
    }

    #[test]
    fn a_technique_that_loses_its_trial_waits_twice_as_long_for_the_next() {
        let g = Guard::default();
        let p = Path::new("/data/f");
        fall_back(&g, 50_000);
        let first = g.switch().expect("fell back");
        let (mut wait, mut waited) = (RETRY_FIRST, 0);
        for _ in 0..3 {
            // The trial comes with the wait's last request.
            for _ in waited..wait - 1 {
                assert_eq!(g.arm(), Arm::FellBack);
            }
            for i in 0..policy::GUARD_MIN_SAMPLES {
                trial_window(&g, 50_000);
                assert!(g.sample(1_000, 4096, p, "the mapping", 9_000 + i).is_none());
            }
            // Lost: pread again, and the first fall back is still the one
            // in force.
            assert_eq!(g.arm(), Arm::FellBack);
            assert_eq!(g.switch(), Some(first.clone()));
            (wait, waited) = (wait * 2, 1);
        }
        assert_eq!(g.retry.load(Relaxed), 8 * RETRY_FIRST);
    }
}
