//! The decision, pure: after a sample's episodes, which process (if any)
//! to end or to name as the one that would be ended.
//!
//! Runs on one sample only: a target is a process this sample attributed,
//! with the start time this sample read, so a GPU the sample could not read
//! yields nothing. In order, for each condition of the sample:
//! 1. its mode (`[limits] overshare` or `unclaimed`; for an over-share the
//!    claim's own `overshare` when its record has one) is "dry-run" or "end";
//! 2. its episode has been open at least the grace (`grace_s`, or the
//!    claim's own `graceSeconds` for its over-shares), and for "end" the
//!    last action on it is at least a grace old (the grace restarts) and no
//!    process it ended is still listed (still dying: nothing more yet);
//!    "dry-run" names a process once per episode;
//! 3. the target: for an over-share the claim's largest process on that
//!    device by memory (ties: the newest), for an unclaimed process the
//!    process itself, only if its environment was read and names no claim;
//! 4. never one of gpusliced's own daemons or their children (known by
//!    pid, never by environment), one whose environment does not name the
//!    claim (over-share) or names any (unclaimed), one
//!    whose environment or start time was not read, pid 0 or 1,
//!    gpusliced's own pid, a name in `unclaimed_exempt`, or a process
//!    already ended and still listed (under either kind).

use crate::state::AccessKind;
use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::activity::attribute::ProcView;
use crate::activity::held::HeldClaim;
use crate::activity::procfs::ProcInfo;
use crate::activity::publish::Sample;
use crate::activity::{ClaimActivity, UnclaimedProcess, WarningKind};
use crate::config::{LimitMode, LimitsConfig};
use crate::opaque::ClaimLimits;

/// What the node's `[limits]` says, and who gpusliced is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// `[limits] overshare`.
    pub overshare: LimitMode,
    /// `[limits] unclaimed`.
    pub unclaimed: LimitMode,
    /// `[limits] grace_s`.
    pub grace_s: u64,
    /// `[limits] unclaimed_exempt`.
    pub exempt: BTreeSet<String>,
    /// gpusliced's own pid.
    pub own_pid: u32,
}

impl Policy {
    /// The policy of `config`, for a daemon whose pid is `own_pid`.
    pub fn new(config: &LimitsConfig, own_pid: u32) -> Self {
        Self {
            overshare: config.overshare,
            unclaimed: config.unclaimed,
            grace_s: config.grace_s,
            exempt: config.unclaimed_exempt.iter().cloned().collect(),
            own_pid,
        }
    }

    /// Whether anything may be decided on a sample of `claims`.
    pub fn acts(&self, claims: &[HeldClaim]) -> bool {
        self.unclaimed != LimitMode::Warn
            || self.overshare != LimitMode::Warn
            || claims
                .iter()
                .any(|c| self.overshare_of(c.limits.as_ref()).0 != LimitMode::Warn)
    }

    /// The over-share mode and grace for a claim with `limits` of its own
    /// (admitted at prepare): each of its settings replaces the node's.
    pub fn overshare_of(&self, limits: Option<&ClaimLimits>) -> (LimitMode, u64) {
        let own = limits.copied().unwrap_or(ClaimLimits {
            overshare: None,
            grace_s: None,
        });
        (
            own.overshare.unwrap_or(self.overshare),
            own.grace_s.unwrap_or(self.grace_s),
        )
    }
}

/// A process to end ("end") or to name ("dry-run").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// Over-share or unclaimed.
    pub kind: WarningKind,
    /// "dry-run" or "end".
    pub mode: LimitMode,
    /// The claim uid (over-share), or "".
    pub claim_uid: String,
    /// "namespace/name" of the claim (over-share), or "".
    pub claim: String,
    /// The device.
    pub device: String,
    /// How the device is shared (over-share); `None` for an unclaimed
    /// process.
    pub sharing: Option<AccessKind>,
    /// The process.
    pub pid: u32,
    /// Its start time in this sample.
    pub start_time: u64,
    /// Its name.
    pub comm: String,
    /// Memory it uses, bytes (0 when not reported).
    pub memory_used: u64,
    /// Memory the claim uses on the device (over-share) or the process.
    pub claim_memory_used: u64,
    /// The claim's share (over-share).
    pub share: Option<u64>,
    /// Seconds since the episode began.
    pub over_for_s: i64,
    /// The grace applied.
    pub grace_s: u64,
}

/// An episode's key: kind, claim uid, scope (device or GPU), pid.
type Key = (WarningKind, String, String, u32);

/// What was done about one open episode.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Acted {
    since: i64,
    last_end: Option<i64>,
    ended: BTreeSet<(u32, u64)>,
    dry_run_named: bool,
}

/// The decisions' memory between samples.
#[derive(Debug, Clone, Default)]
pub struct Decider {
    acted: BTreeMap<Key, Acted>,
    /// Every process ended, by (pid, start time), while a sample lists it:
    /// one still exiting is never chosen again, under either kind (a
    /// process caught mid-exit may read as having no claim marker).
    ended: BTreeSet<(u32, u64)>,
}

impl Decider {
    /// The decisions for `sample` under `policy`.
    pub fn decide(&mut self, policy: &Policy, sample: &Sample<'_>) -> Vec<Decision> {
        let open: BTreeMap<Key, i64> = sample
            .episodes
            .iter()
            .map(|e| {
                (
                    (e.kind, e.claim_uid.clone(), e.scope.clone(), e.pid),
                    e.since,
                )
            })
            .collect();
        self.acted
            .retain(|key, acted| open.get(key) == Some(&acted.since));
        let listed: BTreeSet<(u32, u64)> = sample
            .procs
            .iter()
            .filter_map(|(&pid, view)| Some((pid, view.as_ref().ok()?.start_time)))
            .collect();
        self.ended.retain(|t| listed.contains(t));
        if !policy.acts(sample.claims) {
            return Vec::new();
        }
        let mut decisions = Vec::new();
        let attribution = sample.attribution;
        for o in &attribution.overshares {
            let Some(claim) = attribution.claims.get(o.claim) else {
                continue;
            };
            if let Some(d) = self.overshare(policy, sample, &open, claim, o.device) {
                decisions.push(d);
            }
        }
        if policy.unclaimed != LimitMode::Warn {
            for u in &attribution.unclaimed {
                if let Some(d) = self.unclaimed(policy, sample, &open, u) {
                    decisions.push(d);
                }
            }
        }
        for d in &decisions {
            if d.mode == LimitMode::End {
                self.ended.insert((d.pid, d.start_time));
            }
        }
        decisions
    }

    fn overshare(
        &mut self,
        policy: &Policy,
        sample: &Sample<'_>,
        open: &BTreeMap<Key, i64>,
        claim: &ClaimActivity,
        device: usize,
    ) -> Option<Decision> {
        let d = claim.devices.get(device)?;
        let own = sample.claims.iter().find(|c| c.uid == claim.uid);
        let (mode, grace_s) = policy.overshare_of(own.and_then(|c| c.limits.as_ref()));
        if mode == LimitMode::Warn {
            return None;
        }
        let key = (
            WarningKind::OverShare,
            claim.uid.clone(),
            d.device.clone(),
            0,
        );
        let listed: BTreeSet<(u32, u64)> = d
            .processes
            .iter()
            .filter_map(|p| Some((p.pid, started(sample.procs, p.pid)?)))
            .collect();
        let eligible = d.processes.iter().filter_map(|p| {
            let info = view(sample.procs, p.pid)?;
            let ours = info.marks.claims.contains(&claim.uid);
            let fresh = !self.ended.contains(&(p.pid, info.start_time));
            (ours && fresh && allowed(policy, p.pid, info)).then_some((p, info))
        });
        let since = *open.get(&key)?;
        let acted = self.acted.entry(key).or_default();
        let (target, info) = {
            let gate = gate(grace_s, sample.now, since, acted, mode, &listed)?;
            eligible
                .filter(|(p, info)| !gate.ended.contains(&(p.pid, info.start_time)))
                .filter(|(p, _)| p.memory_used.is_some())
                .max_by_key(|(p, info)| (p.memory_used, info.start_time, p.pid))?
        };
        let decision = Decision {
            kind: WarningKind::OverShare,
            mode,
            claim_uid: claim.uid.clone(),
            claim: format!("{}/{}", claim.namespace, claim.name),
            device: d.device.clone(),
            sharing: Some(d.sharing),
            pid: target.pid,
            start_time: info.start_time,
            comm: info.name.clone(),
            memory_used: target.memory_used.unwrap_or(0),
            claim_memory_used: d.memory_used,
            share: d.memory_share,
            over_for_s: sample.now - since,
            grace_s,
        };
        record(acted, since, sample.now, &decision);
        Some(decision)
    }

    fn unclaimed(
        &mut self,
        policy: &Policy,
        sample: &Sample<'_>,
        open: &BTreeMap<Key, i64>,
        u: &UnclaimedProcess,
    ) -> Option<Decision> {
        let pid = u.process.pid;
        let key = (WarningKind::Unclaimed, String::new(), u.gpu.clone(), pid);
        let since = *open.get(&key)?;
        let info = view(sample.procs, pid)?;
        let no_claim = info.marks.claims.is_empty();
        let fresh = !self.ended.contains(&(pid, info.start_time));
        if !no_claim || !fresh || !allowed(policy, pid, info) {
            return None;
        }
        let listed = BTreeSet::from([(pid, info.start_time)]);
        let acted = self.acted.entry(key).or_default();
        let gate = gate(
            policy.grace_s,
            sample.now,
            since,
            acted,
            policy.unclaimed,
            &listed,
        )?;
        if gate.ended.contains(&(pid, info.start_time)) {
            return None;
        }
        let memory = u.process.memory_used.unwrap_or(0);
        let decision = Decision {
            kind: WarningKind::Unclaimed,
            mode: policy.unclaimed,
            claim_uid: String::new(),
            claim: String::new(),
            device: u.device.clone(),
            sharing: None,
            pid,
            start_time: info.start_time,
            comm: info.name.clone(),
            memory_used: memory,
            claim_memory_used: memory,
            share: None,
            over_for_s: sample.now - since,
            grace_s: policy.grace_s,
        };
        record(acted, since, sample.now, &decision);
        Some(decision)
    }
}

/// The `/proc` view of `pid`, when it was read.
fn view(procs: &HashMap<u32, ProcView>, pid: u32) -> Option<&ProcInfo> {
    procs.get(&pid)?.as_ref().ok()
}

fn started(procs: &HashMap<u32, ProcView>, pid: u32) -> Option<u64> {
    view(procs, pid).map(|i| i.start_time)
}

/// Rule 4 for a process whose environment was read.
fn allowed(policy: &Policy, pid: u32, info: &ProcInfo) -> bool {
    pid > 1
        && pid != policy.own_pid
        && !info.own_daemon
        && info.start_time > 0
        && !policy.exempt.contains(&info.name)
}

/// Rule 2: the episode's memory, once it may act now (a new episode starts
/// it afresh).
fn gate<'a>(
    grace_s: u64,
    now: i64,
    since: i64,
    acted: &'a mut Acted,
    mode: LimitMode,
    listed: &BTreeSet<(u32, u64)>,
) -> Option<&'a Acted> {
    if acted.since != since {
        *acted = Acted {
            since,
            ..Acted::default()
        };
    }
    let grace = i64::try_from(grace_s).unwrap_or(i64::MAX);
    if now.saturating_sub(since) < grace {
        return None;
    }
    match mode {
        LimitMode::Warn => None,
        LimitMode::DryRun => (!acted.dry_run_named).then_some(&*acted),
        LimitMode::End => {
            let rested = acted
                .last_end
                .is_none_or(|at| now.saturating_sub(at) >= grace);
            let dying = acted.ended.iter().any(|t| listed.contains(t));
            (rested && !dying).then_some(&*acted)
        }
    }
}

fn record(acted: &mut Acted, since: i64, now: i64, decision: &Decision) {
    acted.since = since;
    match decision.mode {
        LimitMode::DryRun => acted.dry_run_named = true,
        LimitMode::End => {
            acted.last_end = Some(now);
            acted.ended.insert((decision.pid, decision.start_time));
        }
        LimitMode::Warn => {}
    }
}

#[cfg(test)]
mod tests;
