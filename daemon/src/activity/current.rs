//! The activity view as of now: the latest snapshot brought up to the claim
//! table. A sample is up to `[activity] interval_s` old; a claim prepared
//! since is listed at once, not sampled yet (its devices, no figures, idle
//! since its prepare, `sampled` false), and a claim unprepared since is left
//! out. The processes, warnings and figures stay the sample's.
//!
//! [`with_claims`] is pure; [`current`] reads the claim table and the
//! inventory through [`NodeReads`] (memory only, no I/O, no hardware). With sampling off the
//! snapshot is answered as it is: nothing is listed.

use super::attribute::empty_claim;
use super::held::{HeldClaim, held_claims};
use super::snapshot::{ActivitySnapshot, ClaimActivity};
use crate::claims::NodeReads;

/// `latest` with the claims of `node`'s table now.
pub fn current(latest: &ActivitySnapshot, node: &dyn NodeReads) -> ActivitySnapshot {
    with_claims(latest, &held_claims(&node.claims(), &node.inventory()))
}

/// `latest` listing exactly the claims of `held` (sorted by uid): the
/// sample's entry where the sample read that claim, else a not-sampled one.
pub fn with_claims(latest: &ActivitySnapshot, held: &[HeldClaim]) -> ActivitySnapshot {
    if !latest.enabled {
        return latest.clone();
    }
    let claims = held
        .iter()
        .map(|claim| {
            read_by(latest, claim)
                .cloned()
                .unwrap_or_else(|| ClaimActivity {
                    sampled: false,
                    ..empty_claim(claim)
                })
        })
        .collect();
    ActivitySnapshot {
        claims,
        unclaimed: latest.unclaimed.clone(),
        warnings: latest.warnings.clone(),
        episodes: latest.episodes.clone(),
        ..*latest
    }
}

/// The sample's entry for `claim`: same uid, same prepare, same devices (a
/// uid unprepared and prepared again since the sample is another claim).
fn read_by<'a>(latest: &'a ActivitySnapshot, claim: &HeldClaim) -> Option<&'a ClaimActivity> {
    let found = latest
        .claims
        .binary_search_by(|c| c.uid.as_str().cmp(&claim.uid))
        .ok()
        .and_then(|i| latest.claims.get(i))?;
    let same_devices = found
        .devices
        .iter()
        .map(|d| &d.device)
        .eq(claim.devices.iter().map(|d| &d.device));
    (found.prepared_at == claim.prepared_at && same_devices).then_some(found)
}

#[cfg(test)]
mod tests;
