//! Running a transfer's threads: each pulls work from a shared counter,
//! the first error stops the others, and every thread has ended (and
//! released what it held) before the call returns.

use super::error::GpuError;
use super::stats::Counters;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};

/// Work the threads share: the next item to take, and the stop flag the
/// first failure raises.
pub(crate) struct Shared {
    next: AtomicUsize,
    items: usize,
    stop: AtomicBool,
}

impl Shared {
    /// The next item's index, or `None` when all are taken or a thread
    /// failed.
    pub(crate) fn take(&self) -> Option<usize> {
        if self.stop.load(Relaxed) {
            return None;
        }
        let i = self.next.fetch_add(1, Relaxed);
        (i < self.items).then_some(i)
    }

    /// Stops the other threads: no more items are handed out.
    pub(crate) fn stop(&self) {
        self.stop.store(true, Relaxed);
    }
}

/// Runs `work` on `threads` threads (on this one when it is one) over
/// `items` items taken with [`Shared::take`]; returns their counts summed,
/// or the first error.
pub(crate) fn run<F>(threads: usize, items: usize, work: F) -> Result<Counters, GpuError>
where
    F: Fn(&Shared) -> Result<Counters, GpuError> + Sync,
{
    let shared = Shared {
        next: AtomicUsize::new(0),
        items,
        stop: AtomicBool::new(false),
    };
    let one = |s: &Shared| {
        let r = work(s);
        if r.is_err() {
            s.stop.store(true, Relaxed);
        }
        r
    };
    if threads <= 1 {
        return one(&shared);
    }
    let results: Vec<Result<Counters, GpuError>> = std::thread::scope(|sc| {
        let hs: Vec<_> = (0..threads).map(|_| sc.spawn(|| one(&shared))).collect();
        hs.into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    let mut sum = Counters::start();
    for r in results {
        sum = sum.add(r?);
    }
    Ok(sum)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn every_item_is_taken_once_and_the_counts_add_up() {
        for threads in [1, 3] {
            let seen = Mutex::new(Vec::new());
            let c = run(threads, 50, |s| {
                let mut c = Counters::start();
                while let Some(i) = s.take() {
                    seen.lock().unwrap().push(i);
                    c.bytes += 1;
                }
                Ok(c)
            })
            .unwrap();
            let mut v = seen.into_inner().unwrap();
            v.sort_unstable();
            assert_eq!(v, (0..50).collect::<Vec<_>>());
            assert_eq!(c.bytes, 50);
        }
    }

    #[test]
    fn the_first_error_stops_the_others_and_is_returned() {
        let taken = AtomicUsize::new(0);
        let e = run(4, 1_000_000, |s| {
            while let Some(i) = s.take() {
                taken.fetch_add(1, Relaxed);
                if i == 10 {
                    return Err(GpuError::OutOfBounds {
                        at: i as u64,
                        len: 1,
                        cap: 0,
                    });
                }
                std::thread::yield_now();
            }
            Ok(Counters::start())
        })
        .unwrap_err();
        assert!(e.to_string().contains("offset 10"), "{e}");
        assert!(taken.load(Relaxed) < 1_000_000);
    }
}
