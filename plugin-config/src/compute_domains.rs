//! `[compute_domains]`: whether the plugin also serves NVIDIA's
//! ComputeDomain channels as the second DRA driver
//! `compute-domain.nvidia.com` (its own kubelet registration, its own pool of
//! IMEX channels). Parsed here; the plugin's `compute_domains` module acts on
//! it.

use std::path::PathBuf;

use serde::Deserialize;

/// The second driver's name, NVIDIA's (its DeviceClasses and opaque configs
/// name it).
pub const COMPUTE_DOMAIN_DRIVER: &str = gpuslice_imex::DRIVER_NAME;

/// `[compute_domains]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ComputeDomainsConfig {
    /// `"auto"` (default): serve the channel driver when gpusliced reports
    /// the node in a multi-node NVLink clique (`ListDomains`); `"on"`: serve
    /// it whatever the fabric; `"off"`: never.
    pub enabled: ComputeDomainsMode,
    /// The kubeconfig of the identity that keeps ComputeDomains (makes their
    /// templates, writes the node's entry of their status): a token of the
    /// ServiceAccount packaging/rbac/compute-domains.yaml binds. Default:
    /// the plugin's own access (a pod's ServiceAccount with that role; the
    /// kubelet's node identity cannot read ComputeDomains).
    pub kubeconfig: Option<PathBuf>,
}

/// `[compute_domains] enabled`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ComputeDomainsMode {
    /// When the node has an NVLink clique.
    #[default]
    Auto,
    /// Always.
    On,
    /// Never.
    Off,
}
