//! The usage history: per claim and device, a compact record of what the
//! claim used, kept across restarts (see [`file`]) and read by the rule
//! ([`super::rule`]).
//!
//! Fed by the activity sampler (its `HistoryFeed` subscriber in
//! `activity/history_feed.rs`, through
//! [`super::keeper`]): after each sample it fills one
//! [`ClaimFigures`] per prepared claim from its `ClaimActivity` (memory used
//! per device, `None` when processes ran and none reported a figure; SM
//! percent where the driver samples per process; active as the sampler
//! defines it) and calls [`History::observe`]; a claim gone from the claim
//! set (unprepared) is dropped with [`History::forget`].
//!
//! Invariants: at most `max_claims` claims (the least recently seen goes
//! first, and [`History::observe`] names it); observed time counts only gaps
//! between samples of at most twice the sampling interval; `memory_peak` is
//! the exact largest figure ever seen. Pure.

pub mod file;
pub mod histogram;

use std::collections::BTreeMap;

use histogram::{Histogram, MEMORY, SM_PERCENT};

/// Seconds of one memory-peak window: one peak per window goes into the
/// memory histogram, as VPA aggregates memory.
pub const PEAK_WINDOW_S: i64 = 600;

/// What the history needs to know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistorySettings {
    /// The sampling interval, seconds (`[activity] interval_s`).
    pub interval_s: u64,
    /// `[advice] half_life_s`.
    pub half_life_s: u64,
    /// `[advice] max_claims`.
    pub max_claims: usize,
}

/// One sample of one claim, as the sampler hands it over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimFigures {
    /// The claim uid.
    pub uid: String,
    /// The claim's namespace.
    pub namespace: String,
    /// The claim's name.
    pub name: String,
    /// Its devices.
    pub devices: Vec<DeviceFigures>,
}

/// One device of a claim in one sample.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceFigures {
    /// The inventory name, "gpu-3" or "gpu-0-mig-1g10gb-6".
    pub device: String,
    /// Memory the claim's processes use on it, bytes; `None` when no figure
    /// was reported.
    pub memory_used: Option<u64>,
    /// SM use of the claim's processes, percent of the GPU, where sampled
    /// (not on MIG).
    pub sm_percent: Option<u32>,
    /// Whether the claim was active on it in this sample.
    pub active: bool,
}

/// One claim's history.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimHistory {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// Per device, by inventory name.
    pub devices: BTreeMap<String, DeviceHistory>,
}

impl ClaimHistory {
    /// The last sample of any device, Unix seconds.
    pub fn last_seen(&self) -> i64 {
        self.devices
            .values()
            .map(|d| d.last)
            .max()
            .unwrap_or(i64::MIN)
    }
}

/// One device's history.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceHistory {
    /// The first sample, Unix seconds.
    pub first: i64,
    /// The last sample, Unix seconds.
    pub last: i64,
    /// Seconds observed: the sum of gaps of at most twice the interval.
    pub observed_s: u64,
    /// Samples.
    pub samples: u64,
    /// Samples that found the claim active.
    pub active_samples: u64,
    /// The largest memory figure ever seen, bytes; `None`: none reported.
    pub memory_peak: Option<u64>,
    /// The largest SM percent ever seen.
    pub sm_peak: Option<u32>,
    /// Start of the open peak window and its peak so far.
    pub window: Option<(i64, u64)>,
    /// Decaying histogram of the peak of each window, bytes.
    pub memory: Histogram,
    /// Decaying histogram of SM percent per active sample.
    pub sm: Histogram,
}

impl DeviceHistory {
    /// An empty record, first seen at `now`.
    pub fn new(now: i64, half_life_s: u64) -> Self {
        Self {
            first: now,
            last: now,
            observed_s: 0,
            samples: 0,
            active_samples: 0,
            memory_peak: None,
            sm_peak: None,
            window: None,
            memory: Histogram::new(MEMORY, half_life_s),
            sm: Histogram::new(SM_PERCENT, half_life_s),
        }
    }

    /// Takes one sample at `now`.
    pub fn observe(&mut self, now: i64, figures: &DeviceFigures, interval_s: u64) {
        if self.samples > 0 {
            if now < self.last {
                return;
            }
            let gap = u64::try_from(now - self.last).unwrap_or(0);
            if gap <= interval_s.saturating_mul(2) {
                self.observed_s = self.observed_s.saturating_add(gap);
            }
        }
        self.last = now;
        self.samples += 1;
        if figures.active {
            self.active_samples += 1;
            if let Some(sm) = figures.sm_percent {
                self.sm.add(f64::from(sm.min(100)), now);
            }
        }
        if let Some(sm) = figures.sm_percent {
            self.sm_peak = Some(self.sm_peak.map_or(sm, |p| p.max(sm)));
        }
        if let Some(bytes) = figures.memory_used {
            self.memory_peak = Some(self.memory_peak.map_or(bytes, |p| p.max(bytes)));
            self.observe_peak(now, bytes);
        }
    }

    /// The window's peak is in the histogram at the window's start, replaced
    /// while it grows (as VPA does), so the open window counts at once.
    fn observe_peak(&mut self, now: i64, bytes: u64) {
        #[expect(clippy::cast_precision_loss, reason = "a 5% bucket hides the loss")]
        let value = |b: u64| b as f64;
        match self.window {
            Some((start, peak)) if now < start + PEAK_WINDOW_S => {
                if bytes > peak {
                    self.memory.subtract(value(peak), start);
                    self.memory.add(value(bytes), start);
                    self.window = Some((start, bytes));
                }
            }
            _ => {
                let start = now - now.rem_euclid(PEAK_WINDOW_S);
                self.memory.add(value(bytes), start);
                self.window = Some((start, bytes));
            }
        }
    }
}

/// Every claim's history.
#[derive(Debug, Clone, PartialEq)]
pub struct History {
    settings: HistorySettings,
    claims: BTreeMap<String, ClaimHistory>,
}

impl History {
    /// An empty history.
    pub fn new(settings: HistorySettings) -> Self {
        Self {
            settings,
            claims: BTreeMap::new(),
        }
    }

    /// A history of these claims (as loaded), the least recently seen
    /// beyond `max_claims` dropped.
    pub fn with_claims(settings: HistorySettings, claims: BTreeMap<String, ClaimHistory>) -> Self {
        let mut out = Self { settings, claims };
        out.evict(0);
        out
    }

    /// The settings.
    pub fn settings(&self) -> HistorySettings {
        self.settings
    }

    /// The claims, by uid.
    pub fn claims(&self) -> &BTreeMap<String, ClaimHistory> {
        &self.claims
    }

    /// One device's record.
    pub fn device(&self, uid: &str, device: &str) -> Option<&DeviceHistory> {
        self.claims.get(uid)?.devices.get(device)
    }

    /// Takes one sample of these claims at `now` (Unix seconds); returns the
    /// uids dropped to stay within `max_claims`, least recently seen first.
    pub fn observe(&mut self, now: i64, claims: &[ClaimFigures]) -> Vec<String> {
        let mut evicted = Vec::new();
        for claim in claims {
            if !self.claims.contains_key(&claim.uid) {
                evicted.extend(self.evict(1));
                self.claims.insert(
                    claim.uid.clone(),
                    ClaimHistory {
                        namespace: claim.namespace.clone(),
                        name: claim.name.clone(),
                        devices: BTreeMap::new(),
                    },
                );
            }
            let Some(record) = self.claims.get_mut(&claim.uid) else {
                continue;
            };
            for figures in &claim.devices {
                // Looked up before inserting: no allocation per sample.
                if !record.devices.contains_key(&figures.device) {
                    let fresh = DeviceHistory::new(now, self.settings.half_life_s);
                    record.devices.insert(figures.device.clone(), fresh);
                }
                if let Some(device) = record.devices.get_mut(&figures.device) {
                    device.observe(now, figures, self.settings.interval_s);
                }
            }
        }
        evicted
    }

    /// Drops a claim's history (at its unprepare); true when it had one.
    pub fn forget(&mut self, uid: &str) -> bool {
        self.claims.remove(uid).is_some()
    }

    /// Drops the least recently seen claims until `room` more fit.
    fn evict(&mut self, room: usize) -> Vec<String> {
        let keep = self.settings.max_claims.saturating_sub(room);
        let excess = self.claims.len().saturating_sub(keep);
        if excess == 0 {
            return Vec::new();
        }
        let mut by_age: Vec<(i64, String)> = self
            .claims
            .iter()
            .map(|(uid, c)| (c.last_seen(), uid.clone()))
            .collect();
        by_age.sort();
        let gone: Vec<String> = by_age
            .into_iter()
            .take(excess)
            .map(|(_, uid)| uid)
            .collect();
        for uid in &gone {
            self.claims.remove(uid);
        }
        gone
    }
}

#[cfg(test)]
mod tests;
