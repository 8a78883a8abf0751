//! Usage summaries, pure: after each sample, per claim and device, a
//! [`DeviceSummary`] (the window's memory peak and SM mean and peak, the
//! process count, whether the claim is idle and since when, whether it is
//! over its share and since when), and the conditions generation that moves
//! only when a condition opens, closes or changes its date.
//!
//! Rules:
//! - A claim is idle once `now − begin ≥ idle_after_s` and the sample did
//!   not find it active, where `begin` (the summary's `idle_since`) is its
//!   last active sample, else its prepare: the moment idleness began, not
//!   the moment it was noticed. Activity clears it at once.
//! - A claim with a device on a GPU the sample could not read keeps its
//!   idle state as it was (no flip on a gap), unless the sample found it
//!   active on another device.
//! - `overshare_since` is the open over-share episode of that claim and
//!   device (`super::episodes`, which keeps an unread GPU's episodes open).
//! - The other side of each condition is dated too, so a status condition
//!   that turns False says when: `active_since` is the sample that ended
//!   the claim's idle spell, `within_share_since` the sample that closed
//!   the device's episode; before any such end (or after a restart of
//!   gpusliced, which keeps these in memory only), the prepare.
//! - The generation moves by one when the set of open conditions (claim,
//!   device, kind, since) differs from the previous sample's: memory, SM
//!   and process figures never move it; a claim prepared without a
//!   condition does not either.

use std::collections::{BTreeMap, BTreeSet};

use super::snapshot::{ClaimActivity, DeviceSummary, Warning, WarningKind};
use super::window::{DeviceKey, Point, Windows};

/// What the summaries need to know of the settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SummarySettings {
    /// `[activity] idle_after_s`.
    pub idle_after_s: u64,
    /// `[activity] summary_window_s`.
    pub window_s: u64,
    /// `[activity] interval_s`.
    pub interval_s: u64,
}

/// An open condition's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Idle,
    OverShare,
}

/// (claim uid, device, kind, since).
type Open = (String, String, Kind, i64);

/// The summaries' state between samples.
#[derive(Debug, Clone)]
pub struct Summaries {
    settings: SummarySettings,
    windows: Windows,
    /// Claims idle after the last sample, and since when.
    idle: BTreeMap<String, i64>,
    /// The conditions open after the last sample.
    open: BTreeSet<Open>,
    /// Claims not idle after the last sample, and since when.
    active: BTreeMap<String, i64>,
    /// Devices without an open over-share after the last sample, and since
    /// when.
    within: BTreeMap<DeviceKey, i64>,
    generation: u64,
}

impl Summaries {
    /// No sample seen yet: generation 0.
    pub fn new(settings: SummarySettings) -> Self {
        Self {
            windows: Windows::new(settings.window_s, settings.interval_s),
            settings,
            idle: BTreeMap::new(),
            open: BTreeSet::new(),
            active: BTreeMap::new(),
            within: BTreeMap::new(),
            generation: 0,
        }
    }

    /// Takes one sample at `now` (Unix seconds): fills the summary of each
    /// device of `claims` (the sample's attribution, last active times
    /// updated) from it, `warnings` (the episodes open after it) and the
    /// GPUs it could not read (`unread`, inventory names). Returns the
    /// conditions generation after it.
    pub fn observe(
        &mut self,
        now: i64,
        claims: &mut [ClaimActivity],
        warnings: &[Warning],
        unread: &BTreeSet<String>,
    ) -> u64 {
        let kept: BTreeSet<DeviceKey> = claims
            .iter()
            .flat_map(|c| c.devices.iter().map(|d| (c.uid.clone(), d.device.clone())))
            .collect();
        self.windows.begin(now, &kept);
        let overshares: BTreeMap<(&str, &str), i64> = warnings
            .iter()
            .filter(|w| w.kind == WarningKind::OverShare)
            .map(|w| ((w.claim_uid.as_str(), w.device.as_str()), w.since))
            .collect();
        let mut idle = BTreeMap::new();
        let mut open = BTreeSet::new();
        let (mut active, mut within) = (BTreeMap::new(), BTreeMap::new());
        for claim in claims.iter_mut() {
            let idle_since = self.idle_since(now, claim, unread);
            let active_since = match idle_since {
                Some(since) => {
                    idle.insert(claim.uid.clone(), since);
                    None
                }
                None => {
                    let since = self.active_since(now, claim);
                    active.insert(claim.uid.clone(), since);
                    Some(since)
                }
            };
            for device in &mut claim.devices {
                let key = (claim.uid.clone(), device.device.clone());
                if !unread.contains(&device.gpu) {
                    let point = Point {
                        t: now,
                        memory: device.memory_used,
                        sm: device.sm_percent,
                    };
                    self.windows.push(&key, point);
                }
                let overshare_since = overshares
                    .get(&(claim.uid.as_str(), device.device.as_str()))
                    .copied();
                let within_share_since = match overshare_since {
                    Some(_) => None,
                    None => {
                        let since = self.within_since(now, &key, claim.prepared_at);
                        within.insert(key.clone(), since);
                        Some(since)
                    }
                };
                let figures = self.windows.figures(&key).unwrap_or_default();
                device.summary = Some(DeviceSummary {
                    window_s: self.settings.window_s,
                    memory_peak: figures.memory_peak,
                    sm_mean: figures.sm_mean,
                    sm_peak: figures.sm_peak,
                    process_count: u32::try_from(device.processes.len()).unwrap_or(u32::MAX),
                    idle_since,
                    overshare_since,
                    active_since,
                    within_share_since,
                });
                let (uid, name) = key;
                if let Some(since) = idle_since {
                    open.insert((uid.clone(), name.clone(), Kind::Idle, since));
                }
                if let Some(since) = overshare_since {
                    open.insert((uid, name, Kind::OverShare, since));
                }
            }
        }
        if open != self.open {
            self.generation = self.generation.wrapping_add(1);
        }
        self.idle = idle;
        self.open = open;
        self.active = active;
        self.within = within;
        self.generation
    }

    /// Since when the claim is active after this sample, in which it is
    /// not idle: as before; now, if it was idle before; else its prepare.
    fn active_since(&self, now: i64, claim: &ClaimActivity) -> i64 {
        match self.active.get(&claim.uid) {
            Some(since) => *since,
            None if self.idle.contains_key(&claim.uid) => now,
            None => claim.prepared_at,
        }
    }

    /// Since when the device is within its share after this sample, in
    /// which no episode is open: as before; now, if one was open before;
    /// else the prepare.
    fn within_since(&self, now: i64, key: &DeviceKey, prepared_at: i64) -> i64 {
        if let Some(since) = self.within.get(key) {
            return *since;
        }
        // Only a device new to the summaries or whose episode just closed
        // gets here, so the scan of the open conditions is rare.
        let was_over = self.open.iter().any(|(uid, device, kind, _)| {
            *kind == Kind::OverShare && (uid, device) == (&key.0, &key.1)
        });
        if was_over { now } else { prepared_at }
    }

    /// The claim's `idle_since` after this sample (module doc).
    fn idle_since(
        &self,
        now: i64,
        claim: &ClaimActivity,
        unread: &BTreeSet<String>,
    ) -> Option<i64> {
        // The attribution dates a claim active in this sample with it.
        if claim.last_active == Some(now) {
            return None;
        }
        if claim.devices.iter().any(|d| unread.contains(&d.gpu)) {
            return self.idle.get(&claim.uid).copied();
        }
        let begin = claim.last_active.unwrap_or(claim.prepared_at);
        let idle_after = i64::try_from(self.settings.idle_after_s).unwrap_or(i64::MAX);
        (now.saturating_sub(begin) >= idle_after).then_some(begin)
    }
}

#[cfg(test)]
mod tests;
