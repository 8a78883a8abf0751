//! One lock per key (claim uid): two calls for the same claim run one after
//! the other, calls for different claims never wait for each other. Entries
//! are dropped as soon as nobody holds or waits for them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// Locks by string key.
#[derive(Debug, Default)]
pub struct KeyedLocks {
    map: Mutex<HashMap<String, Arc<Mutex<()>>>>,
}

/// Locks `m`, taking the data even if a panicking thread poisoned it: every
/// structure guarded here stays consistent at each await-free step.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl KeyedLocks {
    /// Runs `f` while holding the lock of `key`.
    pub fn run<T>(&self, key: &str, f: impl FnOnce() -> T) -> T {
        let entry = lock(&self.map).entry(key.to_owned()).or_default().clone();
        let result = {
            let _held = lock(&entry);
            f()
        };
        let mut map = lock(&self.map);
        // Two owners left (the map and us) means nobody else holds or waits:
        // cloning the entry needs the map lock, which we hold.
        if Arc::strong_count(&entry) == 2 {
            map.remove(key);
        }
        result
    }

    /// Runs `f` while holding the locks of every key in `keys`, taken in the
    /// order given (callers pass them sorted, so two callers never wait for
    /// each other in a cycle).
    pub fn run_all<T>(&self, keys: &[String], f: impl FnOnce() -> T) -> T {
        match keys.split_first() {
            None => f(),
            Some((first, rest)) => self.run(first, || self.run_all(rest, f)),
        }
    }

    /// Number of keys currently held or waited for.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        lock(&self.map).len()
    }

    /// True when no key is held.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Barrier;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[test]
    fn same_key_runs_one_at_a_time_and_entries_are_dropped() {
        let locks = Arc::new(KeyedLocks::default());
        let inside = Arc::new(AtomicUsize::new(0));
        let max_seen = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (locks, inside, max_seen) = (locks.clone(), inside.clone(), max_seen.clone());
                std::thread::spawn(move || {
                    for _ in 0..200 {
                        locks.run("claim", || {
                            let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                            max_seen.fetch_max(now, Ordering::SeqCst);
                            inside.fetch_sub(1, Ordering::SeqCst);
                        });
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(max_seen.load(Ordering::SeqCst), 1);
        assert!(locks.is_empty());
    }

    #[test]
    fn different_keys_do_not_wait_for_each_other() {
        let locks = Arc::new(KeyedLocks::default());
        let barrier = Arc::new(Barrier::new(2));
        let other = {
            let (locks, barrier) = (locks.clone(), barrier.clone());
            std::thread::spawn(move || locks.run("b", || barrier.wait()))
        };
        // Holding "a" while "b" is held too: if keys shared a lock, both
        // threads would block at the barrier forever.
        locks.run("a", || barrier.wait());
        other.join().unwrap();
    }
}
