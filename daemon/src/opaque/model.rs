//! The opaque config objects as users write them, decoded strictly (unknown
//! fields refused). Field names follow NVIDIA's DRA driver
//! (`resource.nvidia.com/v1beta1`) so existing manifests work unchanged; our
//! own extension lives under [`GPUSLICE_API_VERSION`]. Pure.

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

/// `kind: GpuConfig`: settings for whole GPUs.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuConfig {
    /// Checked by [`TypeMeta`] first.
    #[serde(rename = "apiVersion")]
    pub _api_version: String,
    /// Checked by [`TypeMeta`] first.
    #[serde(rename = "kind")]
    pub _kind: String,
    /// Absent: the GPU is the claim's alone.
    #[serde(default)]
    pub sharing: Option<GpuSharing>,
}

/// `sharing` of a GpuConfig.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuSharing {
    /// "TimeSlicing" or "MPS".
    pub strategy: String,
    /// Only with strategy TimeSlicing.
    #[serde(rename = "timeSlicingConfig", default)]
    pub time_slicing_config: Option<TimeSlicingConfig>,
    /// Only with strategy MPS.
    #[serde(rename = "mpsConfig", default)]
    pub mps_config: Option<MpsConfig>,
}

/// `kind: MigDeviceConfig`: settings for MIG devices.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MigDeviceConfig {
    /// Checked by [`TypeMeta`] first.
    #[serde(rename = "apiVersion")]
    pub _api_version: String,
    /// Checked by [`TypeMeta`] first.
    #[serde(rename = "kind")]
    pub _kind: String,
    /// Absent: the MIG device is the claim's alone.
    #[serde(default)]
    pub sharing: Option<MigSharing>,
}

/// `sharing` of a MigDeviceConfig: there is no `timeSlicingConfig`, since the
/// time-slice is a property of the whole physical GPU.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MigSharing {
    /// "MPS" (TimeSlicing is refused: it cannot be set per MIG device).
    pub strategy: String,
    /// Only with strategy MPS.
    #[serde(rename = "mpsConfig", default)]
    pub mps_config: Option<MpsConfig>,
}

/// `timeSlicingConfig`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimeSlicingConfig {
    /// "Default", "Short", "Medium" or "Long"; absent means Default.
    #[serde(default)]
    pub interval: Option<String>,
}

/// `mpsConfig`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MpsConfig {
    /// 1..100.
    #[serde(rename = "defaultActiveThreadPercentage", default)]
    pub default_active_thread_percentage: Option<i64>,
    /// A quantity, e.g. "10Gi".
    #[serde(rename = "defaultPinnedDeviceMemoryLimit", default)]
    pub default_pinned_device_memory_limit: Option<Quantity>,
    /// Device index within the request ("0") or UUID → quantity.
    #[serde(rename = "defaultPerDevicePinnedMemoryLimit", default)]
    pub default_per_device_pinned_memory_limit: Option<BTreeMap<String, Quantity>>,
    /// All UIDs share one server (Volta and later). Only `false` is supported.
    #[serde(rename = "multiUser", default)]
    pub multi_user: Option<bool>,
}

/// `apiVersion: gpuslice.dev/v1alpha1`, `kind: MpsMemoryConfig`: a share of a
/// whole GPU's memory under MPS, which the daemon sets as the claim's pinned
/// device memory limit and counts against the GPU's memory.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MpsMemoryConfig {
    /// Checked by [`TypeMeta`] first.
    #[serde(rename = "apiVersion")]
    pub _api_version: String,
    /// Checked by [`TypeMeta`] first.
    #[serde(rename = "kind")]
    pub _kind: String,
    /// The amount, e.g. "20Gi".
    pub memory: Quantity,
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
