//! From gpusliced's answers to the writer's input (pure): each claim of
//! GetActivity, its devices joined with GetAdvice's advice by claim uid and
//! device name, to the claim's rendered entries.
//!
//! What a claim gets depends on what gpusliced has read of it:
//! - sampling off (`enabled` false): Ready, and Idle Unknown
//!   (`SamplingOff`), no figures;
//! - sampled (its devices carry a summary): every condition and figure;
//! - not read yet (prepared after the last sample, or gpusliced just
//!   restarted): nothing new is known, so the claim is [`Feed::unread`]
//!   and the task keeps what it last rendered for it (removing its entries
//!   would be wrong: it is still prepared).
//!
//! A device whose sharing or times gpusliced reports in a form this
//! version does not know is left out of the claim's entries (logged by the
//! task through [`Feed::skipped`]), never written half-filled.

use std::collections::{BTreeMap, BTreeSet};

use gpuslice_proto::gpuslice::v1 as pb;
use k8s_openapi::jiff::Timestamp;

use super::entries::{
    self, ActionKind, ActionMode, ActionOutcome, Advice, AdviceForm, Context, DeviceUsage,
    Idleness, LastAction, Memory, OverShare, Sharing,
};
use super::plan::ClaimUid;
use super::round::ClaimEntries;
use super::write::ClaimRef;

/// The writer's input from one GetActivity (and GetAdvice) answer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Feed {
    /// The claims read, by uid.
    pub claims: BTreeMap<ClaimUid, ClaimEntries>,
    /// Claims gpusliced holds but has not read yet.
    pub unread: BTreeSet<ClaimUid>,
    /// Devices left out, one line each ("claim uid / device: why").
    pub skipped: Vec<String>,
}

/// The feed of `activity`, with `advice` (None: GetAdvice failed or is off).
pub fn feed(
    context: &Context,
    activity: &pb::GetActivityResponse,
    advice: Option<&pb::GetAdviceResponse>,
) -> Feed {
    let advised = advice_by_device(advice);
    let sampled_at = (activity.sampled_at_ms > 0)
        .then(|| Timestamp::from_millisecond(activity.sampled_at_ms).ok())
        .flatten();
    let mut out = Feed::default();
    for claim in &activity.claims {
        let Some(claim_ref) = claim.claim.as_ref() else {
            continue;
        };
        let uid = claim_ref.uid.clone();
        if activity.enabled
            && (claim.not_sampled_yet || claim.devices.iter().any(|d| d.summary.is_none()))
        {
            out.unread.insert(uid);
            continue;
        }
        let mut entries = Vec::with_capacity(claim.devices.len());
        for device in &claim.devices {
            let advice = advised
                .get(&(uid.as_str(), device.device.as_str()))
                .copied();
            match usage(activity.enabled, sampled_at, claim, device, advice) {
                Ok(usage) => entries.push(entries::entry(context, &usage)),
                Err(why) => out
                    .skipped
                    .push(format!("{uid} / {}: {why}", device.device)),
            }
        }
        let claim = ClaimRef {
            namespace: claim_ref.namespace.clone(),
            name: claim_ref.name.clone(),
            uid: uid.clone(),
        };
        out.claims.insert(uid, ClaimEntries { claim, entries });
    }
    out
}

fn advice_by_device(advice: Option<&pb::GetAdviceResponse>) -> BTreeMap<(&str, &str), &pb::Advice> {
    advice
        .into_iter()
        .flat_map(|a| &a.claims)
        .filter_map(|c| Some((c.claim.as_ref()?.uid.as_str(), &c.devices)))
        .flat_map(|(uid, devices)| {
            devices
                .iter()
                .filter_map(move |d| Some(((uid, d.device.as_str()), d.advice.as_ref()?)))
        })
        .collect()
}

fn usage(
    enabled: bool,
    sampled_at: Option<Timestamp>,
    claim: &pb::ClaimActivity,
    device: &pb::DeviceActivity,
    advice: Option<&pb::Advice>,
) -> Result<DeviceUsage, String> {
    let sharing = sharing(&device.sharing)?;
    let prepared_at = seconds(claim.prepared_at)?;
    let summary = device.summary.as_ref().filter(|_| enabled);
    let (idleness, overshare) = match summary {
        None => (Idleness::SamplingOff, None),
        Some(s) => (
            idleness(s, prepared_at)?,
            overshare(s, prepared_at)?.filter(|_| sharing.is_shared()),
        ),
    };
    Ok(DeviceUsage {
        pool: device.pool.clone(),
        device: device.device.clone(),
        share_id: (!device.share_id.is_empty()).then(|| device.share_id.clone()),
        sharing,
        prepared_at,
        sampled_at: sampled_at.filter(|_| summary.is_some()),
        window_seconds: summary.map_or(0, |s| s.window_seconds),
        memory: Memory {
            used: summary.map(|_| device.memory_used_bytes),
            peak: summary.map(|s| s.memory_peak_bytes),
            share: device.memory_share_bytes,
            total: (device.memory_total_bytes > 0).then_some(device.memory_total_bytes),
        },
        sm_mean_percent: summary.and_then(|s| s.sm_mean_percent),
        sm_peak_percent: summary.and_then(|s| s.sm_peak_percent),
        processes: summary.map(|s| s.process_count),
        last_active: match claim.last_active {
            Some(t) if summary.is_some() => Some(seconds(t)?),
            _ => None,
        },
        thread_percentage: None,
        idleness,
        overshare,
        advice: advice.and_then(advice_of),
        last_action: device.last_action.as_ref().and_then(last_action),
    })
}

fn sharing(label: &str) -> Result<Sharing, String> {
    match label {
        "exclusive" => Ok(Sharing::Exclusive),
        "mig" => Ok(Sharing::Mig),
        "mps" => Ok(Sharing::Mps),
        "timeslicing" => Ok(Sharing::Timeslicing),
        other => Err(format!("unknown sharing {other:?}")),
    }
}

fn seconds(unix: i64) -> Result<Timestamp, String> {
    Timestamp::from_second(unix).map_err(|_| format!("time {unix} out of range"))
}

fn idleness(s: &pb::DeviceUsageSummary, prepared_at: Timestamp) -> Result<Idleness, String> {
    Ok(match (s.idle_since, s.active_since) {
        (Some(since), _) => Idleness::Idle {
            since: seconds(since)?,
        },
        (None, Some(since)) => Idleness::Active {
            since: seconds(since)?,
        },
        // A gpusliced from before active_since: the prepare.
        (None, None) => Idleness::Active { since: prepared_at },
    })
}

fn overshare(
    s: &pb::DeviceUsageSummary,
    prepared_at: Timestamp,
) -> Result<Option<OverShare>, String> {
    Ok(Some(match (s.overshare_since, s.within_share_since) {
        (Some(since), _) => OverShare::Over {
            since: seconds(since)?,
        },
        (None, Some(since)) => OverShare::Within {
            since: seconds(since)?,
        },
        (None, None) => OverShare::Within { since: prepared_at },
    }))
}

fn advice_of(a: &pb::Advice) -> Option<Advice> {
    let form = match pb::AdviceForm::try_from(a.form).ok()? {
        pb::AdviceForm::Unspecified => return None,
        pb::AdviceForm::Abstain => AdviceForm::Abstain,
        pb::AdviceForm::Keep => AdviceForm::Keep,
        pb::AdviceForm::GiveBack => AdviceForm::GiveBack,
        pb::AdviceForm::Mig => AdviceForm::Mig,
        pb::AdviceForm::Mps => AdviceForm::Mps,
        pb::AdviceForm::Timeslicing => AdviceForm::Timeslicing,
    };
    let some = |s: &str| (!s.is_empty()).then(|| s.to_owned());
    Some(Advice {
        form,
        mig_profile: some(&a.mig_profile),
        device_class: some(&a.device_class),
        observed_seconds: a.observed_seconds,
        memory_peak_bytes: a.memory_peak_bytes,
        sm_p95_percent: a.sm_p95_percent,
        reason: a.reason.clone(),
    })
}

fn last_action(a: &pb::LimitAction) -> Option<LastAction> {
    let kind = match a.kind.as_str() {
        "overshare" => ActionKind::Overshare,
        "unclaimed" => ActionKind::Unclaimed,
        _ => return None,
    };
    let mode = match a.mode.as_str() {
        "dry-run" => ActionMode::DryRun,
        "end" => ActionMode::End,
        _ => return None,
    };
    let outcome = match a.outcome.as_str() {
        "terminated" => ActionOutcome::Terminated,
        "killed" => ActionOutcome::Killed,
        "would-end" => ActionOutcome::WouldEnd,
        "gone" => ActionOutcome::Gone,
        "pid-reused" => ActionOutcome::PidReused,
        "not-permitted" => ActionOutcome::NotPermitted,
        "failed" => ActionOutcome::Failed,
        _ => return None,
    };
    Some(LastAction {
        kind,
        mode,
        pid: a.pid,
        name: a.comm.clone(),
        memory_used_bytes: a.memory_used_bytes,
        at: Timestamp::from_millisecond(a.at_ms).ok()?,
        outcome,
    })
}

#[cfg(test)]
mod tests;
