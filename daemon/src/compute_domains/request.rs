//! A channel claim as the plugin forwards it, checked before anything is
//! touched: a canonical claim uid, sane names, exactly one device that is a
//! channel (`channel-<id>`), and the domain from the claim's
//! `ComputeDomainChannelConfig` (the last one that applies wins, as for the
//! GPU driver's configs), which must be the ComputeDomain the caller read
//! and vouches for, in the claim's own namespace: a claim's config is the
//! tenant's to write, and a domain's uid is no secret (it labels the
//! domain's template), so a claim naming another namespace's domain is
//! refused, never joined to it. Pure.

use gpuslice_imex::channels::{CHANNEL_COUNT, channel_id};
use gpuslice_imex::config::{AllocationMode, OpaqueConfig, parse};

use super::DomainError;

/// Longest namespace or claim name Kubernetes allows.
const MAX_NAME: usize = 253;

/// The allocated device of a channel claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelDevice {
    /// `channel-<id>`.
    pub device: String,
    /// The claim's requests it satisfies.
    pub request_names: Vec<String>,
    /// The pool it came from (the node's name).
    pub pool: String,
}

/// One opaque config of the claim, lowest precedence first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelConfigEntry {
    /// The requests it applies to; empty: all.
    pub requests: Vec<String>,
    /// Its parameters, JSON.
    pub parameters_json: String,
}

/// The ComputeDomain the caller read for a claim and vouches for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DomainRef {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// Its uid.
    pub uid: String,
}

/// A channel claim's prepare, as asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelRequest {
    /// Claim uid.
    pub uid: String,
    /// Claim namespace.
    pub namespace: String,
    /// Claim name.
    pub name: String,
    /// The allocated devices (exactly one is taken).
    pub devices: Vec<ChannelDevice>,
    /// The opaque configs of `compute-domain.nvidia.com`.
    pub configs: Vec<ChannelConfigEntry>,
    /// The domain the caller vouches for; `None` from a caller that read
    /// none (an older plugin).
    pub vouched: Option<DomainRef>,
}

/// A channel claim, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelAsk {
    /// Claim uid.
    pub uid: String,
    /// Claim namespace.
    pub namespace: String,
    /// Claim name.
    pub name: String,
    /// The device.
    pub device: ChannelDevice,
    /// Its channel id.
    pub channel: u32,
    /// The ComputeDomain's uid.
    pub domain: String,
    /// Its namespace (the claim's) and name.
    pub domain_name: String,
    /// Every channel of the domain (`allocationMode: All`), not only this one.
    pub all_channels: bool,
}

fn invalid(field: impl Into<String>, problem: impl Into<String>) -> DomainError {
    DomainError::InvalidField {
        field: field.into(),
        problem: problem.into(),
    }
}

/// A canonical (lowercase, hyphenated) UUID.
pub fn check_uuid(field: &str, text: &str) -> Result<(), DomainError> {
    let canonical = uuid::Uuid::try_parse(text)
        .map(|u| u.hyphenated().to_string())
        .ok();
    if canonical.as_deref() == Some(text) {
        Ok(())
    } else {
        Err(invalid(
            field,
            format!(
                "{:?} is not a lowercase hyphenated UUID",
                text.chars().take(80).collect::<String>()
            ),
        ))
    }
}

fn check_name(field: &str, value: &str, max: usize) -> Result<(), DomainError> {
    let bad = value
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '.')));
    if value.is_empty() || value.len() > max {
        return Err(invalid(field, format!("must be 1 to {max} bytes")));
    }
    match bad {
        Some(c) => Err(invalid(
            field,
            format!("contains {c:?}; only lowercase letters, digits, '-' and '.' are allowed"),
        )),
        None => Ok(()),
    }
}

impl ChannelRequest {
    /// Checks the claim; its channel and domain.
    pub fn validate(&self) -> Result<ChannelAsk, DomainError> {
        check_uuid("claim.uid", &self.uid)?;
        check_name("claim.namespace", &self.namespace, MAX_NAME)?;
        check_name("claim.name", &self.name, MAX_NAME)?;
        let [device] = self.devices.as_slice() else {
            let names: Vec<&str> = self.devices.iter().map(|d| d.device.as_str()).collect();
            return Err(invalid(
                "devices",
                format!(
                    "a channel claim has exactly one device (channel-<id>); got [{}]",
                    names.join(", ")
                ),
            ));
        };
        let Some(channel) = channel_id(&device.device) else {
            return Err(invalid(
                "devices[0].device",
                format!(
                    "{:?} is not an IMEX channel: channel-<id> with id 0 to {}",
                    device.device.chars().take(80).collect::<String>(),
                    CHANNEL_COUNT - 1
                ),
            ));
        };
        for (j, r) in device.request_names.iter().enumerate() {
            check_name(&format!("devices[0].request_names[{j}]"), r, 63)?;
        }
        let (domain, mode) = self.domain(device)?;
        let vouched = self.vouched_for(&domain)?;
        Ok(ChannelAsk {
            uid: self.uid.clone(),
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            device: device.clone(),
            channel,
            domain,
            domain_name: vouched.name.clone(),
            all_channels: mode == AllocationMode::All,
        })
    }

    /// The vouch for `domain`: the caller read that very domain, in the
    /// claim's namespace.
    fn vouched_for(&self, domain: &str) -> Result<&DomainRef, DomainError> {
        let Some(vouched) = &self.vouched else {
            return Err(DomainError::NotVouched {
                domain: domain.to_owned(),
            });
        };
        check_name("domain.name", &vouched.name, MAX_NAME)?;
        if vouched.uid != domain {
            return Err(DomainError::NotVouched {
                domain: domain.to_owned(),
            });
        }
        if vouched.namespace != self.namespace {
            return Err(DomainError::OtherTenant {
                domain: format!("{}/{}", vouched.namespace, vouched.name),
                domain_namespace: vouched.namespace.clone(),
                claim: format!("{}/{}", self.namespace, self.name),
                claim_namespace: self.namespace.clone(),
            });
        }
        Ok(vouched)
    }

    /// The domain and mode of the last channel config that applies to
    /// `device`.
    fn domain(&self, device: &ChannelDevice) -> Result<(String, AllocationMode), DomainError> {
        let mut found = None;
        for (i, entry) in self.configs.iter().enumerate() {
            let applies = entry.requests.is_empty()
                || entry
                    .requests
                    .iter()
                    .any(|r| device.request_names.contains(r));
            if !applies {
                continue;
            }
            let value: serde_json::Value = serde_json::from_str(&entry.parameters_json)
                .map_err(|e| DomainError::Config(format!("configs[{i}]: not JSON: {e}")))?;
            match parse(&value) {
                Ok(OpaqueConfig::Channel(config)) => {
                    found = Some((config.domain_id, config.allocation_mode.unwrap_or_default()));
                }
                Ok(OpaqueConfig::Daemon(_)) => {
                    return Err(DomainError::Config(format!(
                        "configs[{i}]: a ComputeDomainDaemonConfig claims an IMEX daemon; gpusliced \
                         runs the node's IMEX daemon itself, so only channel claims are prepared"
                    )));
                }
                Err(err) => return Err(DomainError::Config(format!("configs[{i}]: {err}"))),
            }
        }
        let Some((domain, mode)) = found else {
            return Err(DomainError::Config(
                "no ComputeDomainChannelConfig applies to the channel: a channel claim comes from \
                 its ComputeDomain's ResourceClaimTemplate, which carries the domain's uid"
                    .to_owned(),
            ));
        };
        check_uuid("ComputeDomainChannelConfig.domainID", &domain)?;
        Ok((domain, mode))
    }
}
