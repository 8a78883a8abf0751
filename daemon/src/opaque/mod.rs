//! Opaque sharing configs: parsing and precedence. Pure: no I/O, no clock,
//! no environment.
//!
//! Users write the configs NVIDIA's DRA driver reads (`resource.nvidia.com/v1beta1`,
//! kinds `GpuConfig` and `MigDeviceConfig`, `sharing.strategy` TimeSlicing or
//! MPS) plus our one extension under `gpuslice.dev/v1alpha1`:
//!
//! ```yaml
//! apiVersion: gpuslice.dev/v1alpha1
//! kind: MpsMemoryConfig
//! memory: 20Gi          # this claim's share of a whole GPU's memory, under MPS
//! ---
//! apiVersion: gpuslice.dev/v1alpha1
//! kind: LimitsConfig    # the claim's own [limits] (where the node allows it)
//! overshare: end        # warn | dry-run | end
//! graceSeconds: 30
//! ```
//!
//! The flow is two steps:
//! 1. [`parse_configs`] reads every entry (all of them are checked, not only
//!    the winners) and picks, per request, the NVIDIA config and the
//!    gpuslice config that win: claim configs over class configs, later
//!    entries over earlier ones. The two kinds combine (an `MpsMemoryConfig`
//!    alone implies MPS); two configs of one kind do not merge field by field,
//!    the winner replaces the loser, as in NVIDIA's driver.
//! 2. `claims::resolve::validate_for_device` checks the winner against the
//!    request's actual devices (kind, memory, per-device keys) and gives what
//!    the engine can act on.
//!
//! A `LimitsConfig` shares nothing: [`claim_limits`] picks the claim's one
//! (claim over class, later over earlier, whatever requests it names) and
//! [`admit`] checks it against the node's `[limits] claim_override`.
//!
//! Each sharing strategy's settings are its kind of access's to read: the
//! kind's folder holds an `opaque.rs` that stands on this module's floor
//! (`claims/access/timeslicing/opaque.rs`, `claims/access/mps/opaque.rs`);
//! this module reads the envelope, routes each strategy to its kind and
//! ranks the winners.

pub mod admit;
mod error;
mod model;
mod parse;

use std::collections::BTreeMap;

use crate::config::LimitMode;

pub use error::SharingError;
pub use gpuslice_quantity::bytes::parse_bytes;
pub use model::{GPUSLICE_API_VERSION, NVIDIA_API_VERSION, Quantity, SharingObject};
pub use parse::{
    MAX_CONFIG_BYTES, ParsedEntry, decode_entry, decode_setting, parse_entry, quantity_bytes,
};

pub use crate::claims::access::mps::opaque::{MIN_PINNED_LIMIT_BYTES, MpsSettings};
pub use crate::claims::access::timeslicing::opaque::TimeSliceInterval;

/// Where an opaque config came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ConfigSource {
    /// The DeviceClass: lower precedence.
    Class,
    /// The ResourceClaim: higher precedence.
    Claim,
}

/// One opaque config entry for this driver, as the claim's allocation lists it.
#[derive(Debug, Clone, Copy)]
pub struct ConfigEntry<'a> {
    /// Class or claim.
    pub source: ConfigSource,
    /// Requests it applies to; empty means all.
    pub requests: &'a [String],
    /// The raw `opaque.parameters` JSON object.
    pub parameters_json: &'a str,
}

/// Which NVIDIA config kind a setting came from; its text is the kind's
/// name as users write it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::Display)]
pub enum ConfigKind {
    /// `GpuConfig`: whole GPUs.
    #[strum(to_string = "GpuConfig")]
    Gpu,
    /// `MigDeviceConfig`: MIG devices.
    #[strum(to_string = "MigDeviceConfig")]
    Mig,
}

/// A claim's `LimitsConfig`: its own over-share mode and grace, each unset
/// when the node's applies. Stored in the claim record as written here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[derive(serde::Deserialize)]
pub struct ClaimLimits {
    /// `overshare`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overshare: Option<LimitMode>,
    /// `graceSeconds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grace_s: Option<u64>,
}

/// How a request's devices are shared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SharingPolicy {
    /// No sharing config: the devices are the claim's alone.
    Exclusive,
    /// Compute time-slicing of the whole GPU.
    TimeSlicing {
        /// The time-slice level.
        interval: TimeSliceInterval,
    },
    /// An MPS control daemon over the request's devices.
    Mps(MpsSettings),
}

/// The winning settings of one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestSharing {
    /// The winning NVIDIA config's kind and its position in the configs, when
    /// one applies (none: only defaults, or only an `MpsMemoryConfig`).
    pub nvidia: Option<(ConfigKind, usize)>,
    /// Position of the winning `MpsMemoryConfig`, when one applies.
    pub memory_config: Option<usize>,
    /// The combined policy.
    pub policy: SharingPolicy,
}

/// Parses every entry and gives each of `requests` its winning policy.
/// `entries` are in the order the claim lists them; class entries rank below
/// claim entries whatever their position.
pub fn parse_configs(
    entries: &[ConfigEntry<'_>],
    requests: &[&str],
) -> Result<BTreeMap<String, RequestSharing>, SharingError> {
    let parsed = entries
        .iter()
        .enumerate()
        .map(|(index, e)| parse_entry(index, e.parameters_json).map(|p| (index, e, p)))
        .collect::<Result<Vec<_>, _>>()?;
    let mut ranked: Vec<_> = parsed.iter().collect();
    ranked.sort_by_key(|(index, entry, _)| (entry.source, *index));
    let mut out = BTreeMap::new();
    for request in requests {
        let applies = |entry: &ConfigEntry<'_>| {
            entry.requests.is_empty() || entry.requests.iter().any(|r| r == request)
        };
        let nvidia = ranked.iter().rev().find_map(|(index, entry, p)| match p {
            ParsedEntry::Nvidia { kind, policy } if applies(entry) => Some((*kind, *index, policy)),
            _ => None,
        });
        let memory = ranked.iter().rev().find_map(|(index, entry, p)| match p {
            ParsedEntry::MemoryShare(bytes) if applies(entry) => Some((*index, *bytes)),
            _ => None,
        });
        let policy = combine(nvidia.map(|(_, i, p)| (i, p)), memory)?;
        out.insert(
            (*request).to_owned(),
            RequestSharing {
                nvidia: nvidia.map(|(kind, index, _)| (kind, index)),
                memory_config: memory.map(|(index, _)| index),
                policy,
            },
        );
    }
    Ok(out)
}

/// The claim's winning `LimitsConfig` and its position, if any: claim
/// configs over class configs, later over earlier. It applies to the whole
/// claim, whatever requests its entry names. Every entry is checked.
pub fn claim_limits(
    entries: &[ConfigEntry<'_>],
) -> Result<Option<(usize, ClaimLimits)>, SharingError> {
    let mut winner: Option<(ConfigSource, usize, ClaimLimits)> = None;
    for (index, entry) in entries.iter().enumerate() {
        if let ParsedEntry::Limits(limits) = parse_entry(index, entry.parameters_json)?
            && winner.is_none_or(|(source, at, _)| (source, at) <= (entry.source, index))
        {
            winner = Some((entry.source, index, limits));
        }
    }
    Ok(winner.map(|(_, index, limits)| (index, limits)))
}

/// Adds a memory share to the NVIDIA policy: it implies MPS, and cannot sit
/// beside time-slicing or NVIDIA's own pinned limits.
fn combine(
    nvidia: Option<(usize, &SharingPolicy)>,
    memory: Option<(usize, u64)>,
) -> Result<SharingPolicy, SharingError> {
    let base = nvidia.map_or(SharingPolicy::Exclusive, |(_, p)| p.clone());
    let Some((memory_index, bytes)) = memory else {
        return Ok(base);
    };
    let field = format!("configs[{memory_index}].memory");
    match base {
        SharingPolicy::Exclusive => Ok(SharingPolicy::Mps(MpsSettings {
            memory_share: Some(bytes),
            ..MpsSettings::default()
        })),
        SharingPolicy::TimeSlicing { .. } => Err(SharingError::Conflict {
            field,
            problem: format!(
                "a memory share needs strategy MPS, but configs[{}] asks for TimeSlicing; \
                 use MPS or drop the MpsMemoryConfig",
                nvidia.map_or(0, |(i, _)| i)
            ),
        }),
        SharingPolicy::Mps(settings) => settings
            .with_memory_share(field, nvidia.map_or(0, |(i, _)| i), bytes)
            .map(SharingPolicy::Mps),
    }
}

#[cfg(test)]
pub(crate) mod tests;
