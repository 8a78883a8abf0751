//! Test fixtures of `claims --cluster`: resource.k8s.io/v1 ResourceClaims
//! as the API server lists them, allocated on a node, with the
//! `status.devices` entries given, and DeviceUsage `data` as
//! gpuslice-dra-plugin writes it.

use k8s_openapi::api::resource::v1::ResourceClaim;
use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

/// The driver of the fixtures.
pub const DRIVER: &str = "gpu.nvidia.com";

/// "Now" in the fixtures.
pub fn now() -> Timestamp {
    "2026-09-01T12:00:00Z".parse().unwrap_or_default()
}

/// A claim `namespace/name` allocated on `node` with one result per entry
/// and `entries` as its `status.devices`.
pub fn claim(namespace: &str, name: &str, node: &str, entries: Vec<Value>) -> ResourceClaim {
    let results: Vec<Value> = entries
        .iter()
        .map(|e| {
            json!({ "request": "gpu", "driver": e["driver"], "pool": e["pool"],
                    "device": e["device"] })
        })
        .collect();
    let object = json!({
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": { "namespace": namespace, "name": name,
                      "uid": format!("uid-{namespace}-{name}") },
        "spec": { "devices": { "requests": [
            { "name": "gpu", "exactly": { "deviceClassName": "gpu.nvidia.com" } } ] } },
        "status": {
            "allocation": {
                "devices": { "results": results },
                "nodeSelector": { "nodeSelectorTerms": [ { "matchFields": [
                    { "key": "metadata.name", "operator": "In", "values": [node] } ] } ] }
            },
            "devices": entries
        }
    });
    serde_json::from_value(object).unwrap_or_else(|e| panic!("fixture claim: {e}"))
}

/// A status.devices entry of `driver` with `conditions` and `data`.
pub fn entry(driver: &str, device: &str, conditions: Value, data: Option<Value>) -> Value {
    let mut e = json!({ "driver": driver, "pool": "node-1", "device": device,
                        "conditions": conditions });
    if let Some(data) = data {
        e["data"] = data;
    }
    e
}

/// A condition as the plugin writes it.
pub fn condition(type_: &str, status: &str, reason: &str, at: &str) -> Value {
    json!({ "type": type_, "status": status, "reason": reason,
            "lastTransitionTime": at, "message": "" })
}

/// Ready, and Idle with `idle` status since `at`.
pub fn ready_idle(idle: &str, at: &str) -> Vec<Value> {
    let reason = match idle {
        "True" => "NoGpuActivity",
        "False" => "Active",
        _ => "SamplingOff",
    };
    vec![
        condition("Ready", "True", "Prepared", "2026-09-01T08:00:00Z"),
        condition("Idle", idle, reason, at),
    ]
}

/// DeviceUsage v1alpha1 data on `node` with `sharing`, `extra` merged in.
pub fn usage(node: &str, sharing: &str, extra: Value) -> Value {
    let mut data = json!({
        "apiVersion": "gpuslice.dev/v1alpha1", "kind": "DeviceUsage", "node": node,
        "sharing": sharing, "sampledAt": "2026-09-01T11:59:55Z", "windowSeconds": 300,
    });
    if let (Some(data), Value::Object(extra)) = (data.as_object_mut(), extra) {
        data.extend(extra);
    }
    data
}

/// `ml/train` on node-1: gpu-0, Idle since 09:30, with usage `data`.
pub fn idle_train(data: Value) -> ResourceClaim {
    let conditions = json!(ready_idle("True", "2026-09-01T09:30:00Z"));
    claim(
        "ml",
        "train",
        "node-1",
        vec![entry(DRIVER, "gpu-0", conditions, Some(data))],
    )
}
