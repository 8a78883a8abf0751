//! The published pool as the scheduler model reads it, from either API
//! version: resource.k8s.io/v1 (what the plugin publishes) and v1beta1 (the
//! same slices in the 1.33/1.34 beta shape: each device's fields under
//! `basic`, counter sets in `sharedCounters` of the slice spec). The model
//! runs on [`Pool`], so one model serves both versions, and the v1beta1 pool
//! is read only from k8s-openapi's v1beta1 types.

use std::collections::BTreeMap;

use gpuslice_dra_plugin::slices::quantity::whole_value;
use k8s_openapi::api::resource::{v1, v1beta1};

/// An attribute value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attr {
    /// string
    Str(String),
    /// int
    Int(i64),
    /// bool
    Bool(bool),
    /// version
    Version(String),
}

/// A capacity and its request policy (DRAConsumableCapacity).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cap {
    /// The capacity.
    pub value: i64,
    /// Consumed when a request asks for none.
    pub default: Option<i64>,
    /// Smallest amount.
    pub min: Option<i64>,
    /// Amounts are `min + k * step`.
    pub step: Option<i64>,
}

/// One published device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dev {
    /// Device name.
    pub name: String,
    /// Attributes by (unqualified or qualified) key as published.
    pub attrs: BTreeMap<String, Attr>,
    /// Capacities.
    pub capacity: BTreeMap<String, Cap>,
    /// (counter set, counter → amount).
    pub consumes: Vec<(String, BTreeMap<String, i64>)>,
    /// `allowMultipleAllocations`.
    pub multi: bool,
    /// Has a NoSchedule or NoExecute taint.
    pub tainted: bool,
}

/// The node's pool: devices in slice order, and every counter set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pool {
    /// Devices, slice by slice, in order.
    pub devices: Vec<Dev>,
    /// Counter sets by name.
    pub counter_sets: BTreeMap<String, BTreeMap<String, i64>>,
}

fn int(q: &k8s_openapi::apimachinery::pkg::api::resource::Quantity) -> i64 {
    whole_value(&q.0).unwrap_or_else(|| panic!("quantity {:?} is not whole", q.0))
}

fn counters(map: &BTreeMap<String, v1::Counter>) -> BTreeMap<String, i64> {
    map.iter()
        .map(|(k, c)| (k.clone(), int(&c.value)))
        .collect()
}

fn counters_beta(map: &BTreeMap<String, v1beta1::Counter>) -> BTreeMap<String, i64> {
    map.iter()
        .map(|(k, c)| (k.clone(), int(&c.value)))
        .collect()
}

fn attr(a: &v1::DeviceAttribute) -> Attr {
    match (&a.string, a.int, a.bool, &a.version) {
        (Some(s), ..) => Attr::Str(s.clone()),
        (_, Some(i), ..) => Attr::Int(i),
        (_, _, Some(b), _) => Attr::Bool(b),
        (.., Some(v)) => Attr::Version(v.clone()),
        _ => panic!("attribute without a value: {a:?}"),
    }
}

fn attr_beta(a: &v1beta1::DeviceAttribute) -> Attr {
    match (&a.string, a.int, a.bool, &a.version) {
        (Some(s), ..) => Attr::Str(s.clone()),
        (_, Some(i), ..) => Attr::Int(i),
        (_, _, Some(b), _) => Attr::Bool(b),
        (.., Some(v)) => Attr::Version(v.clone()),
        _ => panic!("attribute without a value: {a:?}"),
    }
}

fn blocking(effect: &str) -> bool {
    matches!(effect, "NoSchedule" | "NoExecute")
}

/// The pool of v1 slices.
pub fn pool_v1(slices: &[v1::ResourceSliceSpec]) -> Pool {
    let mut pool = Pool::default();
    for slice in slices {
        for set in slice.shared_counters.iter().flatten() {
            pool.counter_sets
                .insert(set.name.clone(), counters(&set.counters));
        }
        for d in slice.devices.iter().flatten() {
            pool.devices.push(Dev {
                name: d.name.clone(),
                attrs: d
                    .attributes
                    .iter()
                    .flatten()
                    .map(|(k, a)| (k.clone(), attr(a)))
                    .collect(),
                capacity: d
                    .capacity
                    .iter()
                    .flatten()
                    .map(|(k, c)| {
                        let policy = c.request_policy.as_ref();
                        let range = policy.and_then(|p| p.valid_range.as_ref());
                        let cap = Cap {
                            value: int(&c.value),
                            default: policy.and_then(|p| p.default.as_ref()).map(int),
                            min: range.map(|r| int(&r.min)),
                            step: range.and_then(|r| r.step.as_ref()).map(int),
                        };
                        (k.clone(), cap)
                    })
                    .collect(),
                consumes: d
                    .consumes_counters
                    .iter()
                    .flatten()
                    .map(|c| (c.counter_set.clone(), counters(&c.counters)))
                    .collect(),
                multi: d.allow_multiple_allocations == Some(true),
                tainted: d.taints.iter().flatten().any(|t| blocking(&t.effect)),
            });
        }
    }
    pool
}

/// The pool of v1beta1 slices.
pub fn pool_v1beta1(slices: &[v1beta1::ResourceSliceSpec]) -> Pool {
    let mut pool = Pool::default();
    for slice in slices {
        for set in slice.shared_counters.iter().flatten() {
            pool.counter_sets
                .insert(set.name.clone(), counters_beta(&set.counters));
        }
        for d in slice.devices.iter().flatten() {
            let Some(b) = &d.basic else {
                panic!("v1beta1 device {} has no basic", d.name)
            };
            pool.devices.push(Dev {
                name: d.name.clone(),
                attrs: b
                    .attributes
                    .iter()
                    .flatten()
                    .map(|(k, a)| (k.clone(), attr_beta(a)))
                    .collect(),
                capacity: b
                    .capacity
                    .iter()
                    .flatten()
                    .map(|(k, c)| {
                        let policy = c.request_policy.as_ref();
                        let range = policy.and_then(|p| p.valid_range.as_ref());
                        let cap = Cap {
                            value: int(&c.value),
                            default: policy.and_then(|p| p.default.as_ref()).map(int),
                            min: range.map(|r| int(&r.min)),
                            step: range.and_then(|r| r.step.as_ref()).map(int),
                        };
                        (k.clone(), cap)
                    })
                    .collect(),
                consumes: b
                    .consumes_counters
                    .iter()
                    .flatten()
                    .map(|c| (c.counter_set.clone(), counters_beta(&c.counters)))
                    .collect(),
                multi: b.allow_multiple_allocations == Some(true),
                tainted: b.taints.iter().flatten().any(|t| blocking(&t.effect)),
            });
        }
    }
    pool
}

/// Through JSON: v1 and v1beta1 share every field name below the device
/// (attributes, capacity with requestPolicy, consumesCounters, taints,
/// allowMultipleAllocations), so the device's fields move under `basic`
/// and the rest stays; deserializing into the v1beta1 types checks that the
/// result is a valid v1beta1 object.
pub fn to_v1beta1(slices: &[v1::ResourceSliceSpec]) -> Vec<v1beta1::ResourceSliceSpec> {
    slices
        .iter()
        .map(|spec| {
            let mut json = serde_json::to_value(spec).expect("v1 slice to JSON");
            if let Some(devices) = json.get_mut("devices").and_then(|d| d.as_array_mut()) {
                for device in devices {
                    let name = device.get("name").cloned().unwrap_or_default();
                    let mut basic = device.take();
                    if let Some(fields) = basic.as_object_mut() {
                        fields.remove("name");
                    }
                    *device = serde_json::json!({ "name": name, "basic": basic });
                }
            }
            serde_json::from_value(json).expect("a valid v1beta1 slice")
        })
        .collect()
}
