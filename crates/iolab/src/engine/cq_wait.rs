//! How the owner of an SQPOLL ring waits for completions (`--sqpoll-wait`):
//! by spinning on the CQ ring in user space, as fio's io_uring engine does,
//! or by sleeping in `io_uring_enter`.
//!
//! Spinning saves a wake-up per completion, which decides depth-1 latency
//! (measured here, quiet machine: sleeping made 0.58–0.90× fio's IOPS at
//! depths 1–32). But it is fast only while the spinner and the kernel's SQ
//! thread each have a core: when they share one, the spinner holds the CPU
//! the SQ thread needs to issue and complete the very I/O it waits for, and
//! fio's depth-1 SQPOLL fell to 31–123 IOPS on this 2-core VM under load.
//! So `auto` (the default) spins only when, as the ring is set up, a core
//! is free for every SQPOLL ring's submitter and SQ thread; and when a
//! spin sees its submissions left unread by an awake SQ thread for
//! `SPIN_LIMIT` (the SQ thread gets no CPU), that wait goes on sleeping;
//! after `STARVED_LIMIT` such waits the ring sleeps for good. A slow
//! device alone does not stop the spin.

use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// `--sqpoll-wait`: how an SQPOLL ring's submitter waits for completions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SqpollWait {
    /// Spin when a core is free for it (see the module's text).
    #[default]
    Auto,
    /// Always spin on the CQ ring (fio's way).
    Spin,
    /// Always sleep in `io_uring_enter`.
    Sleep,
}

impl SqpollWait {
    /// The name as the command line spells it.
    pub fn name(self) -> &'static str {
        match self {
            SqpollWait::Auto => "auto",
            SqpollWait::Spin => "spin",
            SqpollWait::Sleep => "sleep",
        }
    }

    /// True for the default (records leave it out).
    pub fn is_auto(&self) -> bool {
        *self == SqpollWait::Auto
    }
}

impl std::str::FromStr for SqpollWait {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(SqpollWait::Auto),
            "spin" => Ok(SqpollWait::Spin),
            "sleep" => Ok(SqpollWait::Sleep),
            _ => Err(format!(
                "unknown SQPOLL wait '{s}' (one of auto, spin, sleep)"
            )),
        }
    }
}

/// Submissions left unread this long by an awake SQ thread mean it is
/// starved of CPU: the wait goes on sleeping.
pub(super) const SPIN_LIMIT: Duration = Duration::from_millis(2);
/// After this many over-long spins the ring sleeps for the rest of its life.
pub(super) const STARVED_LIMIT: u32 = 8;

/// SQPOLL rings alive in this process (each has a submitter and an SQ thread).
static LIVE: AtomicUsize = AtomicUsize::new(0);

/// Whether a ring spins, and the count that turns spinning off.
#[derive(Debug)]
pub(super) struct Spinner {
    on: bool,
    starved: u32,
    counted: bool,
}

impl Spinner {
    /// The choice for a new ring (`sqpoll`: the ring has an SQ thread).
    pub(super) fn new(mode: SqpollWait, sqpoll: bool) -> Spinner {
        if sqpoll {
            LIVE.fetch_add(1, Ordering::Relaxed);
        }
        let on = sqpoll
            && match mode {
                SqpollWait::Spin => true,
                SqpollWait::Sleep => false,
                SqpollWait::Auto => cores_free(LIVE.load(Ordering::Relaxed)),
            };
        Spinner {
            on,
            starved: 0,
            counted: sqpoll,
        }
    }

    /// Spin for the next wait.
    pub(super) fn on(&self) -> bool {
        self.on
    }

    /// A spin ran past [`SPIN_LIMIT`].
    pub(super) fn starved(&mut self) {
        self.starved += 1;
        if self.starved >= STARVED_LIMIT {
            self.on = false;
        }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        if self.counted {
            LIVE.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// True when the machine has a core for each of `rings` submitters and
/// their SQ threads, with nothing else runnable: the fewest runnable tasks
/// in three samples of `/proc/stat` 1 ms apart (the SQ threads, polling,
/// and the submitters count among them).
fn cores_free(rings: usize) -> bool {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if 2 * rings > cores {
        return false;
    }
    let mut fewest = usize::MAX;
    for i in 0..3 {
        if i > 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        match crate::usage::procs_running() {
            Some(n) => fewest = fewest.min(n),
            None => return false,
        }
    }
    fewest <= 2 * rings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_a_bad_one_is_named() {
        for m in [SqpollWait::Auto, SqpollWait::Spin, SqpollWait::Sleep] {
            assert_eq!(m.name().parse::<SqpollWait>(), Ok(m));
        }
        let e = "busy".parse::<SqpollWait>().unwrap_err();
        assert!(
            e.contains("'busy'") && e.contains("auto, spin, sleep"),
            "{e}"
        );
    }

    #[test]
    fn forced_modes_hold_and_starving_turns_spinning_off() {
        assert!(
            !Spinner::new(SqpollWait::Spin, false).on(),
            "no SQ thread, no spin"
        );
        assert!(!Spinner::new(SqpollWait::Sleep, true).on());
        let mut s = Spinner::new(SqpollWait::Spin, true);
        for _ in 1..STARVED_LIMIT {
            s.starved();
            assert!(s.on());
        }
        s.starved();
        assert!(
            !s.on(),
            "sleeps for good after {STARVED_LIMIT} starved waits"
        );
    }

    #[test]
    fn more_rings_than_pairs_of_cores_never_spin() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert!(!cores_free(cores / 2 + 1));
    }
}
