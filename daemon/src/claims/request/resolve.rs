//! A request's winning policy checked against its actual devices: the config
//! kind fits the device kind here; what the policy itself needs of them
//! (the GPU's features, limits that fit, keys that name a device) is its
//! kind's check (`claims/access/mps/resolve.rs`). Pure.

use std::collections::BTreeMap;

use crate::claims::access::mps::resolve as mps;
use crate::claims::mps_daemon::{MpsKey, MpsLimits};
use crate::opaque::{ConfigKind, RequestSharing, SharingError, SharingPolicy, TimeSliceInterval};

/// What the check needs to know of one allocated device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceFacts<'a> {
    /// GPU or MIG UUID.
    pub uuid: &'a str,
    /// Whole GPU or MIG device.
    pub kind: ConfigKind,
    /// Its memory in bytes.
    pub memory_bytes: u64,
    /// Its GPU's product name, for a refusal.
    pub product: &'a str,
    /// Whether its GPU runs MPS, and MPS client limits.
    pub mps: (bool, bool),
}

/// What the engine must do for one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResolvedSharing {
    /// Nothing: the devices are the claim's alone.
    Exclusive,
    /// Set the time-slice of these whole GPUs.
    TimeSlicing {
        /// The level.
        interval: TimeSliceInterval,
        /// The GPUs' UUIDs, sorted.
        gpus: Vec<String>,
    },
    /// Run (or join) the MPS control daemon for `key`.
    Mps {
        /// The devices the daemon covers.
        key: MpsKey,
        /// The daemon-wide defaults (every claim on the daemon must agree).
        limits: MpsLimits,
        /// This claim's memory share per device UUID (our extension), applied
        /// to its clients only.
        memory_share: BTreeMap<String, u64>,
    },
}

/// Checks `sharing` (the winner for `request`) against `devices`.
pub fn validate_for_device(
    request: &str,
    sharing: &RequestSharing,
    devices: &[DeviceFacts<'_>],
) -> Result<ResolvedSharing, SharingError> {
    if let Some((kind, index)) = sharing.nvidia
        && let Some(device) = devices.iter().find(|d| d.kind != kind)
    {
        return Err(SharingError::WrongDeviceKind {
            field: format!("configs[{index}].kind"),
            kind,
            request: request.to_owned(),
            device: device.uuid.to_owned(),
            device_kind: kind_words(device.kind),
            expected: device.kind,
        });
    }
    match &sharing.policy {
        SharingPolicy::Exclusive => Ok(ResolvedSharing::Exclusive),
        SharingPolicy::TimeSlicing { interval } => {
            let mut gpus: Vec<String> = devices.iter().map(|d| d.uuid.to_owned()).collect();
            gpus.sort();
            Ok(ResolvedSharing::TimeSlicing {
                interval: *interval,
                gpus,
            })
        }
        SharingPolicy::Mps(settings) => mps::resolve(request, sharing, settings, devices),
    }
}

fn kind_words(kind: ConfigKind) -> &'static str {
    match kind {
        ConfigKind::Gpu => "whole GPU",
        ConfigKind::Mig => "MIG device",
    }
}

#[cfg(test)]
pub(crate) mod tests;
