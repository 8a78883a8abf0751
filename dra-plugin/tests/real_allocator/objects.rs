//! Small builders of the Kubernetes objects the hand-made cases use, written
//! as the JSON the API serves and read into k8s-openapi's types (so a typo
//! in a field name fails here, not silently in the tool).
//!
//! Owns: the cases' one node, driver and pool. Must not run anything.

use k8s_openapi::api::resource::v1::{DeviceClass, ResourceClaim, ResourceSlice};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::tool::{Features, Input};

pub const NODE: &str = "node-a";
pub const DRIVER: &str = "gpu.example.com";
/// The one pool, named after the node as a node-local driver names it.
pub const POOL: &str = NODE;

fn typed<T: DeserializeOwned>(what: &str, value: Value) -> T {
    serde_json::from_value(value).unwrap_or_else(|e| panic!("{what} is not a valid object: {e}"))
}

/// A question on [`NODE`] with these features and no claims yet.
pub fn input(features: Features, slices: Vec<ResourceSlice>, classes: Vec<DeviceClass>) -> Input {
    Input {
        node: typed("node", json!({ "metadata": { "name": NODE } })),
        features,
        slices,
        classes,
        claims: vec![],
        allocated: vec![],
        max_allocate_one_calls: None,
    }
}

/// A class selecting this driver's devices that also pass `cel` (true for
/// all of them).
pub fn class(name: &str, cel: &str) -> DeviceClass {
    typed(
        "class",
        json!({
            "metadata": { "name": name },
            "spec": { "selectors": [
                { "cel": { "expression": format!("device.driver == '{DRIVER}' && ({cel})") } }
            ] }
        }),
    )
}

/// Slice `index` of `count` of the pool on [`NODE`], generation 1, holding
/// `devices` (JSON Device objects).
pub fn device_slice(index: u32, count: u32, devices: Value) -> ResourceSlice {
    pool_slice("device slice", index, count, "devices", devices)
}

/// Slice `index` of `count` of the pool, holding only shared counters (the
/// shape Kubernetes 1.35+ requires: counters and devices in separate slices).
pub fn counter_slice(index: u32, count: u32, counter_sets: Value) -> ResourceSlice {
    pool_slice(
        "counter slice",
        index,
        count,
        "sharedCounters",
        counter_sets,
    )
}

/// Slice `index` of `count` of the pool on [`NODE`], generation 1, whose
/// spec holds `content` under `field` (its devices or its counters); `what`
/// names it when it does not parse.
fn pool_slice(what: &str, index: u32, count: u32, field: &str, content: Value) -> ResourceSlice {
    let mut spec = json!({
        "driver": DRIVER,
        "nodeName": NODE,
        "pool": { "name": POOL, "generation": 1, "resourceSliceCount": count },
    });
    spec[field] = content;
    typed(
        what,
        json!({ "metadata": { "name": format!("{NODE}-{index}") }, "spec": spec }),
    )
}

/// A pending claim `default/<name>` with these requests and constraints.
pub fn claim(name: &str, requests: Value, constraints: Value) -> ResourceClaim {
    typed(
        "claim",
        json!({
            "metadata": { "name": name, "namespace": "default", "uid": format!("uid-{name}") },
            "spec": { "devices": { "requests": requests, "constraints": constraints } }
        }),
    )
}

/// A claim `default/<name>` of one request, `r`, for `count` devices of
/// `class` (None: all of them), without constraints.
pub fn one_request_claim(name: &str, class: &str, count: Option<i64>) -> ResourceClaim {
    claim(name, json!([exactly("r", class, count)]), json!([]))
}

/// One request for `count` devices of `class`, or all of them.
pub fn exactly(name: &str, class: &str, count: Option<i64>) -> Value {
    let mode = match count {
        Some(count) => json!({ "allocationMode": "ExactCount", "count": count }),
        None => json!({ "allocationMode": "All" }),
    };
    let mut exact = json!({ "deviceClassName": class });
    if let (Some(exact), Some(mode)) = (exact.as_object_mut(), mode.as_object()) {
        exact.extend(mode.clone());
    }
    json!({ "name": name, "exactly": exact })
}

/// An allocated claim `default/<name>` holding `results` (JSON
/// DeviceRequestAllocationResult objects) on [`NODE`].
pub fn allocated(name: &str, results: Value) -> ResourceClaim {
    typed(
        "allocated claim",
        json!({
            "metadata": { "name": name, "namespace": "default", "uid": format!("uid-{name}") },
            "spec": { "devices": { "requests": [] } },
            "status": { "allocation": { "devices": { "results": results } } }
        }),
    )
}

/// A result holding `device` of the pool for `request`.
pub fn result(request: &str, device: &str) -> Value {
    json!({ "request": request, "driver": DRIVER, "pool": POOL, "device": device })
}
