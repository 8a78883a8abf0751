//! From a request's opaque configs to how each of its devices is shared.
//!
//! [`crate::opaque`] parses every config strictly, picks each request's
//! winner (claim over class, later over earlier) and checks it against the
//! request's devices. This module turns that answer into record form
//! ([`DeviceSharing`]), keyed by device names rather than UUIDs: a MIG slice
//! made at prepare has no UUID yet, and gets a new one when it is made again
//! after a reboot. It also folds in DRAConsumableCapacity: an MPS claim that
//! names no memory share takes the memory the scheduler counted for it.
//! Pure: no I/O.

use std::collections::{BTreeMap, BTreeSet};

use super::resolve::{DeviceFacts, ResolvedSharing, validate_for_device};
use super::{PrepareRequest, device_memory};
use crate::claims::error::ClaimError;
use crate::inventory::{DeviceRef, Inventory};
use crate::opaque::{ConfigEntry, ConfigKind, parse_configs};
use crate::state::{DeviceSharing, MpsSharing};

/// The request's opaque configs, in order.
pub(super) fn entries(req: &PrepareRequest) -> Vec<ConfigEntry<'_>> {
    req.configs
        .iter()
        .map(|c| ConfigEntry {
            source: c.source,
            requests: &c.requests,
            parameters_json: &c.parameters_json,
        })
        .collect()
}

/// How each device of `req` (in order) is shared; `None`: the claim's alone.
/// The caller has checked that every device exists.
pub(super) fn resolve_sharing(
    req: &PrepareRequest,
    inventory: &Inventory,
) -> Result<Vec<Option<DeviceSharing>>, ClaimError> {
    let entries = entries(req);
    let requests = request_names(req);
    let names: Vec<&str> = requests.iter().map(String::as_str).collect();
    let winners = parse_configs(&entries, &names)?;
    let mut out: Vec<Option<DeviceSharing>> = vec![None; req.devices.len()];
    let mut decided_by: Vec<Option<&str>> = vec![None; req.devices.len()];
    for (request, sharing) in &winners {
        let members = members(req, request);
        let devices: Vec<Member<'_>> = members
            .iter()
            .filter_map(|&i| {
                let d = req.devices.get(i)?;
                let device = inventory.device(&d.device)?;
                Some(Member {
                    index: i,
                    name: &d.device,
                    id: device_id(&device, &d.device),
                    device,
                    consumed: d.consumed_memory,
                })
            })
            .collect();
        if devices.is_empty() {
            continue;
        }
        let facts: Vec<DeviceFacts<'_>> = devices.iter().map(Member::facts).collect();
        let resolved = validate_for_device(request, sharing, &facts)?;
        for member in &devices {
            let sharing = record_form(&resolved, member, &devices);
            let slot = out.get_mut(member.index);
            let decided = decided_by.get_mut(member.index);
            let (Some(slot), Some(decided)) = (slot, decided) else {
                continue;
            };
            if let Some(first) = *decided {
                if *slot != sharing {
                    return Err(ClaimError::InvalidField {
                        field: format!("devices[{}].request_names", member.index),
                        problem: format!(
                            "device {} satisfies requests {first:?} and {request:?}, whose \
                             sharing configs differ; give both requests the same config",
                            member.name
                        ),
                    });
                }
                continue;
            }
            *slot = sharing;
            *decided = Some(request.as_str());
        }
    }
    Ok(out)
}

/// Every request name the devices satisfy, plus "" when a device names
/// none (it takes the configs that apply to every request).
fn request_names(req: &PrepareRequest) -> Vec<String> {
    let mut names: BTreeSet<String> = BTreeSet::new();
    for d in &req.devices {
        if d.request_names.is_empty() {
            names.insert(String::new());
        }
        names.extend(d.request_names.iter().cloned());
    }
    names.into_iter().collect()
}

/// Indices of the devices of `request`.
fn members(req: &PrepareRequest, request: &str) -> Vec<usize> {
    req.devices
        .iter()
        .enumerate()
        .filter(|(_, d)| {
            if request.is_empty() {
                d.request_names.is_empty()
            } else {
                d.request_names.iter().any(|r| r == request)
            }
        })
        .map(|(i, _)| i)
        .collect()
}

/// What a config may call the device: its UUID when it has one now (a
/// whole GPU, or a slice made ahead), its inventory name otherwise.
fn device_id(device: &DeviceRef<'_>, name: &str) -> String {
    match device {
        DeviceRef::Gpu(g) => g.info.uuid.clone(),
        DeviceRef::Mig(m, _) => m.uuid.clone().unwrap_or_else(|| name.to_owned()),
    }
}

/// One device of a request.
struct Member<'a> {
    index: usize,
    name: &'a str,
    id: String,
    device: DeviceRef<'a>,
    consumed: Option<u64>,
}

impl Member<'_> {
    fn facts(&self) -> DeviceFacts<'_> {
        DeviceFacts {
            uuid: &self.id,
            kind: match self.device {
                DeviceRef::Gpu(_) => ConfigKind::Gpu,
                DeviceRef::Mig(..) => ConfigKind::Mig,
            },
            memory_bytes: device_memory(&self.device),
            product: &self.device.gpu().info.product_name,
            mps: (
                self.device.gpu().features.mps,
                self.device.gpu().features.mps_limits,
            ),
        }
    }
}

/// The sharing of `member`, whose request resolved to `resolved`.
fn record_form(
    resolved: &ResolvedSharing,
    member: &Member<'_>,
    all: &[Member<'_>],
) -> Option<DeviceSharing> {
    let name_of = |id: &str| all.iter().find(|m| m.id == id).map(|m| m.name.to_owned());
    match resolved {
        ResolvedSharing::Exclusive => None,
        ResolvedSharing::TimeSlicing { interval, .. } => Some(DeviceSharing::TimeSlicing {
            interval: *interval,
        }),
        ResolvedSharing::Mps {
            limits,
            memory_share,
            ..
        } => {
            let mut devices: Vec<String> = all.iter().map(|m| m.name.to_owned()).collect();
            devices.sort();
            let pinned_memory_limits: BTreeMap<String, u64> = limits
                .pinned_memory_limits
                .iter()
                .filter_map(|(id, bytes)| Some((name_of(id)?, *bytes)))
                .collect();
            let whole = matches!(member.device, DeviceRef::Gpu(_));
            let consumed = member
                .consumed
                .filter(|c| whole && *c < device_memory(&member.device));
            Some(DeviceSharing::Mps(MpsSharing {
                devices,
                active_thread_percentage: limits.active_thread_percentage,
                pinned_memory_limits,
                memory_share: memory_share.get(&member.id).copied().or(consumed),
            }))
        }
    }
}
