//! Snapshot → per-claim GPU use metrics: sets the activity families from the
//! sampler's latest [`ActivitySnapshot`]. Pure (no engine, no I/O), so a test
//! feeds it a hand-made snapshot.
//!
//! The per-claim and per-GPU families are cleared and rebuilt at every
//! render, so an unprepared claim's series, and a GPU's once its unclaimed
//! processes are gone, disappear. A claim no sample has read yet has no
//! series until one does (its figures are not known, not zero). Cardinality is bounded: one series per
//! (claim, device) per family, at most `max_claim_series` of them (claims in
//! uid order, devices in record order; the rest are counted in
//! `gpuslice_activity_series_dropped`; where the sampler already counted
//! more as dropped, its count wins), and no label names a process. The
//! episode counters follow the snapshot's counts, and the `[limits]`
//! action counters the limits board's ([`limit_actions`]); both only grow.

use std::collections::BTreeMap;

use super::families::{
    ActivityFamilies, ClaimDeviceLabels, DraClaimLabels, DraNames, EpisodeLabels, GpuLabels,
    LimitActionLabels,
};
use strum::VariantArray;

use crate::activity::{
    ActivitySnapshot, ClaimActivity, DeviceActivity, EpisodeCounts, WarningKind,
};
use crate::limits::LimitsReport;
use crate::state::AccessKind;

/// `[activity] max_claim_series` when the config says nothing.
pub const DEFAULT_MAX_CLAIM_SERIES: usize = 1024;

fn gauge(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Sets the activity families from `snapshot`, keeping at most `max_series`
/// (claim, device) series per family; `dra` names the pool and driver of the
/// DRA labels.
pub fn apply(
    families: &ActivityFamilies,
    snapshot: &ActivitySnapshot,
    max_series: usize,
    dra: &DraNames,
) {
    for family in [
        &families.memory_used,
        &families.memory_share,
        &families.processes,
        &families.last_active,
    ] {
        family.clear();
    }
    families.sm_ratio.clear();
    let sampled = || snapshot.claims.iter().filter(|c| c.sampled);
    let pairs: usize = sampled().map(|c| c.devices.len()).sum();
    let by_sampler = usize::try_from(snapshot.series_dropped).unwrap_or(usize::MAX);
    let dropped = pairs.saturating_sub(max_series).max(by_sampler.min(pairs));
    let kept = sampled()
        .flat_map(|c| c.devices.iter().map(move |d| (c, d)))
        .take(pairs - dropped);
    for (claim, device) in kept {
        claim_device(families, claim, device, dra);
    }
    families
        .series_dropped
        .set(i64::try_from(dropped).unwrap_or(i64::MAX));
    unclaimed(families, snapshot, dra);
    episodes(families, &snapshot.episodes);
    families.sample_cpu.set(snapshot.sample_cpu_us as f64 / 1e6);
}

fn claim_device(
    families: &ActivityFamilies,
    claim: &ClaimActivity,
    device: &DeviceActivity,
    dra: &DraNames,
) {
    let labels = ClaimDeviceLabels {
        dra: DraClaimLabels::new(dra, &claim.namespace, &claim.name, &device.device),
        namespace: claim.namespace.clone(),
        name: claim.name.clone(),
        uid: claim.uid.clone(),
        device: device.device.clone(),
        sharing: device.sharing.into(),
    };
    families
        .memory_used
        .get_or_create(&labels)
        .set(gauge(device.memory_used));
    if let Some(share) = device.memory_share {
        families
            .memory_share
            .get_or_create(&labels)
            .set(gauge(share));
    }
    if let Some(sm) = device.sm_percent {
        families
            .sm_ratio
            .get_or_create(&labels)
            .set(f64::from(sm) / 100.0);
    }
    let processes = u64::try_from(device.processes.len()).unwrap_or(u64::MAX);
    families
        .processes
        .get_or_create(&labels)
        .set(gauge(processes));
    if let Some(at) = claim.last_active {
        families.last_active.get_or_create(&labels).set(at);
    }
}

fn unclaimed(families: &ActivityFamilies, snapshot: &ActivitySnapshot, dra: &DraNames) {
    let mut per_gpu: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for u in &snapshot.unclaimed {
        let entry = per_gpu.entry(&u.gpu).or_default();
        entry.0 += 1;
        entry.1 = entry.1.saturating_add(u.process.memory_used.unwrap_or(0));
    }
    families.unclaimed.clear();
    families.unclaimed_memory.clear();
    for (gpu, (processes, memory)) in per_gpu {
        let labels = GpuLabels::new(dra, gpu);
        families
            .unclaimed
            .get_or_create(&labels)
            .set(gauge(processes));
        families
            .unclaimed_memory
            .get_or_create(&labels)
            .set(gauge(memory));
    }
}

/// Moves each episode counter up to the snapshot's count (a counter never
/// goes down: a lower count, which a sampler never publishes, is ignored).
fn episodes(families: &ActivityFamilies, counts: &EpisodeCounts) {
    let overshares = AccessKind::VARIANTS
        .iter()
        .filter(|kind| kind.shares_gpus())
        .map(|&kind| ("overshare", kind.into(), counts.overshare(kind)));
    for (kind, sharing, count) in overshares.chain([("unclaimed", "none", counts.unclaimed)]) {
        let counter = families
            .episodes
            .get_or_create(&EpisodeLabels { kind, sharing });
        let now = counter.get();
        if count > now {
            counter.inc_by(count - now);
        }
    }
}

/// The outcomes of an `end` action an alert watches (the process lives on).
const FAILED_OUTCOMES: [&str; 2] = ["not-permitted", "failed"];

/// Moves each `[limits]` action counter up to the report's count. The
/// failed `end` outcomes of both kinds exist from the first render, at 0, so
/// the first failure is an increase an alert's `increase()` sees, not a new
/// series.
pub fn limit_actions(families: &ActivityFamilies, report: &LimitsReport) {
    for kind in WarningKind::VARIANTS {
        for outcome in FAILED_OUTCOMES {
            drop(families.limit_actions.get_or_create(&LimitActionLabels {
                kind: kind.into(),
                mode: "end",
                outcome,
            }));
        }
    }
    for (&(kind, mode, outcome), &count) in &report.counts {
        let labels = LimitActionLabels {
            kind: kind.into(),
            mode,
            outcome,
        };
        let counter = families.limit_actions.get_or_create(&labels);
        let now = counter.get();
        if count > now {
            counter.inc_by(count - now);
        }
    }
}
