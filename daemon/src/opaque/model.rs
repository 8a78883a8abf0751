//! The opaque config objects as users write them, decoded strictly (unknown
//! fields refused). Field names follow NVIDIA's DRA driver
//! (`resource.nvidia.com/v1beta1`) so existing manifests work unchanged; our
//! own extension lives under [`GPUSLICE_API_VERSION`]. The settings of each
//! sharing strategy are the strategy's kind of access's to decode: here they
//! stay JSON, keyed as written. Pure.

use std::collections::BTreeMap;

use serde::Deserialize;

/// NVIDIA's opaque config API group and version.
pub const NVIDIA_API_VERSION: &str = "resource.nvidia.com/v1beta1";
/// Our own extensions' API group and version.
pub const GPUSLICE_API_VERSION: &str = "gpuslice.dev/v1alpha1";

/// Just enough to route a config object to its kind.
#[derive(Debug, Deserialize)]
pub struct TypeMeta {
    /// e.g. "resource.nvidia.com/v1beta1".
    #[serde(rename = "apiVersion", default)]
    pub api_version: String,
    /// e.g. "GpuConfig".
    #[serde(default)]
    pub kind: String,
}

/// `kind: GpuConfig` (whole GPUs) or `kind: MigDeviceConfig` (MIG devices):
/// the two have the same shape; which strategies and settings each takes is
/// checked where the strategies are known.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NvidiaConfig {
    /// Checked by [`TypeMeta`] first.
    #[serde(rename = "apiVersion")]
    pub _api_version: String,
    /// Checked by [`TypeMeta`] first.
    #[serde(rename = "kind")]
    pub _kind: String,
    /// Absent: the device is the claim's alone.
    #[serde(default)]
    pub sharing: Option<SharingObject>,
}

/// `sharing` of an NVIDIA config: the strategy's name and every other key as
/// written (e.g. `timeSlicingConfig`), for the strategies to claim.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct SharingObject {
    /// e.g. "TimeSlicing".
    pub strategy: String,
    /// The other keys of `sharing`, each with its value.
    #[serde(flatten)]
    pub settings: BTreeMap<String, serde_json::Value>,
}

/// `apiVersion: gpuslice.dev/v1alpha1`, `kind: LimitsConfig`: the claim's
/// own `[limits]` over-share mode and grace, where the node lets claims set
/// them (`[limits] claim_override`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsConfigEntry {
    /// Checked by [`TypeMeta`] first.
    #[serde(rename = "apiVersion")]
    pub _api_version: String,
    /// Checked by [`TypeMeta`] first.
    #[serde(rename = "kind")]
    pub _kind: String,
    /// "warn", "dry-run" or "end".
    #[serde(default)]
    pub overshare: Option<String>,
    /// Seconds over the share before acting.
    #[serde(rename = "graceSeconds", default)]
    pub grace_seconds: Option<u64>,
}

/// A Kubernetes quantity as JSON carries it: a string or a plain number.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Quantity {
    /// "10Gi".
    Text(String),
    /// 10737418240.
    Number(u64),
}

impl Quantity {
    /// The text as written, for messages and parsing.
    pub fn as_text(&self) -> String {
        match self {
            Self::Text(t) => t.clone(),
            Self::Number(n) => n.to_string(),
        }
    }
}
