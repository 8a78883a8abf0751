//! The objects of the cases: a ComputeDomain with status entries, Nodes,
//! membership Leases and the domain's ResourceClaimTemplate, as JSON the
//! API server would hand admission, and the requests that write them with
//! a node's token.

use gpuslice_compute_domain::api::ComputeDomain;
use gpuslice_compute_domain::template::workload_template;
use serde_json::{Value, json};

use crate::runner::{Operation, Request, Resource, UserInfo};

/// The domain's uid and namespace in every case.
pub const DOMAIN_UID: &str = "7d3c1a52-0b7e-4f4c-9f6e-2a1d5e8c9b10";
pub const NAMESPACE: &str = "team-a";
/// The plugin's namespace, where membership Leases live.
pub const SYSTEM: &str = "gpuslice-system";

/// One `status.nodes` entry.
pub fn entry(name: &str, ip: &str, index: i64, ready: bool) -> Value {
    json!({
        "name": name,
        "ipAddress": ip,
        "cliqueID": "9b2f.1",
        "index": index,
        "status": if ready { "Ready" } else { "NotReady" },
    })
}

/// The ComputeDomain `numNodes` with `entries` and `status`, as stored
/// (spec, metadata with uid; the CRD's defaults applied).
pub fn domain(num_nodes: i64, status: &str, entries: Vec<Value>) -> Value {
    json!({
        "apiVersion": "resource.nvidia.com/v1beta1",
        "kind": "ComputeDomain",
        "metadata": {
            "name": "training",
            "namespace": NAMESPACE,
            "uid": DOMAIN_UID,
            "resourceVersion": "41",
            "generation": 1,
        },
        "spec": {
            "numNodes": num_nodes,
            "channel": {
                "resourceClaimTemplate": {"name": "training-channel"},
                "allocationMode": "Single",
            },
        },
        "status": {"status": status, "nodes": entries},
    })
}

/// A Node as the API server holds it.
pub fn node(name: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "uid": format!("uid-of-node-{name}")},
    })
}

/// A Node of about the size a kubelet keeps it (labels, annotations,
/// conditions, addresses and 50 images): what a policy with paramKind Node
/// is handed per Node.
pub fn kubelet_node(name: &str) -> Value {
    let labels: serde_json::Map<String, Value> = (0..30)
        .map(|i| {
            (
                format!("label-{i}.example.com/key"),
                json!(format!("value-{i}")),
            )
        })
        .collect();
    let annotations: serde_json::Map<String, Value> = (0..10)
        .map(|i| {
            (
                format!("annotation-{i}.example.com/key"),
                json!("v".repeat(40)),
            )
        })
        .collect();
    let conditions: Vec<Value> = ["MemoryPressure", "DiskPressure", "PIDPressure", "Ready"]
        .iter()
        .map(|kind| {
            json!({"type": kind, "status": "False", "reason": kind, "message": "m".repeat(60),
                   "lastHeartbeatTime": "2026-01-01T00:00:00Z", "lastTransitionTime": "2026-01-01T00:00:00Z"})
        })
        .collect();
    let images: Vec<Value> = (0..50)
        .map(|i| {
            json!({"names": [format!("registry.example.com/team/image-{i}@sha256:{}", "a".repeat(64)),
                             format!("registry.example.com/team/image-{i}:v1")],
                   "sizeBytes": 123_456_789})
        })
        .collect();
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "uid": format!("uid-of-node-{name}"), "labels": labels, "annotations": annotations},
        "spec": {"podCIDR": "10.244.1.0/24", "providerID": format!("aws:///us-east-1a/{name}")},
        "status": {
            "capacity": {"cpu": "144", "memory": "1Ti", "pods": "110"},
            "allocatable": {"cpu": "143", "memory": "1000Gi", "pods": "110"},
            "conditions": conditions,
            "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}, {"type": "Hostname", "address": name}],
            "images": images,
        },
    })
}

/// Nodes named `names`.
pub fn nodes(names: &[&str]) -> Vec<Value> {
    names.iter().map(|name| node(name)).collect()
}

/// `caller`'s write of the domain's status from `old` to `new`, while the
/// cluster holds `cluster` Nodes.
pub fn status_write(caller: &UserInfo, old: Value, new: Value, cluster: &[&str]) -> Request {
    Request {
        operation: Operation::Update,
        resource: Resource::compute_domains(),
        sub_resource: "status".to_owned(),
        namespace: NAMESPACE.to_owned(),
        name: "training".to_owned(),
        object: Some(new),
        old_object: Some(old),
        user_info: caller.clone(),
        nodes: nodes(cluster),
        dry_run: false,
    }
}

/// The membership Lease of `node` in the domain, as the plugin makes it.
pub fn lease(node: &str) -> Value {
    json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {
            "name": format!("{DOMAIN_UID}.{node}"),
            "namespace": SYSTEM,
            "labels": {
                "gpuslice.dev/compute-domain": DOMAIN_UID,
                "gpuslice.dev/node": node,
            },
            "ownerReferences": [{
                "apiVersion": "v1",
                "kind": "Node",
                "name": node,
                "uid": format!("uid-of-node-{node}"),
            }],
        },
        "spec": {"holderIdentity": node},
    })
}

/// `caller`'s `operation` on `lease` (CREATE and UPDATE write it, DELETE
/// deletes it; an UPDATE's old object is `lease` as it is).
pub fn lease_write(caller: &UserInfo, operation: Operation, lease: Value) -> Request {
    let name = lease["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let namespace = lease["metadata"]["namespace"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let (object, old_object) = match operation {
        Operation::Create => (Some(lease), None),
        Operation::Update => (Some(lease.clone()), Some(lease)),
        Operation::Delete => (None, Some(lease)),
    };
    Request {
        operation,
        resource: Resource::leases(),
        sub_resource: String::new(),
        namespace,
        name,
        object,
        old_object,
        user_info: caller.clone(),
        nodes: nodes(&["gb200-a", "gb200-b"]),
        dry_run: false,
    }
}

/// The domain's workload template in the shape the plugin creates: what
/// `gpuslice_compute_domain::template::workload_template` makes, with an
/// ownerReference to the domain (controller) and no finalizer (the garbage
/// collector removes it with the domain).
pub fn template() -> Value {
    let stored: ComputeDomain =
        serde_json::from_value(domain(0, "NotReady", vec![])).expect("a ComputeDomain");
    let made = workload_template(&stored).expect("the domain makes a template");
    let mut template = serde_json::to_value(made).expect("a template serializes");
    template["apiVersion"] = json!("resource.k8s.io/v1");
    template["kind"] = json!("ResourceClaimTemplate");
    let metadata = &mut template["metadata"];
    if let Some(metadata) = metadata.as_object_mut() {
        metadata.remove("finalizers");
    }
    metadata["ownerReferences"] = json!([{
        "apiVersion": "resource.nvidia.com/v1beta1",
        "kind": "ComputeDomain",
        "name": "training",
        "uid": DOMAIN_UID,
        "controller": true,
    }]);
    template
}

/// `caller`'s create of `template`.
pub fn template_create(caller: &UserInfo, template: Value) -> Request {
    Request {
        operation: Operation::Create,
        resource: Resource::resource_claim_templates(),
        sub_resource: String::new(),
        namespace: NAMESPACE.to_owned(),
        name: template["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        object: Some(template),
        old_object: None,
        user_info: caller.clone(),
        nodes: nodes(&["gb200-a"]),
        dry_run: false,
    }
}
