//! Small pools, classes and claims to allocate, written compactly.

use std::collections::BTreeMap;

use k8s_openapi::api::resource::v1::{
    AllocationResult, CapacityRequestPolicy, CapacityRequestPolicyRange, Counter, CounterSet,
    Device, DeviceAttribute, DeviceCapacity, DeviceClass, DeviceCounterConsumption, DeviceTaint,
    ResourceClaim, ResourcePool, ResourceSliceSpec,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use crate::allocate::{Held, Input, allocate};

pub const DRIVER: &str = "gpu.nvidia.com";

/// A device with string attributes (`key=value`).
pub fn dev(name: &str, attrs: &[(&str, &str)]) -> Device {
    let attributes = attrs
        .iter()
        .map(|(k, v)| {
            let value = DeviceAttribute {
                string: Some((*v).to_owned()),
                ..DeviceAttribute::default()
            };
            ((*k).to_owned(), value)
        })
        .collect();
    Device {
        name: name.to_owned(),
        attributes: Some(attributes),
        ..Device::default()
    }
}

/// A MIG slice of `parent` with `profile`.
pub fn slice_dev(name: &str, parent: &str, profile: &str) -> Device {
    dev(
        name,
        &[
            ("type", "mig"),
            ("parentUUID", parent),
            ("profile", profile),
        ],
    )
}

/// A whole GPU.
pub fn gpu(name: &str, product: &str) -> Device {
    dev(name, &[("type", "gpu"), ("productName", product)])
}

/// `device` consuming `amount` of counter `mem` of `set`.
pub fn consuming(mut device: Device, set: &str, amount: i64) -> Device {
    device
        .consumes_counters
        .get_or_insert_default()
        .push(DeviceCounterConsumption {
            counter_set: set.to_owned(),
            counters: BTreeMap::from([(
                "mem".to_owned(),
                Counter {
                    value: Quantity(amount.to_string()),
                },
            )]),
        });
    device
}

/// `device` with a NoSchedule taint `key`.
pub fn tainted(mut device: Device, key: &str) -> Device {
    device.taints.get_or_insert_default().push(DeviceTaint {
        key: key.to_owned(),
        value: None,
        effect: "NoSchedule".to_owned(),
        time_added: None,
    });
    device
}

/// `device` shareable by memory (`value`, policy min 1Mi step 1Mi, default
/// all of it).
pub fn shareable(mut device: Device, memory: &str) -> Device {
    device.allow_multiple_allocations = Some(true);
    device.capacity.get_or_insert_default().insert(
        "memory".to_owned(),
        DeviceCapacity {
            value: Quantity(memory.to_owned()),
            request_policy: Some(CapacityRequestPolicy {
                default: Some(Quantity(memory.to_owned())),
                valid_range: Some(CapacityRequestPolicyRange {
                    min: Quantity("1Mi".to_owned()),
                    max: None,
                    step: Some(Quantity("1Mi".to_owned())),
                }),
                valid_values: None,
            }),
        },
    );
    device
}

/// `device` with a plain capacity.
pub fn with_memory(mut device: Device, memory: &str) -> Device {
    device.capacity.get_or_insert_default().insert(
        "memory".to_owned(),
        DeviceCapacity {
            value: Quantity(memory.to_owned()),
            request_policy: None,
        },
    );
    device
}

/// One slice of node-a's pool.
pub fn pool(devices: Vec<Device>) -> Vec<ResourceSliceSpec> {
    vec![ResourceSliceSpec {
        driver: DRIVER.to_owned(),
        node_name: Some("node-a".to_owned()),
        pool: ResourcePool {
            name: "node-a".to_owned(),
            generation: 1,
            resource_slice_count: 1,
        },
        devices: Some(devices),
        ..ResourceSliceSpec::default()
    }]
}

/// `slices` with counter sets (name, value of `mem`) in a slice of their own.
pub fn with_counters(
    mut slices: Vec<ResourceSliceSpec>,
    sets: &[(&str, i64)],
) -> Vec<ResourceSliceSpec> {
    let mut counters = slices[0].clone();
    counters.devices = None;
    counters.shared_counters = Some(
        sets.iter()
            .map(|(name, value)| CounterSet {
                name: (*name).to_owned(),
                counters: BTreeMap::from([(
                    "mem".to_owned(),
                    Counter {
                        value: Quantity(value.to_string()),
                    },
                )]),
            })
            .collect(),
    );
    slices.insert(0, counters);
    slices
}

/// The classes `gpu.example` (type gpu), `mig.example` (type mig), and
/// `mps.example` (type gpu, with an opaque config).
pub fn classes() -> Vec<DeviceClass> {
    let yaml = r#"
- metadata: {name: gpu.example}
  spec:
    selectors:
    - cel: {expression: "device.attributes['gpu.nvidia.com'].type == 'gpu'"}
- metadata: {name: mig.example}
  spec:
    selectors:
    - cel: {expression: "device.attributes['gpu.nvidia.com'].type == 'mig'"}
- metadata: {name: mps.example}
  spec:
    selectors:
    - cel: {expression: "device.attributes['gpu.nvidia.com'].type == 'gpu'"}
    config:
    - opaque: {driver: gpu.nvidia.com, parameters: {kind: GpuConfig}}
"#;
    serde_norway::from_str(yaml).expect("classes")
}

/// A claim from the YAML of its `spec.devices`.
pub fn claim(name: &str, devices: &str) -> ResourceClaim {
    let spec: serde_json::Value = serde_norway::from_str(devices).expect("claim YAML");
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"devices": spec},
    }))
    .expect("a v1 claim")
}

/// Allocates `claims` on `slices` with `held` held; the devices each claim
/// gets, as `request=device`.
pub fn run(
    slices: &[ResourceSliceSpec],
    claims: &[ResourceClaim],
    held: &Held,
) -> Option<Vec<Vec<String>>> {
    let out = allocate(&input(slices, claims, held)).expect("allocate");
    out.map(|claims| claims.iter().map(pairs).collect())
}

/// The input of a problem.
pub fn input(slices: &[ResourceSliceSpec], claims: &[ResourceClaim], held: &Held) -> Input {
    Input {
        slices: slices.to_vec(),
        classes: classes(),
        claims: claims.to_vec(),
        held: held.clone(),
    }
}

/// `request=device` for each result.
pub fn pairs(a: &AllocationResult) -> Vec<String> {
    a.devices
        .iter()
        .flat_map(|d| d.results.iter().flatten())
        .map(|r| format!("{}={}", r.request, r.device))
        .collect()
}

/// What holds `devices` exclusively.
pub fn holding(devices: &[&str]) -> Held {
    Held {
        devices: devices.iter().map(|d| (*d).to_owned()).collect(),
        ..Held::default()
    }
}

/// `["r=a", ...]` from `&str`s.
pub fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}
