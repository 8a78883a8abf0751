//! `[compute_domains]`: whether the plugin also serves NVIDIA's
//! ComputeDomain channels as the second DRA driver
//! `compute-domain.nvidia.com` (its own kubelet registration, its own pool of
//! IMEX channels). Parsed here; the plugin's `compute_domains` module acts on
//! it.

use std::path::PathBuf;

use serde::Deserialize;

use crate::ConfigError;

/// The second driver's name, NVIDIA's (its DeviceClasses and opaque configs
/// name it).
pub const COMPUTE_DOMAIN_DRIVER: &str = gpuslice_imex::DRIVER_NAME;

/// `[compute_domains]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
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
    /// The namespace of the node's membership Leases (one per domain it is
    /// a member of, owned by its Node, watched by the other members): where
    /// packaging/rbac/compute-domains.yaml's Role and the Lease admission
    /// policy allow them. Default `gpuslice-system`.
    pub lease_namespace: String,
}

/// `[compute_domains] lease_namespace`'s default.
pub const DEFAULT_LEASE_NAMESPACE: &str = "gpuslice-system";

impl Default for ComputeDomainsConfig {
    fn default() -> Self {
        Self {
            enabled: ComputeDomainsMode::default(),
            kubeconfig: None,
            lease_namespace: DEFAULT_LEASE_NAMESPACE.to_owned(),
        }
    }
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

impl ComputeDomainsConfig {
    /// What serde cannot check: the Lease namespace is a namespace name.
    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        let namespace = &self.lease_namespace;
        if !gpuslice_publish::names::is_dns_label(namespace) || namespace.len() > 63 {
            return Err(ConfigError::Invalid {
                key: "[compute_domains] lease_namespace",
                problem: format!(
                    "{namespace:?} is not a namespace name (a DNS label: at most 63 lowercase \
                     letters, digits and '-'), e.g. \"{DEFAULT_LEASE_NAMESPACE}\""
                ),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::{Config, ConfigError};

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(text, Path::new("/etc/gpuslice/p.toml"), Path::new("/etc"))
    }

    #[test]
    fn the_lease_namespace_defaults_to_gpuslice_system_and_must_be_a_namespace() {
        let defaults = parse("").expect("valid");
        assert_eq!(defaults.compute_domains.lease_namespace, "gpuslice-system");
        let set = parse("[compute_domains]\nlease_namespace = \"gpu-ops\"").expect("valid");
        assert_eq!(set.compute_domains.lease_namespace, "gpu-ops");
        for bad in ["", "GPU", "a.b", "-x"] {
            let err = parse(&format!("[compute_domains]\nlease_namespace = \"{bad}\""))
                .expect_err(bad)
                .to_string();
            assert!(err.contains("lease_namespace"), "{err}");
        }
    }
}
