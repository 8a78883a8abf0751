//! What `[limits]` did, as the API, the metrics and the claim status read
//! it: each action (a process ended, or named under "dry-run"), counted by
//! kind, mode and outcome, and the last one per claim and device. Plain
//! data; the enforcer's thread writes it into the [`super::LimitsBoard`].

use std::collections::BTreeMap;

use crate::activity::WarningKind;

/// One process ended, or named, under `[limits]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitAction {
    /// Over-share or unclaimed.
    pub kind: WarningKind,
    /// "dry-run" or "end".
    pub mode: &'static str,
    /// "terminated", "killed", "would-end", "gone", "pid-reused",
    /// "not-permitted" or "failed".
    pub outcome: &'static str,
    /// The claim (over-share), or "".
    pub claim_uid: String,
    /// The device.
    pub device: String,
    /// The process.
    pub pid: u32,
    /// Its name.
    pub comm: String,
    /// Memory it used, in bytes.
    pub memory_used: u64,
    /// Seconds the condition had lasted.
    pub over_for_s: i64,
    /// When the action ended, Unix milliseconds.
    pub at_ms: i64,
}

/// `(kind, mode, outcome)` of `gpuslice_limit_actions_total`.
pub type LimitActionKey = (WarningKind, &'static str, &'static str);

/// What `[limits]` did since the daemon started.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LimitsReport {
    /// Actions by kind, mode and outcome.
    pub counts: BTreeMap<LimitActionKey, u64>,
    /// The last action per (claim uid, device); unclaimed ones under ("", device).
    pub last: BTreeMap<(String, String), LimitAction>,
}
