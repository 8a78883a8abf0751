//! The ResourceClaim the scheduler creates for a pod's extended resources
//! backed by DRA (KEP-5004), as [`crate::extended`] serves it: built the way
//! kubernetes/kubernetes builds it at 16913111deb1a4c4ff76f4ba7ffd9ebef397a303
//! (pkg/scheduler/framework/plugins/dynamicresources/extendeddynamicresources.go,
//! `createRequestsAndMappings` and `preFilterExtendedResources`), for pods of
//! regular containers, and checked against the resource.k8s.io/v1
//! ResourceClaim schema of Kubernetes 1.34-1.37 (third_party/kubernetes,
//! [`crate::k8s_schema`]).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::NODE;

/// The annotation that marks the scheduler's claim for a pod's extended resources.
const ANNOTATION: &str = "resource.kubernetes.io/extended-resource-claim";

/// A container's requests as the API server defaults them: limits
/// copied into requests that are not set.
fn requests(container: &Value) -> BTreeMap<String, Value> {
    let mut out: BTreeMap<String, Value> = BTreeMap::new();
    for field in ["limits", "requests"] {
        if let Some(map) = container["resources"][field].as_object() {
            out.extend(map.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
    }
    out
}

/// The request the scheduler makes for `resource` in a pod of regular
/// containers (no init containers): its name and count, or None.
pub fn request_for(pod: &Value, resource: &str) -> Option<(String, i64)> {
    let containers = pod["spec"]["containers"].as_array()?;
    containers.iter().enumerate().find_map(|(i, c)| {
        let requests = requests(c);
        let count: i64 = requests.get(resource)?.as_str()?.parse().ok()?;
        // BTreeMap keys are sorted, as the scheduler sorts them.
        let j = requests.keys().position(|k| k == resource)?;
        Some((format!("container-{i}-request-{j}"), count))
    })
}

/// The ResourceClaim the scheduler writes for `pod`'s `resource`, allocated
/// `devices` of class `class` on [`NODE`].
pub fn scheduler_claim(
    pod: &Value,
    resource: &str,
    class: &str,
    devices: &[&str],
    uid: &str,
) -> Value {
    let (request, count) = request_for(pod, resource).expect("the pod asks for the resource");
    assert_eq!(usize::try_from(count).ok(), Some(devices.len()));
    let pod_name = pod["metadata"]["name"].as_str().expect("pod name");
    let results: Vec<Value> = devices
        .iter()
        .map(|d| json!({"request": request, "driver": "gpu.nvidia.com", "pool": NODE, "device": d}))
        .collect();
    json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {
            "namespace": pod["metadata"]["namespace"], "uid": uid,
            // generateName plus the API server's five random characters.
            "name": format!("{pod_name}-extended-resources-x7k2q"),
            "generateName": format!("{pod_name}-extended-resources-"),
            "annotations": {ANNOTATION: "true"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": pod_name,
                                 "uid": pod["metadata"]["uid"], "controller": true}],
            "finalizers": ["resource.kubernetes.io/delete-protection"],
        },
        "spec": {"devices": {"requests": [{"name": request, "exactly": {
            "deviceClassName": class, "allocationMode": "ExactCount", "count": count}}]}},
        "status": {
            "allocation": {
                "devices": {"results": results, "config": []},
                "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": [NODE]}]}]},
            },
            "reservedFor": [{"resource": "pods", "name": pod_name, "uid": pod["metadata"]["uid"]}],
        },
    })
}

/// Schema errors of `claim` for each vendored Kubernetes version.
pub fn claim_schema_errors(claim: &Value) -> Vec<String> {
    crate::k8s_schema::errors("ResourceClaim", claim)
}

pub fn pod(name: &str, uid: &str, containers: &Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"namespace": "ml", "name": name, "uid": uid},
           "spec": {"containers": containers}})
}

#[test]
fn the_request_names_are_the_schedulers() {
    let one = pod(
        "a",
        "u",
        &json!([{"name": "a", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]),
    );
    assert_eq!(
        request_for(&one, "nvidia.com/gpu"),
        Some(("container-0-request-0".to_owned(), 1))
    );
    // Requests sort by name: cpu < memory < nvidia.com/...; limits default requests.
    let two = pod(
        "b",
        "u",
        &json!([
        {"name": "log", "resources": {}},
        {"name": "train", "resources": {"requests": {"cpu": "1"},
            "limits": {"memory": "1Gi", "nvidia.com/mig-1g.10gb": "2"}}}]),
    );
    assert_eq!(
        request_for(&two, "nvidia.com/mig-1g.10gb"),
        Some(("container-1-request-2".to_owned(), 2))
    );
    assert_eq!(request_for(&two, "nvidia.com/gpu"), None);
}
