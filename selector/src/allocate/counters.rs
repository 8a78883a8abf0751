//! Shared counters of partitionable devices during a search (upstream
//! incubating `checkAvailableCounters`, `deallocateCountersForDevice`).
//! Pure.
//!
//! What is available is every counter set of the pool less what devices
//! earlier claims hold consume (held exclusively or shared:
//! `IsDeviceAllocated`); a device fits when, after adding what it consumes
//! to what the devices taken in this search consume, every counter of every
//! set of the pool is still covered (a set already over-used by held
//! devices therefore refuses every counter-consuming device).

use super::capacity;
use super::pool::{Counters, PoolDevice};
use crate::quantity::Quantity;

/// Counters available and taken.
#[derive(Debug, Clone, Default)]
pub struct Book {
    available: Counters,
    taken: Counters,
}

impl Book {
    /// The pool's `sets` less what the `held` devices consume.
    pub fn new<'d, 'a: 'd>(
        sets: &Counters,
        held: impl Iterator<Item = &'d PoolDevice<'a>>,
    ) -> Self {
        let mut available = sets.clone();
        for device in held {
            for (set, counters) in &device.consumes {
                let Some(have) = available.get_mut(set) else {
                    continue;
                };
                for (k, v) in counters {
                    if let Some(h) = have.get_mut(k) {
                        *h = h.checked_sub(*v).unwrap_or(*h);
                    }
                }
            }
        }
        Self {
            available,
            taken: Counters::new(),
        }
    }

    /// Takes what `device` consumes if it fits; whether it did.
    pub fn take(&mut self, device: &PoolDevice<'_>) -> bool {
        for (set, counters) in &device.consumes {
            capacity::add(self.taken.entry(set.clone()).or_default(), counters);
        }
        let zero = Quantity::from_units(0);
        let fits = self.available.iter().all(|(set, counters)| {
            counters.iter().all(|(k, have)| {
                let used = self.taken.get(set).and_then(|c| c.get(k));
                *have >= *used.unwrap_or(&zero)
            })
        });
        if !fits {
            self.give(device);
        }
        fits
    }

    /// Gives back what `device` consumes.
    pub fn give(&mut self, device: &PoolDevice<'_>) {
        for (set, counters) in &device.consumes {
            if let Some(sum) = self.taken.get_mut(set) {
                capacity::sub(sum, counters);
            }
        }
    }
}
