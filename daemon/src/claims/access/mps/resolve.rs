//! A request's MPS settings checked against its actual devices: each GPU
//! runs MPS (and its client limits, when any limit is asked), each limit
//! fits its device's memory, each per-device key names one of the request's
//! devices, and a memory share lands on whole GPUs only. Gives the daemon's
//! key, its limits and the claim's shares. Pure.

use std::collections::BTreeMap;

use crate::claims::mps_daemon::{MpsKey, MpsLimits};
use crate::claims::request::resolve::{DeviceFacts, ResolvedSharing};
use crate::features::{Feature, Missing};
use crate::opaque::{ConfigKind, MpsSettings, RequestSharing, SharingError};

/// Checks `settings` (the winner for `request`, as `sharing` ranked it)
/// against `devices`.
pub(crate) fn resolve(
    request: &str,
    sharing: &RequestSharing,
    settings: &MpsSettings,
    devices: &[DeviceFacts<'_>],
) -> Result<ResolvedSharing, SharingError> {
    let config = sharing.nvidia.map_or(0, |(_, index)| index);
    let mps_field = |path: &str| format!("configs[{config}].sharing.mpsConfig{path}");
    let wants_limits = settings.wants_limits();
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
