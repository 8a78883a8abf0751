//! The opaque configs of the `compute-domain.nvidia.com` driver, as NVIDIA
//! defines them (api/nvidia.com/resource/v1beta1/computedomainconfig.go):
//! `ComputeDomainChannelConfig` (which domain a channel claim belongs to,
//! and its allocation mode) and `ComputeDomainDaemonConfig` (which domain a
//! daemon claim serves). Read as NVIDIA's strict decoder reads a claim's
//! config: the apiVersion and kind must be known and an unknown field is
//! refused; then NVIDIA's `Validate` (a domain id).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::API_VERSION;

/// `kind` of the channel config.
pub const CHANNEL_KIND: &str = "ComputeDomainChannelConfig";

/// `kind` of the daemon config.
pub const DAEMON_KIND: &str = "ComputeDomainDaemonConfig";

/// How many IMEX channels a claim of the domain gets (`channel.allocationMode`
/// of a ComputeDomain, `allocationMode` of its channel config).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum AllocationMode {
    /// Channel 0.
    #[default]
    Single,
    /// Every channel of the IMEX domain.
    All,
}

/// One opaque config of the driver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpaqueConfig {
    Channel(ChannelConfig),
    Daemon(DaemonConfig),
}

/// A workload's channel claim: the domain (its ComputeDomain's uid) and
/// how many channels.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChannelConfig {
    #[serde(rename = "apiVersion")]
    api_version: String,
    kind: String,
    #[serde(rename = "domainID", default)]
    pub domain_id: String,
    #[serde(
        rename = "allocationMode",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub allocation_mode: Option<AllocationMode>,
}

/// An IMEX daemon's claim under NVIDIA's driver: the domain it serves.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DaemonConfig {
    #[serde(rename = "apiVersion")]
    api_version: String,
    kind: String,
    #[serde(rename = "domainID", default)]
    pub domain_id: String,
}

/// Why a config cannot be taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("the config is not a JSON object with apiVersion and kind")]
    NotAnObject,
    #[error("apiVersion {0:?} is not the driver's: write apiVersion: {API_VERSION}")]
    ApiVersion(String),
    #[error(
        "kind {0:?} is not a config of compute-domain.nvidia.com: write {CHANNEL_KIND} or {DAEMON_KIND}"
    )]
    Kind(String),
    #[error("{kind}: {message}")]
    Field { kind: &'static str, message: String },
    #[error(
        "{0}: domainID cannot be empty: it is the uid of the ComputeDomain the claim belongs to"
    )]
    NoDomain(&'static str),
}

/// The config in a claim's opaque `parameters`.
pub fn parse(parameters: &Value) -> Result<OpaqueConfig, ConfigError> {
    let text = |key: &str| parameters.get(key).and_then(Value::as_str);
    let (Some(api_version), Some(kind)) = (text("apiVersion"), text("kind")) else {
        return Err(ConfigError::NotAnObject);
    };
    if api_version != API_VERSION {
        return Err(ConfigError::ApiVersion(api_version.to_owned()));
    }
    let field = |kind: &'static str| {
        move |e: serde_json::Error| ConfigError::Field {
            kind,
            message: e.to_string(),
        }
    };
    match kind {
        CHANNEL_KIND => {
            let config = ChannelConfig::deserialize(parameters).map_err(field(CHANNEL_KIND))?;
            if config.domain_id.is_empty() {
                return Err(ConfigError::NoDomain(CHANNEL_KIND));
            }
            Ok(OpaqueConfig::Channel(config))
        }
        DAEMON_KIND => {
            let config = DaemonConfig::deserialize(parameters).map_err(field(DAEMON_KIND))?;
            if config.domain_id.is_empty() {
                return Err(ConfigError::NoDomain(DAEMON_KIND));
            }
            Ok(OpaqueConfig::Daemon(config))
        }
        other => Err(ConfigError::Kind(other.to_owned())),
    }
}

impl ChannelConfig {
    /// The channel config of the domain `domain_id` with `mode`.
    pub fn new(domain_id: &str, mode: AllocationMode) -> Self {
        Self {
            api_version: API_VERSION.to_owned(),
            kind: CHANNEL_KIND.to_owned(),
            domain_id: domain_id.to_owned(),
            allocation_mode: Some(mode),
        }
    }

    /// As the parameters of an opaque config.
    pub fn to_parameters(&self) -> Value {
        serde_json::to_value(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_channel_config_reads_its_domain_and_mode() {
        let parsed = parse(&json!({
            "apiVersion": "resource.nvidia.com/v1beta1",
            "kind": "ComputeDomainChannelConfig",
            "domainID": "4f9c",
            "allocationMode": "All",
        }));
        assert_eq!(
            parsed,
            Ok(OpaqueConfig::Channel(ChannelConfig::new(
                "4f9c",
                AllocationMode::All
            )))
        );
    }

    #[test]
    fn a_daemon_config_reads_its_domain() {
        let parsed = parse(&json!({
            "apiVersion": "resource.nvidia.com/v1beta1",
            "kind": "ComputeDomainDaemonConfig",
            "domainID": "4f9c",
        }));
        assert!(
            matches!(parsed, Ok(OpaqueConfig::Daemon(ref d)) if d.domain_id == "4f9c"),
            "{parsed:?}"
        );
    }

    #[test]
    fn a_config_that_cannot_be_taken_is_refused_saying_what_to_write() {
        let base = |extra: Value| {
            let mut v = json!({
                "apiVersion": "resource.nvidia.com/v1beta1",
                "kind": "ComputeDomainChannelConfig",
                "domainID": "4f9c",
            });
            if let (Some(map), Value::Object(more)) = (v.as_object_mut(), extra) {
                map.extend(more);
            }
            v
        };
        let cases = [
            (json!("ComputeDomainChannelConfig"), "not a JSON object"),
            (
                base(json!({"apiVersion": "resource.nvidia.com/v1"})),
                "write apiVersion: resource.nvidia.com/v1beta1",
            ),
            (
                base(json!({"kind": "GpuConfig"})),
                "write ComputeDomainChannelConfig",
            ),
            (base(json!({"domainId": "x"})), "unknown field `domainId`"),
            (
                base(json!({"allocationMode": "Some"})),
                "unknown variant `Some`",
            ),
            (base(json!({"domainID": ""})), "domainID cannot be empty"),
        ];
        for (config, said) in cases {
            let error = parse(&config).expect_err("refused").to_string();
            assert!(error.contains(said), "{config}: {error}");
        }
    }

    #[test]
    fn parameters_read_back_as_the_same_config() {
        for mode in [AllocationMode::Single, AllocationMode::All] {
            let config = ChannelConfig::new("uid-1", mode);
            assert_eq!(
                parse(&config.to_parameters()),
                Ok(OpaqueConfig::Channel(config))
            );
        }
    }
}
