//! A request's winning policy checked against its actual devices: the config
//! kind fits the device kind, the GPU has what the policy needs (MPS, its
//! client limits), limits fit the device memory, per-device keys name one of
//! the request's devices. Pure.

use std::collections::BTreeMap;

use crate::claims::mps_daemon::{MpsKey, MpsLimits};
use crate::features::{Feature, Missing};
use crate::opaque::{
    ConfigKind, MpsSettings, RequestSharing, SharingError, SharingPolicy, TimeSliceInterval,
};

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
        SharingPolicy::Mps(settings) => resolve_mps(request, sharing, settings, devices),
    }
}

fn kind_words(kind: ConfigKind) -> &'static str {
    match kind {
        ConfigKind::Gpu => "whole GPU",
        ConfigKind::Mig => "MIG device",
    }
}

fn resolve_mps(
    request: &str,
    sharing: &RequestSharing,
    settings: &MpsSettings,
    devices: &[DeviceFacts<'_>],
) -> Result<ResolvedSharing, SharingError> {
    let config = sharing.nvidia.map_or(0, |(_, index)| index);
    let mps_field = |path: &str| format!("configs[{config}].sharing.mpsConfig{path}");
    let wants_limits = settings.default_active_thread_percentage.is_some()
        || settings.default_pinned_device_memory_limit.is_some()
        || !settings.per_device_pinned_memory_limit.is_empty()
        || settings.memory_share.is_some();
    for device in devices {
        let lacks = |feature: Feature, asked: &str| Missing {
            feature,
            gpu: device.uuid.to_owned(),
            product: device.product.to_owned(),
            asked: format!("{asked} of request {request:?}"),
            evidence: None,
        };
        let (mps, limits) = device.mps;
        if !mps {
            return Err(lacks(Feature::Mps, "MPS").into());
        }
        if wants_limits && !limits {
            return Err(lacks(Feature::MpsLimits, "the MPS limits").into());
        }
    }
    let mut limits = MpsLimits {
        active_thread_percentage: settings.default_active_thread_percentage,
        pinned_memory_limits: BTreeMap::new(),
    };
    if let Some(bytes) = settings.default_pinned_device_memory_limit {
        for device in devices {
            check_fits(mps_field(".defaultPinnedDeviceMemoryLimit"), bytes, device)?;
            limits
                .pinned_memory_limits
                .insert(device.uuid.to_owned(), bytes);
        }
    }
    for (key, bytes) in &settings.per_device_pinned_memory_limit {
        let field = mps_field(&format!(".defaultPerDevicePinnedMemoryLimit.{key}"));
        let device = find_device(&field, key, request, devices)?;
        check_fits(field, *bytes, device)?;
        limits
            .pinned_memory_limits
            .insert(device.uuid.to_owned(), *bytes);
    }
    let mut memory_share = BTreeMap::new();
    if let Some(bytes) = settings.memory_share {
        let field = format!("configs[{}].memory", sharing.memory_config.unwrap_or(0));
        for device in devices {
            if device.kind == ConfigKind::Mig {
                return Err(SharingError::Conflict {
                    field,
                    problem: format!(
                        "device {} of request {request:?} is a MIG device, whose memory is \
                         fixed by its profile; a memory share applies to whole GPUs only",
                        device.uuid
                    ),
                });
            }
            check_fits(field.clone(), bytes, device)?;
            memory_share.insert(device.uuid.to_owned(), bytes);
        }
    }
    Ok(ResolvedSharing::Mps {
        key: MpsKey::new(devices.iter().map(|d| d.uuid)),
        limits,
        memory_share,
    })
}

fn check_fits(field: String, bytes: u64, device: &DeviceFacts<'_>) -> Result<(), SharingError> {
    if bytes > device.memory_bytes {
        return Err(SharingError::OverDeviceMemory {
            field,
            limit_bytes: bytes,
            device: device.uuid.to_owned(),
            memory_bytes: device.memory_bytes,
        });
    }
    Ok(())
}

/// A per-device key: an index into the request's devices, or one's UUID.
fn find_device<'d, 'a>(
    field: &str,
    key: &str,
    request: &str,
    devices: &'d [DeviceFacts<'a>],
) -> Result<&'d DeviceFacts<'a>, SharingError> {
    let by_index = key.parse::<usize>().ok().and_then(|i| devices.get(i));
    by_index
        .or_else(|| devices.iter().find(|d| d.uuid == key))
        .ok_or_else(|| SharingError::UnknownDeviceKey {
            field: field.to_owned(),
            key: key.to_owned(),
            request: request.to_owned(),
            count: devices.len(),
            uuids: devices
                .iter()
                .map(|d| d.uuid)
                .collect::<Vec<_>>()
                .join(", "),
        })
}

#[cfg(test)]
mod tests;
