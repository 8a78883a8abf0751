//! Cutting the pool's devices into slices without splitting a run.
//!
//! The scheduler's allocator tries a pool's slices in an order the API does
//! not define (its informer lists them from a map), and the devices of one
//! slice in their published order. gpusliced publishes partitionable MIG
//! devices profile after profile, each profile's placements in the order
//! that keeps first fit packing GPUs (daemon/src/inventory/mig/publish_order.rs).
//! That order only reaches the scheduler whole if the devices of one profile
//! sit in one slice: a run cut in two may be tried second half first.
//!
//! So a cut that would fall inside a run of devices with the same key moves
//! back to where the run began, when the run began in the slice being filled;
//! a run longer than a slice is cut where it must be. Pure; the invariants
//! (no slice over the limit, order kept, every run that fits in one slice lies
//! in one) are tested over every short sequence.

/// Splits `items` into chunks of at most `max` (at least 1), keeping runs of
/// equal `key` in one chunk wherever the run fits in one.
pub fn chunks_keeping_runs<T, K: PartialEq>(
    items: Vec<T>,
    max: usize,
    key: impl Fn(&T) -> K,
) -> Vec<Vec<T>> {
    let max = max.max(1);
    let mut chunks = Vec::new();
    let mut current: Vec<T> = Vec::new();
    // Where the run that `current` ends with began, within `current`.
    let mut run_start = 0;
    for item in items {
        let continues = current.last().is_some_and(|last| key(last) == key(&item));
        if !continues {
            run_start = current.len();
        }
        if current.len() == max {
            let carried = if continues && run_start > 0 {
                current.split_off(run_start)
            } else {
                Vec::new()
            };
            chunks.push(std::mem::replace(&mut current, carried));
            run_start = 0;
        }
        current.push(item);
    }
    if !current.is_empty() {
        chunks.push(current);
    }
    chunks
}

#[cfg(test)]
mod tests {
    use super::chunks_keeping_runs;

    /// Every sequence over `alphabet` of length `len`, as keys.
    fn sequences(alphabet: u8, len: u32) -> impl Iterator<Item = Vec<u8>> {
        let count = u32::from(alphabet).pow(len);
        (0..count).map(move |mut n| {
            (0..len)
                .map(|_| {
                    let digit = u8::try_from(n % u32::from(alphabet)).expect("small");
                    n /= u32::from(alphabet);
                    digit
                })
                .collect()
        })
    }

    /// (key, length) of each run.
    fn runs(keys: &[u8]) -> Vec<(u8, usize)> {
        let mut runs: Vec<(u8, usize)> = Vec::new();
        for &k in keys {
            match runs.last_mut() {
                Some((last, n)) if *last == k => *n += 1,
                _ => runs.push((k, 1)),
            }
        }
        runs
    }

    #[test]
    fn chunks_keep_order_and_limit_and_runs_that_fit() {
        for len in 0..=8 {
            for keys in sequences(3, len) {
                let items: Vec<(usize, u8)> = keys.iter().copied().enumerate().collect();
                for max in 1..=5 {
                    let chunks = chunks_keeping_runs(items.clone(), max, |&(_, k)| k);
                    assert!(chunks.iter().all(|c| !c.is_empty() && c.len() <= max));
                    let flat: Vec<_> = chunks.concat();
                    assert_eq!(flat, items, "order kept for {keys:?} max {max}");
                    // Each run that fits in a chunk lies in one chunk.
                    let mut start = 0;
                    for (_, n) in runs(&keys) {
                        let chunk_of =
                            |i: usize| chunks.iter().position(|c| c.iter().any(|&(j, _)| j == i));
                        if n <= max {
                            assert_eq!(
                                chunk_of(start),
                                chunk_of(start + n - 1),
                                "run at {start} of {n} split for {keys:?} max {max}: {chunks:?}"
                            );
                        }
                        start += n;
                    }
                }
            }
        }
    }

    #[test]
    fn plain_chunks_when_no_run_crosses_a_cut() {
        let chunks = chunks_keeping_runs(vec![1, 2, 3, 4, 5], 2, |&k| k);
        assert_eq!(chunks, [vec![1, 2], vec![3, 4], vec![5]]);
    }

    #[test]
    fn a_run_longer_than_a_chunk_is_cut_where_it_must() {
        let chunks = chunks_keeping_runs(vec![0, 1, 1, 1, 1, 1], 3, |&k| k);
        assert_eq!(chunks, [vec![0], vec![1, 1, 1], vec![1, 1]]);
    }
}
