//! One gpusliced inventory device as a resource.k8s.io/v1 `Device`, checked
//! against the API's per-device rules so one bad device is skipped (and
//! reported) instead of failing the whole slice on the API server.

use std::collections::BTreeMap;

use gpuslice_proto::gpuslice::v1 as pb;
use gpuslice_proto::gpuslice::v1::attribute_value::Value;
use k8s_openapi::api::resource::v1::{
    CapacityRequestPolicy, CapacityRequestPolicyRange, Counter, Device, DeviceAttribute,
    DeviceCapacity, DeviceCounterConsumption, DeviceTaint,
};

use super::quantity::quantity;
use super::{PoolTarget, SliceError};
use crate::names::{is_dns_label, is_qualified_name};

/// Most attributes plus capacities one device may have.
pub const MAX_ATTRIBUTES_AND_CAPACITIES: usize = 32;
/// Longest string or version attribute value.
pub const MAX_ATTRIBUTE_VALUE: usize = 64;
/// Most counter sets one device may draw from (1.35+ rule).
pub const MAX_CONSUMES_COUNTERS: usize = 2;
/// Most counters in one set or one consumption.
pub const MAX_COUNTERS: usize = 32;

/// The taint key suffix for unhealthy devices: `<driver>/unhealthy`.
pub const UNHEALTHY_TAINT: &str = "unhealthy";

/// The capacity shared by memory under DRAConsumableCapacity.
pub const MEMORY: &str = "memory";
/// Its minimum and step: 1Mi, the unit MPS limits count in.
const MIB: i64 = 1024 * 1024;

/// Converts and checks one device.
pub fn convert(device: &pb::Device, target: &PoolTarget<'_>) -> Result<Device, SliceError> {
    let name = &device.name;
    if !is_dns_label(name) {
        return Err(SliceError::DeviceName {
            device: name.clone(),
        });
    }
    let total = device.attributes.len() + device.capacity.len();
    if total > MAX_ATTRIBUTES_AND_CAPACITIES {
        return Err(SliceError::TooManyAttributes {
            device: name.clone(),
            count: total,
        });
    }
    let mut attributes = BTreeMap::new();
    for (key, value) in &device.attributes {
        attributes.insert(key.clone(), attribute(name, key, value)?);
    }
    // A whole GPU that draws on counters (a MIG-managed GPU in partitionable
    // mode) is never shareable: the scheduler counts the counters of devices
    // allocated to one claim only, so a shared one would leave its slices
    // allocatable beside it; gpusliced refuses to share it anyway.
    // Nor is one whose MPS has no client limits (before Volta): a memory
    // share is a pinned memory limit, which it cannot enforce.
    let limits = device.features.as_ref().is_none_or(|f| f.mps_limits);
    let shareable = target.consumable_capacity
        && is_whole_gpu(device)
        && device.consumes_counters.is_empty()
        && limits;
    let mut capacity = BTreeMap::new();
    for (key, value) in &device.capacity {
        check_key(name, key)?;
        capacity.insert(
            key.clone(),
            DeviceCapacity {
                value: quantity(*value),
                request_policy: (shareable && key == MEMORY).then(|| memory_policy(*value)),
            },
        );
    }
    if device.consumes_counters.len() > MAX_CONSUMES_COUNTERS {
        return Err(SliceError::TooManyConsumptions {
            device: name.clone(),
            count: device.consumes_counters.len(),
        });
    }
    let mut consumes = device
        .consumes_counters
        .iter()
        .map(|c| {
            Ok(DeviceCounterConsumption {
                counter_set: c.counter_set.clone(),
                counters: counters(&c.counter_set, &c.counters)?,
            })
        })
        .collect::<Result<Vec<_>, SliceError>>()?;
    let taints = (target.taint_unhealthy && !device.healthy).then(|| {
        vec![DeviceTaint {
            key: format!("{}/{UNHEALTHY_TAINT}", target.driver),
            value: None,
            effect: "NoSchedule".to_owned(),
            time_added: None,
        }]
    });
    // A tainted device no claim holds draws on no counters: the scheduler's
    // allocator up to Kubernetes 1.36.2 checks a candidate's counters before
    // its taints and keeps what it reserved when the taint refuses it
    // (kubernetes#140436), so every other device of the GPU looked used for
    // the rest of that pod's allocation. No new claim gets the device (the
    // taint, and gpusliced refuses to prepare on an unhealthy one), so its
    // counters count nothing; a held one keeps them, they count what its
    // claim occupies (docs/publication.md, "Upstream bugs").
    if taints.is_some() && device.holders.is_empty() {
        consumes.clear();
    }
    Ok(Device {
        name: name.clone(),
        attributes: non_empty_map(attributes),
        capacity: non_empty_map(capacity),
        consumes_counters: (!consumes.is_empty()).then_some(consumes),
        taints,
        allow_multiple_allocations: shareable.then_some(true),
        ..Device::default()
    })
}

/// Whether the device goes into the pool. A whole GPU that gpusliced's
/// `[mig]` config manages (`migManaged`) is published only when it draws on
/// its slices' counters (partitionable mode); in layout mode nothing would
/// tell the scheduler that it overlaps its slices, so only they are
/// published (docs/publication.md).
pub fn published(device: &pb::Device) -> bool {
    let mig_managed = matches!(
        device
            .attributes
            .get(MIG_MANAGED)
            .and_then(|a| a.value.as_ref()),
        Some(Value::Bool(true))
    );
    !(is_whole_gpu(device) && mig_managed && device.consumes_counters.is_empty())
}

/// The attribute gpusliced sets on whole GPUs its `[mig]` config manages.
pub const MIG_MANAGED: &str = "migManaged";

/// A whole GPU, as gpusliced types it (`type` = "gpu"), not a MIG slice.
fn is_whole_gpu(device: &pb::Device) -> bool {
    matches!(
        device.attributes.get("type").and_then(|a| a.value.as_ref()),
        Some(Value::String(kind)) if kind == "gpu"
    )
}

/// How requests consume a shareable GPU's memory: by default all of it (a
/// claim that asks for none takes the GPU alone), otherwise at least 1Mi in
/// steps of 1Mi. The API wants the default to be a multiple of the step, so
/// it is the memory rounded down to whole MiB; the rest (under 1Mi) cannot
/// be asked for anyway.
fn memory_policy(bytes: i64) -> CapacityRequestPolicy {
    let default = bytes - bytes.rem_euclid(MIB);
    CapacityRequestPolicy {
        default: Some(quantity(default)),
        valid_range: Some(CapacityRequestPolicyRange {
            min: quantity(MIB),
            max: None,
            step: Some(quantity(MIB)),
        }),
        valid_values: None,
    }
}

/// A counter map (set or consumption), checked: names are DNS labels.
pub fn counters(
    set: &str,
    values: &std::collections::HashMap<String, i64>,
) -> Result<BTreeMap<String, Counter>, SliceError> {
    if !is_dns_label(set) {
        return Err(SliceError::CounterSetName {
            set: set.to_owned(),
        });
    }
    if values.len() > MAX_COUNTERS {
        return Err(SliceError::TooManyCounters {
            set: set.to_owned(),
            count: values.len(),
        });
    }
    values
        .iter()
        .map(|(counter, value)| {
            if is_dns_label(counter) {
                Ok((
                    counter.clone(),
                    Counter {
                        value: quantity(*value),
                    },
                ))
            } else {
                Err(SliceError::CounterName {
                    set: set.to_owned(),
                    counter: counter.clone(),
                })
            }
        })
        .collect()
}

fn attribute(
    device: &str,
    key: &str,
    value: &pb::AttributeValue,
) -> Result<DeviceAttribute, SliceError> {
    check_key(device, key)?;
    let too_long = |text: &str| {
        (text.len() > MAX_ATTRIBUTE_VALUE).then(|| SliceError::AttributeValue {
            device: device.to_owned(),
            key: key.to_owned(),
            problem: format!("longer than {MAX_ATTRIBUTE_VALUE} bytes"),
        })
    };
    let mut out = DeviceAttribute::default();
    match &value.value {
        Some(Value::String(text)) => {
            too_long(text).map_or(Ok(()), Err)?;
            out.string = Some(text.clone());
        }
        Some(Value::Version(text)) => {
            too_long(text).map_or(Ok(()), Err)?;
            out.version = Some(text.clone());
        }
        Some(Value::Int(n)) => out.int = Some(*n),
        Some(Value::Bool(b)) => out.bool = Some(*b),
        None => {
            return Err(SliceError::AttributeValue {
                device: device.to_owned(),
                key: key.to_owned(),
                problem: "has no value".to_owned(),
            });
        }
    }
    Ok(out)
}

fn check_key(device: &str, key: &str) -> Result<(), SliceError> {
    if is_qualified_name(key) {
        Ok(())
    } else {
        Err(SliceError::AttributeKey {
            device: device.to_owned(),
            key: key.to_owned(),
        })
    }
}

fn non_empty_map<V>(map: BTreeMap<String, V>) -> Option<BTreeMap<String, V>> {
    (!map.is_empty()).then_some(map)
}
