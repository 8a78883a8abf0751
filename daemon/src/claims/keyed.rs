//! One lock per key (a claim uid, a GPU UUID): two holders of the same key
//! run one after the other, holders of different keys never wait for each
//! other. A lock is held as long as its [`KeyGuard`] lives. Entries are
//! dropped as soon as nobody holds or waits for them.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

/// Locks by string key.
#[derive(Debug, Default)]
pub struct KeyedLocks {
    map: Mutex<HashMap<String, Arc<Entry>>>,
}

/// One key's lock: whether it is held, and its waiters' wake-up.
#[derive(Debug, Default)]
struct Entry {
    held: Mutex<bool>,
    freed: Condvar,
}

/// The lock of one key, held until dropped.
#[derive(Debug)]
#[must_use = "the key is unlocked when the guard is dropped"]
pub struct KeyGuard<'a> {
    locks: &'a KeyedLocks,
    key: String,
    entry: Arc<Entry>,
}

/// Locks `m`, taking the data even if a panicking thread poisoned it: every
/// structure guarded here stays consistent at each await-free step.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl KeyedLocks {
    /// Waits for and takes the lock of `key`.
    pub fn lock(&self, key: &str) -> KeyGuard<'_> {
        let entry = lock(&self.map).entry(key.to_owned()).or_default().clone();
        let mut held = lock(&entry.held);
        while *held {
            held = entry
                .freed
                .wait(held)
                .unwrap_or_else(PoisonError::into_inner);
        }
        *held = true;
        drop(held);
        KeyGuard {
            locks: self,
            key: key.to_owned(),
            entry,
        }
    }

    /// Takes the locks of every key in `keys`, in the order given (callers
    /// pass them sorted, so two callers never wait for each other in a
    /// cycle).
    pub fn lock_all(&self, keys: &[String]) -> Vec<KeyGuard<'_>> {
        keys.iter().map(|key| self.lock(key)).collect()
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

impl Drop for KeyGuard<'_> {
    fn drop(&mut self) {
        *lock(&self.entry.held) = false;
        self.entry.freed.notify_one();
        let mut map = lock(&self.locks.map);
        // Two owners left (the map and us) means nobody else holds or waits:
        // cloning the entry needs the map lock, which we hold.
        if Arc::strong_count(&self.entry) == 2 {
            map.remove(&self.key);
        }
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
                        let _held = locks.lock("claim");
                        let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        max_seen.fetch_max(now, Ordering::SeqCst);
                        inside.fetch_sub(1, Ordering::SeqCst);
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
            std::thread::spawn(move || {
                let _held = locks.lock("b");
                barrier.wait();
            })
        };
        // Holding "a" while "b" is held too: if keys shared a lock, both
        // threads would block at the barrier forever.
        let held = locks.lock("a");
        barrier.wait();
        other.join().unwrap();
        drop(held);
        assert!(locks.is_empty());
    }

    #[test]
    fn lock_all_holds_every_key_until_the_guards_go() {
        let locks = KeyedLocks::default();
        let keys = vec!["gpu-a".to_owned(), "gpu-b".to_owned()];
        let guards = locks.lock_all(&keys);
        assert_eq!(locks.len(), 2);
        drop(guards);
        assert!(locks.is_empty());
        assert!(locks.lock_all(&[]).is_empty());
    }
}
