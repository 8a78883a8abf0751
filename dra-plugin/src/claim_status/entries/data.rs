//! The `data` object of an entry (`DeviceUsage` v1alpha1,
//! docs/schemas/device-usage-v1alpha1.json), rendered quantised; absent
//! values omitted.

use serde::Serialize;

use super::usage::{ActionKind, ActionMode, ActionOutcome, AdviceForm, DeviceUsage, Sharing};
use super::{API_VERSION, Context, KIND, cut, mib, second, truncate};

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

pub(super) fn data(context: &Context, usage: &DeviceUsage) -> serde_json::Value {
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
