//! Counters of one open file's state, bumped with a load and a store
//! instead of a locked read-modify-write: the state is per open file and
//! its requests come mostly from one thread, where a locked instruction
//! per counter showed in the cost of each cached read. Two threads
//! counting at once may lose a count, which only delays a decision.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};

/// Adds `n` to `c` and returns the new value.
pub(crate) fn add(c: &AtomicU64, n: u64) -> u64 {
    let v = c.load(Relaxed).wrapping_add(n);
    c.store(v, Relaxed);
    v
}

/// [`add`] of one, for a 32-bit counter.
pub(crate) fn bump32(c: &AtomicU32) -> u32 {
    let v = c.load(Relaxed).wrapping_add(1);
    c.store(v, Relaxed);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_return_their_new_value_and_wrap() {
        let c = AtomicU64::new(u64::MAX - 1);
        assert_eq!(add(&c, 1), u64::MAX);
        assert_eq!(add(&c, 2), 1);
        let k = AtomicU32::new(u32::MAX);
        assert_eq!(bump32(&k), 0);
        assert_eq!(k.load(Relaxed), 0);
    }
}
