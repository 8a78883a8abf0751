//! From one device's usage summary to the `status.devices` entry our driver
//! owns (pure): the conditions Ready, Idle, OverShare and ProcessEnded, and
//! in `data` a versioned JSON object (`apiVersion: gpuslice.dev/v1alpha1`,
//! `kind: DeviceUsage`; schema docs/schemas/device-usage-v1alpha1.json).
//!
//! Its input, [`DeviceUsage`], is a plain struct: the task fills it from
//! gpusliced's per-device activity (`DeviceActivity` with its pool, share id
//! and `DeviceUsageSummary`). Figures are rendered quantised (bytes to the
//! MiB, whole percents, times to the second, `lastActive` to the refresh
//! interval), so jitter below that resolution renders the same entry and
//! the planner sees no change. Absent values are omitted, never null.
//! Strings that come from outside (node, names, advice) are cut so that
//! `data` stays far below the API server's 10 KiB limit.

use gpuslice_quantity::show;
use k8s_openapi::api::resource::v1::AllocatedDeviceStatus;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use k8s_openapi::jiff::Timestamp;

use super::plan::{ConditionKey, Desired};

mod data;
mod usage;

pub use usage::{
    ActionKind, ActionMode, ActionOutcome, Advice, AdviceForm, DeviceUsage, Idleness, LastAction,
    Memory, OverShare, Sharing,
};

/// `data.apiVersion`.
pub const API_VERSION: &str = "gpuslice.dev/v1alpha1";
/// `data.kind`.
pub const KIND: &str = "DeviceUsage";
/// The API server's limit on `data` (`AllocatedDeviceStatusDataMaxLength`).
pub const DATA_MAX_BYTES: usize = 10 * 1024;
/// The API server's limit on conditions per entry.
pub const MAX_CONDITIONS: usize = 8;

const MIB: u64 = 1024 * 1024;

/// What every entry of this plugin shares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Context {
    /// The plugin's `driver_name`.
    pub driver: String,
    /// This node.
    pub node: String,
    /// `[claim_status] refresh_s`: `lastActive`'s resolution.
    pub refresh_s: u64,
}

/// A device's entry.
pub fn entry(context: &Context, usage: &DeviceUsage) -> AllocatedDeviceStatus {
    AllocatedDeviceStatus {
        driver: context.driver.clone(),
        pool: usage.pool.clone(),
        device: usage.device.clone(),
        share_id: usage.share_id.clone(),
        conditions: Some(conditions(context, usage)),
        data: Some(RawExtension(data::data(context, usage))),
        network_data: None,
    }
}

/// The planner's view of a claim's entries: their conditions, and the
/// rest as JSON text without what moves with the clock alone: `sampledAt`
/// (a newer sample of the same figures is no change) and the advice's
/// `observedSeconds` and `reason` (an idle claim's advice says how long it
/// has been watched, "observed 3s of the 24h needed"). These go with every
/// write but never cause one; a new advice form, profile or peak does.
pub fn desired(entries: &[AllocatedDeviceStatus]) -> Desired {
    let conditions = entries
        .iter()
        .flat_map(|e| {
            let key = entry_key(e);
            e.conditions.iter().flatten().map(move |c| ConditionKey {
                entry: key.clone(),
                type_: c.type_.clone(),
                status: c.status.clone(),
                reason: c.reason.clone(),
            })
        })
        .collect();
    let figures: Vec<serde_json::Value> = entries
        .iter()
        .map(|e| {
            let mut data = e.data.as_ref().map(|d| d.0.clone());
            if let Some(serde_json::Value::Object(object)) = data.as_mut() {
                object.remove("sampledAt");
                if let Some(serde_json::Value::Object(advice)) = object.get_mut("advice") {
                    advice.remove("observedSeconds");
                    advice.remove("reason");
                }
            }
            serde_json::json!({
                "entry": entry_key(e),
                "messages": e.conditions.iter().flatten().map(|c| (&c.message, &c.last_transition_time.0)).collect::<Vec<_>>(),
                "data": data,
            })
        })
        .collect();
    Desired {
        conditions,
        figures: serde_json::Value::Array(figures).to_string(),
    }
}

/// `pool/device[/shareID]`: an entry's key, as the list-map keys it.
pub fn entry_key(entry: &AllocatedDeviceStatus) -> String {
    match &entry.share_id {
        Some(share) => format!("{}/{}/{share}", entry.pool, entry.device),
        None => format!("{}/{}", entry.pool, entry.device),
    }
}

fn conditions(context: &Context, usage: &DeviceUsage) -> Vec<Condition> {
    let mut out = vec![condition(
        "Ready",
        "True",
        "Prepared",
        usage.prepared_at,
        format!("prepared on {}", cut(&context.node, 253)),
    )];
    out.push(match usage.idleness {
        Idleness::SamplingOff => condition(
            "Idle",
            "Unknown",
            "SamplingOff",
            usage.prepared_at,
            "gpusliced does not sample this device's activity".to_owned(),
        ),
        Idleness::Active { since } => condition(
            "Idle",
            "False",
            "Active",
            since,
            "processes of the claim use the GPU".to_owned(),
        ),
        Idleness::Idle { since } => condition(
            "Idle",
            "True",
            "NoGpuActivity",
            since,
            format!("no GPU activity since {}", second(since)),
        ),
    });
    if usage.sharing.is_shared() {
        let share = usage.memory.share.map(show::mib).unwrap_or_default();
        match usage.overshare {
            Some(OverShare::Over { since }) => out.push(condition(
                "OverShare",
                "True",
                "OverMemoryShare",
                since,
                format!(
                    "memory use above its share{} since {}",
                    if share.is_empty() {
                        String::new()
                    } else {
                        format!(" of {share}")
                    },
                    second(since)
                ),
            )),
            Some(OverShare::Within { since }) => out.push(condition(
                "OverShare",
                "False",
                "WithinShare",
                since,
                "memory use within its share".to_owned(),
            )),
            None => {}
        }
    }
    if let Some(action) = &usage.last_action {
        let (status, reason) = match action.outcome {
            ActionOutcome::Terminated | ActionOutcome::Killed => ("True", "LimitEnforced"),
            ActionOutcome::WouldEnd => ("True", "DryRun"),
            ActionOutcome::NotPermitted => ("True", "NotPermitted"),
            ActionOutcome::Failed => ("False", "SignalFailed"),
            ActionOutcome::Gone | ActionOutcome::PidReused => ("False", "NothingEnded"),
        };
        out.push(condition(
            "ProcessEnded",
            status,
            reason,
            action.at,
            format!(
                "process {} ({}): {}",
                action.pid,
                cut(&action.name, 64),
                outcome_text(action.outcome)
            ),
        ));
    }
    out
}

fn outcome_text(outcome: ActionOutcome) -> &'static str {
    match outcome {
        ActionOutcome::Terminated => "ended by SIGTERM",
        ActionOutcome::Killed => "ended by SIGKILL",
        ActionOutcome::WouldEnd => "would be ended (dry run)",
        ActionOutcome::Gone => "gone before the signal",
        ActionOutcome::PidReused => "its pid names another process now; not signalled",
        ActionOutcome::NotPermitted => "gpusliced may not signal it",
        ActionOutcome::Failed => "the signal failed; gpusliced's journal says why",
    }
}

fn condition(type_: &str, status: &str, reason: &str, at: Timestamp, message: String) -> Condition {
    Condition {
        type_: type_.to_owned(),
        status: status.to_owned(),
        reason: reason.to_owned(),
        last_transition_time: Time(second(at)),
        message,
        observed_generation: None,
    }
}

/// Bytes down to a whole MiB.
pub(super) fn mib(bytes: u64) -> u64 {
    bytes / MIB * MIB
}

/// A time to the second.
pub(super) fn second(t: Timestamp) -> Timestamp {
    truncate(t, 1)
}

/// A time down to a multiple of `seconds` since the epoch.
pub(super) fn truncate(t: Timestamp, seconds: u64) -> Timestamp {
    let step = i64::try_from(seconds).unwrap_or(i64::MAX).max(1);
    let s = t.as_second().div_euclid(step) * step;
    Timestamp::from_second(s).unwrap_or(t)
}

/// At most `max` characters of `text`.
pub(super) fn cut(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}

#[cfg(test)]
mod tests;
