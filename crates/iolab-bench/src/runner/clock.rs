//! The hot loop's clock: nanoseconds since a base instant, read from the TSC
//! where it is invariant (quanta), else from `clock_gettime`.

use iolab::usage::Usage;
use std::sync::OnceLock;
use std::time::Instant;

/// Calibrates the TSC clock once per process. The runner calls it before
/// the measured window opens, so calibration is never part of a run's time
/// or CPU.
pub(super) fn calibrate() {
    let _ = quanta::Clock::new();
}

/// The one moment every worker of a run counts from. The first worker
/// released sets it; the rest take it as their zero, so a worker the
/// scheduler starts late (hundreds of threads on two cores) joins a window
/// already open instead of opening its own: the deadline, the ramp and the
/// measured window are the same instants for all.
#[derive(Default)]
pub(super) struct StartMark(OnceLock<(u64, Instant, Usage)>);

impl StartMark {
    /// A clock whose zero is the run's start (set now if nobody has yet).
    pub(super) fn clock(&self) -> OpClock {
        let clock = quanta::Clock::new();
        let (base_raw, base, _) = *self.start(&clock);
        OpClock {
            clock,
            base_raw,
            base,
        }
    }

    /// The process's CPU usage at the start (set now if nobody has yet):
    /// the baseline of a run without a ramp. The collector may be released
    /// from the start barrier last, after the workers have run for a while.
    pub(super) fn usage(&self) -> Usage {
        self.start(&quanta::Clock::new()).2
    }

    fn start(&self, clock: &quanta::Clock) -> &(u64, Instant, Usage) {
        self.0
            .get_or_init(|| (clock.raw(), Instant::now(), Usage::now()))
    }
}

/// Nanoseconds since the run's [`StartMark`].
pub(super) struct OpClock {
    clock: quanta::Clock,
    base_raw: u64,
    /// The same moment as `base_raw`, as an `Instant` (for other threads).
    pub(super) base: Instant,
}

impl OpClock {
    /// Nanoseconds since zero.
    #[inline(always)]
    pub(super) fn now_ns(&self) -> u64 {
        self.clock.delta_as_nanos(self.base_raw, self.clock.raw())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_clock_made_late_counts_from_the_shared_start() {
        let mark = StartMark::default();
        let first = mark.clock();
        std::thread::sleep(Duration::from_millis(20));
        let late = mark.clock();
        assert_eq!(first.base, late.base);
        // Its zero is the first clock's, not its own creation.
        assert!(late.now_ns() >= 20_000_000, "{}", late.now_ns());
    }
}
