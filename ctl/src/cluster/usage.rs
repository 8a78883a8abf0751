//! The reader of `gpuslicectl claims --cluster` (pure): from ResourceClaims
//! as the API server lists them, the `status.devices` entries of our driver
//! whose `data` is a `DeviceUsage` of a version this reader knows
//! (`gpuslice.dev/v1alpha1`, written by gpuslice-dra-plugin; schema
//! docs/schemas/device-usage-v1alpha1.json), with their `Idle` and
//! `OverShare` conditions. Entries of other drivers are not ours and are
//! left alone; ours that cannot be read (another kind or version, no
//! `data`, `data` that does not parse) are skipped and each listed with
//! why, never a panic.

use k8s_openapi::api::resource::v1::{AllocatedDeviceStatus, ResourceClaim};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use k8s_openapi::jiff::Timestamp;
use serde::Deserialize;
use serde_json::Value;

/// `data.apiVersion` this reader knows.
pub const API_VERSION: &str = "gpuslice.dev/v1alpha1";
/// `data.kind` this reader knows.
pub const KIND: &str = "DeviceUsage";

/// One device entry of one claim, read.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The claim's namespace.
    pub namespace: String,
    /// The claim's name.
    pub name: String,
    /// The entry's pool, device and share id.
    pub pool: String,
    /// The device.
    pub device: String,
    /// The share id (consumable capacity), if any.
    pub share_id: Option<String>,
    /// The usage summary.
    pub usage: DeviceUsage,
    /// Since when the device is idle (Idle=True): `lastActive`, else the
    /// condition's lastTransitionTime. `None` while not idle.
    pub idle_since: Option<Timestamp>,
    /// What the Idle condition says: "True", "False", "Unknown", or "" when
    /// there is none.
    pub idle_status: String,
    /// Since when it is above its memory share (OverShare=True).
    pub overshare_since: Option<Timestamp>,
    /// `data` as written, for `--output json`.
    pub data: Value,
}

/// `data`, v1alpha1: the fields this reader uses (others are kept in
/// [`Entry::data`]).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceUsage {
    /// The node the plugin wrote it from.
    pub node: String,
    /// exclusive, mig, mps or timeslicing.
    pub sharing: String,
    /// When the figures were sampled.
    pub sampled_at: Option<Timestamp>,
    /// The window the peaks and means cover.
    pub window_seconds: u64,
    /// Memory figures.
    #[serde(default)]
    pub memory: Memory,
    /// When it was last seen active.
    pub last_active: Option<Timestamp>,
    /// Right-sizing advice.
    pub advice: Option<Advice>,
}

/// `data.memory`, in bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Memory {
    /// Used now.
    pub used_bytes: Option<u64>,
    /// Peak over the window.
    pub peak_bytes: Option<u64>,
    /// The claim's share.
    pub share_bytes: Option<u64>,
    /// The device's total.
    pub total_bytes: Option<u64>,
}

/// `data.advice`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Advice {
    /// abstain, keep, giveBack, mig, mps or timeslicing.
    pub form: String,
    /// The MIG profile, for mig.
    pub mig_profile: Option<String>,
}

/// An entry of our driver that could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// `namespace/name` of the claim.
    pub claim: String,
    /// The entry's device.
    pub device: String,
    /// Why it was skipped.
    pub why: Why,
}

/// Why an entry was skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Why {
    /// `data` of another kind or version (`apiVersion kind` as written).
    Unknown(String),
    /// No `data`, or `data` that does not parse; the parse error.
    Malformed(String),
}

/// Every entry read from a list of claims.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reading {
    /// The claims listed.
    pub claims: usize,
    /// Entries of our driver with a known `data`, in list order.
    pub entries: Vec<Entry>,
    /// Entries of our driver skipped.
    pub skipped: Vec<Skipped>,
}

/// Reads the entries of `driver` in `claims`.
pub fn read(claims: &[ResourceClaim], driver: &str) -> Reading {
    let mut reading = Reading {
        claims: claims.len(),
        ..Reading::default()
    };
    for claim in claims {
        let namespace = claim.metadata.namespace.clone().unwrap_or_default();
        let name = claim.metadata.name.clone().unwrap_or_default();
        let devices = claim.status.iter().flat_map(|s| s.devices.iter().flatten());
        for status in devices.filter(|d| d.driver == driver) {
            match entry(&namespace, &name, status) {
                Ok(entry) => reading.entries.push(entry),
                Err(why) => reading.skipped.push(Skipped {
                    claim: format!("{namespace}/{name}"),
                    device: status.device.clone(),
                    why,
                }),
            }
        }
    }
    reading
}

fn entry(namespace: &str, name: &str, status: &AllocatedDeviceStatus) -> Result<Entry, Why> {
    let data = status
        .data
        .as_ref()
        .map(|d| d.0.clone())
        .ok_or_else(|| Why::Malformed("no data".to_owned()))?;
    let usage = usage(&data)?;
    let condition = |type_: &str| {
        status
            .conditions
            .iter()
            .flatten()
            .find(|c| c.type_ == type_)
    };
    let idle = condition("Idle");
    let overshare = condition("OverShare").filter(|c| c.status == "True");
    Ok(Entry {
        namespace: namespace.to_owned(),
        name: name.to_owned(),
        pool: status.pool.clone(),
        device: status.device.clone(),
        share_id: status.share_id.clone(),
        idle_since: idle
            .filter(|c| c.status == "True")
            .map(|c| usage.last_active.unwrap_or_else(|| since(c))),
        idle_status: idle.map(|c| c.status.clone()).unwrap_or_default(),
        overshare_since: overshare.map(since),
        usage,
        data,
    })
}

fn since(condition: &Condition) -> Timestamp {
    condition.last_transition_time.0
}

/// `data` as a DeviceUsage of a known version, or why not.
fn usage(data: &Value) -> Result<DeviceUsage, Why> {
    let Value::Object(object) = data else {
        return Err(Why::Malformed("data is not a JSON object".to_owned()));
    };
    let text = |key: &str| object.get(key).and_then(Value::as_str);
    match (text("apiVersion"), text("kind")) {
        (Some(API_VERSION), Some(KIND)) => {}
        (None, _) | (_, None) => {
            return Err(Why::Malformed("data has no apiVersion or kind".to_owned()));
        }
        (Some(version), Some(kind)) => return Err(Why::Unknown(format!("{version} {kind}"))),
    }
    // The error names the field: "memory.usedBytes: invalid value: …".
    serde_path_to_error::deserialize(data.clone()).map_err(|e| Why::Malformed(e.to_string()))
}

#[cfg(test)]
#[path = "usage_tests.rs"]
mod tests;
