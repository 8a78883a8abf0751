//! Snapshot → gauges: sets every gauge family from one [`NodeUsage`]. Pure
//! (no engine, no I/O), so a test feeds it a hand-made snapshot.
//!
//! Fixed label values are always present (0 when none), so a dashboard sees
//! `gpuslice_claims{kind="mps"} 0` rather than no series; MIG series exist
//! for every (GPU, profile) with at least one slice in any state, each with
//! all four states. The slice family is cleared first, so a GPU that left
//! MIG mode or a profile no longer offered disappears; so does the unhealthy
//! family, so a device that recovered leaves it.

use std::collections::{BTreeMap, BTreeSet};

use strum::VariantArray;

use super::families::{
    DraDeviceLabels, DraNames, Families, KindLabels, SliceLabels, StateLabels, UnhealthyLabels,
};
use crate::claims::{NodeUsage, SliceState};
use crate::state::AccessKind;
use crate::supervise::DaemonState;

fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Sets the gauges from `usage`; `dra` names the pool and driver of the
/// unhealthy devices' DRA labels.
pub fn apply(families: &Families, usage: &NodeUsage, dra: &DraNames) {
    for &kind in AccessKind::VARIANTS {
        let n = usage.claims.iter().filter(|k| **k == kind).count();
        families
            .claims
            .get_or_create(&KindLabels { kind: kind.into() })
            .set(count(n));
    }
    for &state in DaemonState::VARIANTS {
        let n = usage.mps_daemons.iter().filter(|s| **s == state).count();
        families
            .mps_daemons
            .get_or_create(&StateLabels {
                state: state.into(),
            })
            .set(count(n));
    }
    let mut slices: BTreeMap<(&str, &str, SliceState), usize> = BTreeMap::new();
    let mut pairs: BTreeSet<(&str, &str)> = BTreeSet::new();
    for s in &usage.mig_slices {
        pairs.insert((&s.gpu, &s.profile));
        *slices.entry((&s.gpu, &s.profile, s.state)).or_default() += 1;
    }
    families.mig_slices.clear();
    for (gpu, profile) in pairs {
        for &state in SliceState::VARIANTS {
            let n = slices.get(&(gpu, profile, state)).copied().unwrap_or(0);
            let labels = SliceLabels {
                gpu: gpu.to_owned(),
                profile: profile.to_owned(),
                state: state.into(),
            };
            families.mig_slices.get_or_create(&labels).set(count(n));
        }
    }
    families.gpus.set(count(usage.gpus));
    families.problems.set(count(usage.problems));
    families.unhealthy.clear();
    for (device, cause) in &usage.unhealthy {
        let labels = UnhealthyLabels {
            device: device.clone(),
            cause,
            dra: DraDeviceLabels::new(dra, device),
        };
        families.unhealthy.get_or_create(&labels).set(1);
    }
}
