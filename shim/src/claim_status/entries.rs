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

use k8s_openapi::api::resource::v1::AllocatedDeviceStatus;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use k8s_openapi::jiff::Timestamp;
use serde::Serialize;

use super::plan::{ConditionKey, Desired};

/// `data.apiVersion`.
pub const API_VERSION: &str = "gpuslice.dev/v1alpha1";
/// `data.kind`.
pub const KIND: &str = "DeviceUsage";
/// The API server's limit on `data` (`AllocatedDeviceStatusDataMaxLength`).
pub const DATA_MAX_BYTES: usize = 10 * 1024;
/// The API server's limit on conditions per entry.
pub const MAX_CONDITIONS: usize = 8;

const MIB: u64 = 1024 * 1024;

/// How a device is shared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Sharing {
    /// A whole GPU, alone.
    Exclusive,
    /// A MIG slice.
    Mig,
    /// An MPS share.
    Mps,
    /// A time-sliced share.
    Timeslicing,
}

impl Sharing {
    /// Shared with other claims' processes (OverShare applies).
    pub fn is_shared(self) -> bool {
        matches!(self, Self::Mps | Self::Timeslicing)
    }
}

/// Whether the device is idle, and since when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Idleness {
    /// Activity is not sampled (`[activity]` off, or the GPU not readable).
    SamplingOff,
    /// Active; `since` is when activity resumed (or the prepare).
    Active {
        /// When.
        since: Timestamp,
    },
    /// Idle for at least `idle_after_s`; `since` is when idleness began.
    Idle {
        /// When.
        since: Timestamp,
    },
}

/// An over-share episode on a shared device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OverShare {
    /// Within its share since `since` (the prepare, or the last episode's end).
    Within {
        /// When.
        since: Timestamp,
    },
    /// Above its memory share since `since`.
    Over {
        /// When.
        since: Timestamp,
    },
}

/// The memory figures, in bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Memory {
    /// Used now.
    pub used: Option<u64>,
    /// Peak over the window.
    pub peak: Option<u64>,
    /// The claim's share of the GPU (MPS limit, time-slice share).
    pub share: Option<u64>,
    /// The device's total.
    pub total: Option<u64>,
}

/// The right-sizing advice's form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum AdviceForm {
    /// Seen too little to say.
    Abstain,
    /// Already the smallest fitting form.
    Keep,
    /// Idle all along: give the device back.
    GiveBack,
    /// A MIG slice.
    Mig,
    /// An MPS share.
    Mps,
    /// A time-sliced share.
    Timeslicing,
}

/// Right-sizing advice for the device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Advice {
    /// The form advised.
    pub form: AdviceForm,
    /// The MIG profile, for [`AdviceForm::Mig`].
    pub mig_profile: Option<String>,
    /// The DeviceClass a template would use.
    pub device_class: Option<String>,
    /// How long the claim was observed.
    pub observed_seconds: u64,
    /// The memory peak over that time.
    pub memory_peak_bytes: Option<u64>,
    /// The p95 of SM use, percent of the whole GPU.
    pub sm_p95_percent: Option<u32>,
    /// Why, one line.
    pub reason: String,
}

/// What a limit action was about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ActionKind {
    /// The claim's process above its memory share.
    Overshare,
    /// A process of no claim.
    Unclaimed,
}

/// The limit's mode when it acted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ActionMode {
    /// Said what it would end.
    DryRun,
    /// Ended it.
    End,
}

/// How a limit action ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ActionOutcome {
    /// Ended by SIGTERM.
    Terminated,
    /// Ended by SIGKILL after the grace.
    Killed,
    /// Dry run: would have ended it.
    WouldEnd,
    /// Gone before the signal.
    Gone,
    /// Its pid now names another process: no signal.
    PidReused,
    /// gpusliced may not signal it.
    NotPermitted,
}

/// The last limit action on the device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LastAction {
    /// What about.
    pub kind: ActionKind,
    /// In which mode.
    pub mode: ActionMode,
    /// The process.
    pub pid: u32,
    /// Its command name.
    pub name: String,
    /// Its memory when chosen.
    pub memory_used_bytes: u64,
    /// When.
    pub at: Timestamp,
    /// How it went.
    pub outcome: ActionOutcome,
}

/// One device of one prepared claim, as gpusliced summarises it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceUsage {
    /// The allocation result's pool.
    pub pool: String,
    /// The allocation result's device.
    pub device: String,
    /// The allocation result's share id (consumable capacity), if any.
    pub share_id: Option<String>,
    /// How it is shared.
    pub sharing: Sharing,
    /// When the claim was prepared.
    pub prepared_at: Timestamp,
    /// The sample these figures come from (None: none yet).
    pub sampled_at: Option<Timestamp>,
    /// The window the peaks and means cover.
    pub window_seconds: u32,
    /// Memory.
    pub memory: Memory,
    /// Mean SM use over the window, percent (None on MIG: not sampled).
    pub sm_mean_percent: Option<u32>,
    /// Peak SM use over the window, percent.
    pub sm_peak_percent: Option<u32>,
    /// Processes of the claim on the device.
    pub processes: Option<u32>,
    /// When it was last seen active.
    pub last_active: Option<Timestamp>,
    /// MPS active-thread percentage of the share.
    pub thread_percentage: Option<u32>,
    /// Idle or not.
    pub idleness: Idleness,
    /// Over its share or not (shared devices only; ignored otherwise).
    pub overshare: Option<OverShare>,
    /// Right-sizing advice.
    pub advice: Option<Advice>,
    /// The last limit action.
    pub last_action: Option<LastAction>,
}

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
        data: Some(RawExtension(data(context, usage))),
        network_data: None,
    }
}

/// The planner's view of a claim's entries: their conditions, and the
/// rest as JSON text without `sampledAt` (a newer sample of the same
/// figures is no change).
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
        let share = usage.memory.share.map(mib_text).unwrap_or_default();
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

/// The `data` object, quantised.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Data<'a> {
    api_version: &'static str,
    kind: &'static str,
    node: String,
    sharing: Sharing,
    #[serde(skip_serializing_if = "Option::is_none")]
    sampled_at: Option<String>,
    window_seconds: u32,
    #[serde(skip_serializing_if = "MemoryData::is_empty")]
    memory: MemoryData,
    #[serde(skip_serializing_if = "SmData::is_empty")]
    sm: SmData,
    #[serde(skip_serializing_if = "Option::is_none")]
    processes: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_active: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    share: Option<ShareData>,
    #[serde(skip_serializing_if = "Option::is_none")]
    advice: Option<AdviceData<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_action: Option<ActionData>,
}

#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
struct MemoryData {
    #[serde(skip_serializing_if = "Option::is_none")]
    used_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    peak_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    share_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    total_bytes: Option<u64>,
}

impl MemoryData {
    fn is_empty(&self) -> bool {
        self.used_bytes.is_none()
            && self.peak_bytes.is_none()
            && self.share_bytes.is_none()
            && self.total_bytes.is_none()
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SmData {
    #[serde(skip_serializing_if = "Option::is_none")]
    mean_percent: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    peak_percent: Option<u32>,
}

impl SmData {
    fn is_empty(&self) -> bool {
        self.mean_percent.is_none() && self.peak_percent.is_none()
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ShareData {
    thread_percentage: u32,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AdviceData<'a> {
    form: AdviceForm,
    #[serde(skip_serializing_if = "Option::is_none")]
    mig_profile: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    device_class: Option<&'a str>,
    observed_seconds: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    memory_peak_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sm_p95_percent: Option<u32>,
    reason: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ActionData {
    kind: ActionKind,
    mode: ActionMode,
    pid: u32,
    name: String,
    memory_used_bytes: u64,
    at: String,
    outcome: ActionOutcome,
}

fn data(context: &Context, usage: &DeviceUsage) -> serde_json::Value {
    let percent = |p: Option<u32>| p.map(|p| p.min(100));
    let data = Data {
        api_version: API_VERSION,
        kind: KIND,
        node: cut(&context.node, 253).to_owned(),
        sharing: usage.sharing,
        sampled_at: usage.sampled_at.map(|t| second(t).to_string()),
        window_seconds: usage.window_seconds,
        memory: MemoryData {
            used_bytes: usage.memory.used.map(mib),
            peak_bytes: usage.memory.peak.map(mib),
            share_bytes: usage.memory.share.map(mib),
            total_bytes: usage.memory.total.map(mib),
        },
        sm: SmData {
            mean_percent: percent(usage.sm_mean_percent),
            peak_percent: percent(usage.sm_peak_percent),
        },
        processes: usage.processes,
        last_active: usage
            .last_active
            .map(|t| truncate(t, context.refresh_s.max(1)).to_string()),
        share: usage.thread_percentage.map(|p| ShareData {
            thread_percentage: p.min(100),
        }),
        advice: usage.advice.as_ref().map(|a| AdviceData {
            form: a.form,
            mig_profile: a.mig_profile.as_deref().map(|s| cut(s, 64)),
            device_class: a.device_class.as_deref().map(|s| cut(s, 253)),
            observed_seconds: a.observed_seconds,
            memory_peak_bytes: a.memory_peak_bytes.map(mib),
            sm_p95_percent: percent(a.sm_p95_percent),
            reason: cut(&a.reason, 512),
        }),
        last_action: usage.last_action.as_ref().map(|a| ActionData {
            kind: a.kind,
            mode: a.mode,
            pid: a.pid,
            name: cut(&a.name, 64).to_owned(),
            memory_used_bytes: mib(a.memory_used_bytes),
            at: second(a.at).to_string(),
            outcome: a.outcome,
        }),
    };
    // A struct of strings, numbers and enums: serialising cannot fail.
    serde_json::to_value(data).unwrap_or_else(|_| serde_json::Value::Object(Default::default()))
}

/// Bytes down to a whole MiB.
fn mib(bytes: u64) -> u64 {
    bytes / MIB * MIB
}

fn mib_text(bytes: u64) -> String {
    format!("{} MiB", bytes / MIB)
}

/// A time to the second.
fn second(t: Timestamp) -> Timestamp {
    truncate(t, 1)
}

/// A time down to a multiple of `seconds` since the epoch.
fn truncate(t: Timestamp, seconds: u64) -> Timestamp {
    let step = i64::try_from(seconds).unwrap_or(i64::MAX).max(1);
    let s = t.as_second().div_euclid(step) * step;
    Timestamp::from_second(s).unwrap_or(t)
}

/// At most `max` characters of `text`.
fn cut(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}

#[cfg(test)]
mod tests;
