//! Staging memory kept between transfers: page-locking host memory costs
//! about as much as copying it (an H100 machine registered 96 MiB in
//! 4–7 ms, serialised across threads), so a process that loads again (a
//! Python loader, a server reloading shards) takes its lanes' staging
//! from here instead of mapping, zeroing and registering it anew, as
//! KvikIO's bounce-buffer pool and PyTorch's caching host allocator do.
//! The pool is bounded in bytes; what would pass the bound is freed at
//! once, and [`Pool::drain`] empties it on request.

use std::sync::Mutex;

/// A bounded set of reusable items, each with the key it matches and its
/// size in bytes.
pub(crate) struct Pool<K, T> {
    max_bytes: usize,
    items: Mutex<Vec<(K, usize, T)>>,
}

impl<K: PartialEq, T> Pool<K, T> {
    /// An empty pool that keeps at most `max_bytes`.
    pub(crate) const fn new(max_bytes: usize) -> Self {
        Pool {
            max_bytes,
            items: Mutex::new(Vec::new()),
        }
    }

    /// Takes an item made for `key`, if one is kept (the latest put first:
    /// its pages are the likeliest still in the CPU's caches).
    pub(crate) fn take(&self, key: &K) -> Option<T> {
        let mut items = self.lock();
        let i = items.iter().rposition(|(k, _, _)| k == key)?;
        Some(items.swap_remove(i).2)
    }

    /// Keeps `item` (of `bytes` bytes) for a later [`take`](Self::take),
    /// or hands it back when keeping it would pass the bound.
    pub(crate) fn put(&self, key: K, bytes: usize, item: T) -> Option<T> {
        let mut items = self.lock();
        let held: usize = items.iter().map(|(_, b, _)| b).sum();
        if held.saturating_add(bytes) > self.max_bytes {
            return Some(item);
        }
        items.push((key, bytes, item));
        None
    }

    /// Bytes kept now.
    pub(crate) fn bytes(&self) -> usize {
        self.lock().iter().map(|(_, b, _)| b).sum()
    }

    /// Everything kept, removed from the pool (dropping it frees it).
    pub(crate) fn drain(&self) -> Vec<T> {
        self.lock().drain(..).map(|(_, _, t)| t).collect()
    }

    /// The list; a panic while it was held cannot leave it inconsistent
    /// (each change is one push or one removal), so poisoning is ignored.
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(K, usize, T)>> {
        self.items.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_come_back_only_for_their_key_once_and_within_the_bound() {
        let pool: Pool<(usize, usize), &str> = Pool::new(100);
        assert_eq!(pool.take(&(0, 40)), None);
        assert_eq!(pool.put((0, 40), 40, "a"), None);
        assert_eq!(pool.put((0, 40), 40, "b"), None);
        // A third would hold 120 bytes: handed back, not kept.
        assert_eq!(pool.put((1, 40), 40, "c"), Some("c"));
        assert_eq!(pool.bytes(), 80);
        assert_eq!(pool.take(&(1, 40)), None, "another key matches nothing");
        assert_eq!(pool.take(&(0, 40)), Some("b"), "the latest put first");
        assert_eq!(pool.take(&(0, 40)), Some("a"));
        assert_eq!(pool.take(&(0, 40)), None, "each item is taken once");
        assert_eq!(pool.put((1, 20), 20, "d"), None);
        assert_eq!(pool.drain(), vec!["d"]);
        assert_eq!(pool.bytes(), 0);
    }
}
