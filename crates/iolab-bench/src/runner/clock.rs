//! The hot loop's clock: nanoseconds since a base instant, read from the TSC
//! where it is invariant (quanta), else from `clock_gettime`.

use std::time::Instant;

/// Calibrates the TSC clock once per process. The runner calls it before
/// the measured window opens, so calibration is never part of a run's time
/// or CPU.
pub(super) fn calibrate() {
    let _ = quanta::Clock::new();
}

/// Nanoseconds since [`OpClock::restart`] (or creation).
pub(super) struct OpClock {
    clock: quanta::Clock,
    base_raw: u64,
    /// The same moment as `base_raw`, as an `Instant` (for other threads).
    pub(super) base: Instant,
}

impl OpClock {
    /// A clock whose zero is now.
    pub(super) fn new() -> Self {
        let clock = quanta::Clock::new();
        OpClock {
            base_raw: clock.raw(),
            base: Instant::now(),
            clock,
        }
    }

    /// Moves zero to now (when the worker is released to start).
    pub(super) fn restart(&mut self) {
        self.base_raw = self.clock.raw();
        self.base = Instant::now();
    }

    /// Nanoseconds since zero.
    #[inline(always)]
    pub(super) fn now_ns(&self) -> u64 {
        self.clock.delta_as_nanos(self.base_raw, self.clock.raw())
    }
}
