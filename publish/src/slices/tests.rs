use std::collections::{BTreeSet, HashMap};

use gpuslice_proto::gpuslice::v1 as pb;
use gpuslice_proto::gpuslice::v1::attribute_value::Value;
use k8s_openapi::api::resource::v1::Device;

use super::{
    BuiltPool, MAX_COUNTER_SETS_PER_SLICE, MAX_DEVICES_PER_SLICE,
    MAX_DEVICES_WITH_COUNTERS_OR_TAINTS, PoolTarget, SliceError, build_pool, device_pool,
};
use crate::names::{is_dns_label, is_qualified_name};

const TARGET: PoolTarget<'static> = PoolTarget {
    driver: "gpu.nvidia.com",
    node_name: "node-1",
    taint_unhealthy: false,
    consumable_capacity: false,
};

fn gpu(index: usize) -> pb::Device {
    let attr = |v: Value| pb::AttributeValue { value: Some(v) };
    pb::Device {
        name: format!("gpu-{index}"),
        attributes: HashMap::from([
            ("type".to_owned(), attr(Value::String("gpu".into()))),
            (
                "productName".to_owned(),
                attr(Value::String("NVIDIA H100 80GB HBM3".into())),
            ),
            (
                "driverVersion".to_owned(),
                attr(Value::Version("580.95.5".into())),
            ),
            (
                "index".to_owned(),
                attr(Value::Int(i64::try_from(index).expect("small"))),
            ),
            (
                "resource.kubernetes.io/pciBusID".to_owned(),
                attr(Value::String("0000:3b:00.0".into())),
            ),
            (
                "resource.kubernetes.io/pcieRoot".to_owned(),
                attr(Value::String("pci0000:3a".into())),
            ),
            (
                "resource.kubernetes.io/numaNode".to_owned(),
                attr(Value::Int(1)),
            ),
        ]),
        capacity: HashMap::from([("memory".to_owned(), 85_899_345_920)]),
        healthy: true,
        available: true,
        ..pb::Device::default()
    }
}

fn inventory(devices: usize) -> pb::GetInventoryResponse {
    pb::GetInventoryResponse {
        devices: (0..devices).map(gpu).collect(),
        ..pb::GetInventoryResponse::default()
    }
}

/// The devices of the one slice `inv` makes for `target`, the pool's shape
/// checked.
fn one_slice_devices(inv: &pb::GetInventoryResponse, target: &PoolTarget<'_>) -> Vec<Device> {
    let pool = build_pool(inv, target, 1);
    check_shape(&pool, 1);
    pool.slices[0].devices.clone().expect("devices")
}

/// Every rule a published pool must satisfy, whatever its input.
fn check_shape(pool: &BuiltPool, generation: i64) -> Vec<String> {
    let count = i64::try_from(pool.slices.len()).expect("small");
    assert!(count >= 1, "a pool always has a slice");
    let mut names = Vec::new();
    for slice in &pool.slices {
        assert_eq!(slice.driver, "gpu.nvidia.com");
        assert_eq!(slice.node_name.as_deref(), Some("node-1"));
        assert_eq!(slice.pool.name, "node-1");
        assert_eq!(slice.pool.generation, generation);
        assert_eq!(slice.pool.resource_slice_count, count);
        assert!(
            slice.devices.is_none() || slice.shared_counters.is_none(),
            "devices and counters never share a slice"
        );
        let devices = slice.devices.as_deref().unwrap_or_default();
        let limited = devices
            .iter()
            .any(|d| d.consumes_counters.is_some() || d.taints.is_some());
        let limit = if limited {
            MAX_DEVICES_WITH_COUNTERS_OR_TAINTS
        } else {
            MAX_DEVICES_PER_SLICE
        };
        assert!(
            devices.len() <= limit,
            "{} devices in one slice",
            devices.len()
        );
        assert!(
            slice
                .shared_counters
                .as_ref()
                .is_none_or(|s| s.len() <= MAX_COUNTER_SETS_PER_SLICE)
        );
        for device in devices {
            assert!(is_dns_label(&device.name), "{}", device.name);
            let attributes = device.attributes.as_ref().map_or(0, |a| a.len());
            let capacity = device.capacity.as_ref().map_or(0, |c| c.len());
            assert!(attributes + capacity <= 32);
            for key in device
                .attributes
                .iter()
                .flatten()
                .map(|(k, _)| k)
                .chain(device.capacity.iter().flatten().map(|(k, _)| k))
            {
                assert!(is_qualified_name(key), "{key}");
            }
            names.push(device.name.clone());
        }
    }
    let unique: BTreeSet<&String> = names.iter().collect();
    assert_eq!(unique.len(), names.len(), "device names unique in the pool");
    names
}

#[test]
fn splits_at_128_devices_keeping_every_device_once_in_order() {
    for devices in [0, 1, 2, 127, 128, 129, 255, 256, 257, 300, 1000] {
        let pool = build_pool(&inventory(devices), &TARGET, 7);
        let names = check_shape(&pool, 7);
        let want: Vec<String> = (0..devices).map(|i| format!("gpu-{i}")).collect();
        assert_eq!(names, want, "{devices} devices");
        assert_eq!(
            pool.slices.len(),
            devices.div_ceil(MAX_DEVICES_PER_SLICE).max(1),
            "{devices}"
        );
        assert!(pool.skipped.is_empty());
    }
}

#[test]
fn a_fixed_device_list_splits_at_128_or_64_with_taints_every_device_once_in_order() {
    use k8s_openapi::api::resource::v1::{Device, DeviceTaint};
    for (count, tainted) in [
        (0_usize, false),
        (1, false),
        (128, false),
        (129, false),
        (2048, false),
        (65, true),
    ] {
        let devices: Vec<Device> = (0..count)
            .map(|i| Device {
                name: format!("channel-{i}"),
                taints: (tainted && i == 0).then(|| vec![DeviceTaint::default()]),
                ..Device::default()
            })
            .collect();
        let pool = BuiltPool {
            slices: device_pool(&TARGET, devices, 3),
            skipped: Vec::new(),
        };
        let names = check_shape(&pool, 3);
        let want: Vec<String> = (0..count).map(|i| format!("channel-{i}")).collect();
        assert_eq!(names, want, "{count} devices");
        let limit = if tainted {
            MAX_DEVICES_WITH_COUNTERS_OR_TAINTS
        } else {
            MAX_DEVICES_PER_SLICE
        };
        assert_eq!(pool.slices.len(), count.div_ceil(limit).max(1), "{count}");
    }
}

#[test]
fn an_empty_inventory_publishes_one_empty_slice() {
    let pool = build_pool(&inventory(0), &TARGET, 1);
    assert_eq!(pool.slices.len(), 1);
    assert_eq!(pool.slices[0].devices.as_deref().map(<[_]>::len), Some(0));
}

#[test]
fn attributes_and_capacity_keep_their_kinds() {
    let pool = build_pool(&inventory(1), &TARGET, 1);
    let device = &pool.slices[0].devices.as_ref().expect("devices")[0];
    let attrs = device.attributes.as_ref().expect("attributes");
    assert_eq!(
        attrs["productName"].string.as_deref(),
        Some("NVIDIA H100 80GB HBM3")
    );
    assert_eq!(attrs["driverVersion"].version.as_deref(), Some("580.95.5"));
    assert_eq!(attrs["index"].int, Some(0));
    assert_eq!(
        attrs["resource.kubernetes.io/pciBusID"].string.as_deref(),
        Some("0000:3b:00.0")
    );
    // The standard topology attributes keep their domain and kind: the
    // scheduler's matchAttribute reads them as published.
    assert_eq!(
        attrs["resource.kubernetes.io/pcieRoot"].string.as_deref(),
        Some("pci0000:3a")
    );
    assert_eq!(attrs["resource.kubernetes.io/numaNode"].int, Some(1));
    assert_eq!(
        device.capacity.as_ref().expect("capacity")["memory"]
            .value
            .0,
        "80Gi"
    );
    assert!(device.taints.is_none() && device.consumes_counters.is_none());
}

fn counter_set(gpu: usize) -> pb::CounterSet {
    let mut counters: HashMap<String, i64> =
        (0..8).map(|s| (format!("memory-slice-{s}"), 1)).collect();
    counters.insert("memory".into(), 85_899_345_920);
    counters.insert("multiprocessors".into(), 132);
    pb::CounterSet {
        name: format!("gpu-{gpu}-counters"),
        counters,
    }
}

#[test]
fn counter_sets_get_their_own_slices_and_devices_split_at_64() {
    for gpus in [1, 8, 9, 17, 70] {
        let mut inv = inventory(gpus);
        for (i, device) in inv.devices.iter_mut().enumerate() {
            device.consumes_counters = vec![pb::CounterConsumption {
                counter_set: format!("gpu-{i}-counters"),
                counters: HashMap::from([("memory".to_owned(), 85_899_345_920)]),
            }];
        }
        inv.counter_sets = (0..gpus).map(counter_set).collect();
        let pool = build_pool(&inv, &TARGET, 3);
        let names = check_shape(&pool, 3);
        assert_eq!(names.len(), gpus);
        let counter_slices = gpus.div_ceil(MAX_COUNTER_SETS_PER_SLICE);
        let device_slices = gpus.div_ceil(MAX_DEVICES_WITH_COUNTERS_OR_TAINTS);
        assert_eq!(
            pool.slices.len(),
            counter_slices + device_slices,
            "{gpus} gpus"
        );
        let sets: usize = pool
            .slices
            .iter()
            .filter_map(|s| s.shared_counters.as_ref())
            .map(Vec::len)
            .sum();
        assert_eq!(sets, gpus);
        let first = &pool.slices[0]
            .shared_counters
            .as_ref()
            .expect("counter slice first")[0];
        assert_eq!(first.counters["memory-slice-0"].value.0, "1");
        assert_eq!(first.counters["multiprocessors"].value.0, "132");
    }
}

#[test]
fn the_devices_of_one_profile_are_never_split_across_slices() {
    // 40 devices of one profile after 30 of another: plain 64-device chunks
    // would cut the second run in two; the cut moves to where it began.
    let profiles = [("1g.10gb", 30), ("2g.20gb", 40)];
    let mut inv = inventory(70);
    let mut i = 0;
    for (profile, n) in profiles {
        for _ in 0..n {
            let device = &mut inv.devices[i];
            device.attributes.insert(
                "profile".into(),
                pb::AttributeValue {
                    value: Some(Value::String(profile.into())),
                },
            );
            device.consumes_counters = vec![pb::CounterConsumption {
                counter_set: "gpu-0-counters".into(),
                counters: HashMap::from([("memory".to_owned(), 1)]),
            }];
            i += 1;
        }
    }
    inv.counter_sets = vec![counter_set(0)];
    let pool = build_pool(&inv, &TARGET, 1);
    let names = check_shape(&pool, 1);
    let published: Vec<String> = inv.devices.iter().map(|d| d.name.clone()).collect();
    assert_eq!(names, published, "every device once, in order");
    let sizes: Vec<usize> = pool
        .slices
        .iter()
        .filter_map(|s| s.devices.as_ref())
        .map(Vec::len)
        .collect();
    assert_eq!(sizes, [30, 40]);
}

#[test]
fn unhealthy_devices_are_tainted_only_when_asked() {
    let mut inv = inventory(2);
    inv.devices[1].healthy = false;
    inv.devices[1].health_reason = "XID 79".into();
    let plain = build_pool(&inv, &TARGET, 1);
    assert!(
        plain.slices[0]
            .devices
            .as_ref()
            .expect("devices")
            .iter()
            .all(|d| d.taints.is_none())
    );
    let target = PoolTarget {
        taint_unhealthy: true,
        ..TARGET
    };
    let devices = one_slice_devices(&inv, &target);
    assert!(devices[0].taints.is_none());
    let taint = &devices[1].taints.as_ref().expect("taint")[0];
    assert_eq!(taint.key, "gpu.nvidia.com/unhealthy");
    assert_eq!(taint.effect, "NoSchedule");
}

/// kubernetes#140436: a tainted device's counters, reserved by the
/// scheduler before it reads the taint, stay reserved; so one no claim
/// holds is published without them.
#[test]
fn a_tainted_device_no_claim_holds_draws_on_no_counters() {
    let consumption = || {
        vec![pb::CounterConsumption {
            counter_set: "gpu-0-counters".into(),
            counters: HashMap::from([("memory-slice-0".to_owned(), 1)]),
        }]
    };
    let mut inv = inventory(3);
    for device in &mut inv.devices {
        device.consumes_counters = consumption();
    }
    inv.counter_sets = vec![pb::CounterSet {
        name: "gpu-0-counters".into(),
        counters: HashMap::from([("memory-slice-0".to_owned(), 1)]),
    }];
    for unhealthy in &mut inv.devices[1..] {
        unhealthy.healthy = false;
        unhealthy.health_reason = "XID 94".into();
    }
    inv.devices[2].holders = vec!["uid-a".into()];
    let counted = |target: &PoolTarget<'_>| -> Vec<(bool, bool)> {
        let built = build_pool(&inv, target, 1);
        assert!(built.skipped.is_empty(), "{:?}", built.skipped);
        let devices = built.slices.iter().flat_map(|s| s.devices.iter().flatten());
        devices
            .map(|d| (d.taints.is_some(), d.consumes_counters.is_some()))
            .collect()
    };
    let target = PoolTarget {
        taint_unhealthy: true,
        ..TARGET
    };
    // Healthy; tainted and free; tainted and held.
    assert_eq!(
        counted(&target),
        [(false, true), (true, false), (true, true)]
    );
    // Untainted, an unhealthy device keeps them.
    assert_eq!(
        counted(&TARGET),
        [(false, true), (false, true), (false, true)]
    );
}

#[test]
fn bad_devices_are_left_out_and_reported() {
    let mut inv = inventory(8);
    inv.devices[0].name = "GPU_0".into();
    for i in 0..40 {
        inv.devices[1].capacity.insert(format!("c{i}"), 1);
    }
    inv.devices[2]
        .attributes
        .insert("memory-slice-0".into(), pb::AttributeValue::default());
    inv.devices[3].attributes.insert(
        "long".into(),
        pb::AttributeValue {
            value: Some(Value::String("x".repeat(65))),
        },
    );
    inv.devices[4]
        .attributes
        .insert("none".into(), pb::AttributeValue::default());
    inv.devices[5].consumes_counters = (0..3)
        .map(|s| pb::CounterConsumption {
            counter_set: format!("set-{s}"),
            counters: HashMap::new(),
        })
        .collect();
    inv.devices[6].consumes_counters = vec![pb::CounterConsumption {
        counter_set: "set-0".into(),
        counters: HashMap::from([("Bad_Counter".to_owned(), 1)]),
    }];
    let pool = build_pool(&inv, &TARGET, 1);
    assert_eq!(check_shape(&pool, 1), ["gpu-7"]);
    assert!(matches!(pool.skipped[0], SliceError::DeviceName { .. }));
    assert!(matches!(
        pool.skipped[1],
        SliceError::TooManyAttributes { count: 48, .. }
    ));
    assert!(matches!(pool.skipped[2], SliceError::AttributeKey { .. }));
    assert!(matches!(pool.skipped[3], SliceError::AttributeValue { ref key, .. } if key == "long"));
    assert!(matches!(pool.skipped[4], SliceError::AttributeValue { ref key, .. } if key == "none"));
    assert!(matches!(
        pool.skipped[5],
        SliceError::TooManyConsumptions { count: 3, .. }
    ));
    assert!(matches!(pool.skipped[6], SliceError::CounterName { .. }));
    assert_eq!(pool.skipped.len(), 7);
}

#[test]
fn bad_counter_sets_are_left_out() {
    let mut inv = inventory(1);
    let mut big = counter_set(0);
    big.counters
        .extend((0..30).map(|i| (format!("extra-{i}"), 1)));
    let mut badly_named = counter_set(1);
    badly_named.name = "gpu.1".into();
    inv.counter_sets = vec![big, badly_named, counter_set(2)];
    let pool = build_pool(&inv, &TARGET, 1);
    check_shape(&pool, 1);
    assert_eq!(pool.skipped.len(), 2);
    assert!(matches!(
        pool.skipped[0],
        SliceError::TooManyCounters { count: 40, .. }
    ));
    assert!(matches!(pool.skipped[1], SliceError::CounterSetName { .. }));
    let sets = pool.slices[0]
        .shared_counters
        .as_ref()
        .expect("counter slice");
    assert_eq!(sets.len(), 1);
    assert_eq!(sets[0].name, "gpu-2-counters");
}

#[test]
fn consumable_capacity_makes_whole_gpus_shareable_by_memory() {
    let mut inv = inventory(2);
    inv.devices[1].attributes.insert(
        "type".to_owned(),
        pb::AttributeValue {
            value: Some(Value::String("mig".into())),
        },
    );
    // Not a whole number of MiB: the default is rounded down to one.
    inv.devices[0]
        .capacity
        .insert("memory".to_owned(), 85_899_345_920 + 4096);
    let plain = build_pool(&inv, &TARGET, 1);
    let devices = plain.slices[0].devices.as_ref().expect("devices");
    assert!(
        devices
            .iter()
            .all(|d| d.allow_multiple_allocations.is_none())
    );
    let target = PoolTarget {
        consumable_capacity: true,
        ..TARGET
    };
    let devices = one_slice_devices(&inv, &target);
    assert_eq!(devices[0].allow_multiple_allocations, Some(true));
    let memory = &devices[0].capacity.as_ref().expect("capacity")["memory"];
    let policy = memory.request_policy.as_ref().expect("request policy");
    assert_eq!(memory.value.0, "83886084Ki");
    assert_eq!(policy.default.as_ref().map(|q| q.0.as_str()), Some("80Gi"));
    let range = policy.valid_range.as_ref().expect("range");
    assert_eq!(range.min.0, "1Mi");
    assert_eq!(range.step.as_ref().map(|q| q.0.as_str()), Some("1Mi"));
    assert_eq!(range.max, None);
    assert_eq!(
        devices[1].allow_multiple_allocations, None,
        "a MIG slice stays whole"
    );
    assert!(
        devices[1].capacity.as_ref().expect("capacity")["memory"]
            .request_policy
            .is_none()
    );
}

/// A GPU whose MPS has no client limits (before Volta) takes no memory
/// share, so it is not published shareable; one whose gpusliced says
/// nothing of its features (before 0.2) is taken to have them.
#[test]
fn a_gpu_without_mps_limits_is_not_shareable_by_memory() {
    let mut inv = inventory(2);
    inv.devices[0].features = Some(pb::GpuFeatures {
        mps: true,
        mps_limits: false,
        ..pb::GpuFeatures::default()
    });
    inv.devices[1].features = Some(pb::GpuFeatures {
        mps: true,
        mps_limits: true,
        ..pb::GpuFeatures::default()
    });
    let target = PoolTarget {
        consumable_capacity: true,
        ..TARGET
    };
    let shared = build_pool(&inv, &target, 1);
    let devices = shared.slices[0].devices.as_ref().expect("devices");
    assert_eq!(devices[0].allow_multiple_allocations, None);
    assert_eq!(devices[1].allow_multiple_allocations, Some(true));
}

fn mig_managed(mut device: pb::Device, counters: bool) -> pb::Device {
    device.attributes.insert(
        super::MIG_MANAGED.to_owned(),
        pb::AttributeValue {
            value: Some(Value::Bool(true)),
        },
    );
    if counters {
        device.consumes_counters = vec![pb::CounterConsumption {
            counter_set: format!("{}-counters", device.name),
            counters: HashMap::from([("memory-slice-0".to_owned(), 1)]),
        }];
    }
    device
}

#[test]
fn a_mig_managed_gpu_is_published_whole_only_beside_its_slices_counters() {
    let layout = inventory_of(vec![mig_managed(gpu(0), false), gpu(1)]);
    let names = |pool: &BuiltPool| -> Vec<String> {
        pool.slices
            .iter()
            .flat_map(|s| s.devices.iter().flatten().map(|d| d.name.clone()))
            .collect()
    };
    assert_eq!(names(&build_pool(&layout, &TARGET, 1)), ["gpu-1"]);
    let partitionable = inventory_of(vec![mig_managed(gpu(0), true), gpu(1)]);
    assert_eq!(
        names(&build_pool(&partitionable, &TARGET, 1)),
        ["gpu-0", "gpu-1"]
    );
}

#[test]
fn a_gpu_that_draws_on_counters_is_never_shared_by_capacity() {
    let target = PoolTarget {
        consumable_capacity: true,
        ..TARGET
    };
    let pool = build_pool(
        &inventory_of(vec![mig_managed(gpu(0), true), gpu(1)]),
        &target,
        1,
    );
    let shared: Vec<(String, Option<bool>)> = pool
        .slices
        .iter()
        .flat_map(|s| s.devices.iter().flatten())
        .map(|d| (d.name.clone(), d.allow_multiple_allocations))
        .collect();
    assert_eq!(
        shared,
        [("gpu-0".to_owned(), None), ("gpu-1".to_owned(), Some(true))]
    );
}

fn inventory_of(devices: Vec<pb::Device>) -> pb::GetInventoryResponse {
    pb::GetInventoryResponse {
        devices,
        ..pb::GetInventoryResponse::default()
    }
}
