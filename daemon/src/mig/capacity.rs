//! The planner's measure of fragmentation: how many more instances of each
//! profile could still be created on a GPU, compared largest profile first.
//!
//! Why lexicographic, largest first: a small profile fits almost anywhere
//! (a 1g has seven placements), while a large one has one or two aligned homes
//! (4g only at 0:4, 3g at 0:4 or 4:4, 7g only on an empty GPU). One stray
//! small instance in the wrong half is what makes a GPU with four free compute
//! slices refuse a 3g. Comparing the capacity of the largest profiles first
//! means a placement never gives up room for a large profile to save room for
//! a smaller one, which is the buddy-allocator rule (fill the half that is
//! already broken) the MIG research recommends; among placements that keep the
//! same large-profile room, the smaller profiles' room decides. A plain sum of
//! capacities would do the opposite: two 1g slots outweigh one 3g slot.
//! No I/O.

use super::geometry::{MAX_PROFILES, MigGeometry};
use super::occupancy::Usage;
use crate::gpu::MediaEngines;

/// Remaining capacity per profile, ordered largest profile first
/// ([`MigGeometry::names_by_priority`]); a larger score is less fragmented.
/// Scores of one geometry compare lexicographically.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Score {
    remaining: [u8; MAX_PROFILES],
    len: usize,
}

impl Score {
    pub(super) fn of(geometry: &MigGeometry, usage: &Usage) -> Self {
        let mut remaining = [0u8; MAX_PROFILES];
        for (slot, &position) in remaining.iter_mut().zip(geometry.priority()) {
            *slot = remaining_of(geometry, usage, position);
        }
        Self {
            remaining,
            len: geometry.priority().len(),
        }
    }

    /// How many more instances of each profile fit, in the order of
    /// [`MigGeometry::names_by_priority`]: what NVML's
    /// `nvmlDeviceGetGpuInstanceRemainingCapacity` would answer per profile.
    pub fn remaining(&self) -> &[u8] {
        &self.remaining[..self.len]
    }
}

/// How many more instances of `position` fit together: the most placements on
/// free slices that do not overlap each other (greedy by end slice, optimal
/// for intervals), capped by the max count, the free compute slices and the
/// media engines (one "+me" or "+me.all" instance per GPU, none beside a
/// "+me.all" but "-me" ones).
pub(super) fn remaining_of(geometry: &MigGeometry, usage: &Usage, position: usize) -> u8 {
    let row = geometry.row(position);
    let profile = &geometry.profiles()[position];
    if usage.media.refusal(row.media).is_some() {
        return 0;
    }
    let mut taken = usage.mask;
    let mut by_slices = 0u32;
    for &(_, mask) in &row.masks {
        if taken & mask == 0 {
            taken |= mask;
            by_slices += 1;
        }
    }
    let by_count = profile
        .max_count
        .saturating_sub(u32::from(usage.counts[position]));
    let free_compute = geometry.compute_slices().saturating_sub(usage.compute);
    let by_compute = free_compute
        .checked_div(profile.compute_slices)
        .unwrap_or(u32::MAX);
    let by_media = match row.media {
        MediaEngines::Extensions | MediaEngines::All => 1,
        MediaEngines::Share | MediaEngines::None => u32::MAX,
    };
    let fit = by_slices.min(by_count).min(by_compute).min(by_media);
    u8::try_from(fit).unwrap_or(u8::MAX)
}
