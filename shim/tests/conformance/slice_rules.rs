//! The resource.k8s.io/v1 rules a node-local ResourceSlice written by the
//! shim must satisfy, checked independently of the shim's own code: names,
//! nodeName, the owner reference to the Node, the pool, devices per slice,
//! attributes plus capacities per device, and attribute value kinds.

use serde_json::{Value, json};

/// The resource.k8s.io/v1 rules a node-local slice must satisfy.
pub fn check_slice(slice: &Value, name: &str, node: &(String, String)) -> Result<(), String> {
    let spec = &slice["spec"];
    if !is_dns_subdomain(name) {
        return Err(format!("name {name:?} is not a DNS subdomain"));
    }
    if spec["nodeName"] != json!(node.0) {
        return Err(format!(
            "spec.nodeName is {}, not {}",
            spec["nodeName"], node.0
        ));
    }
    let owners = slice["metadata"]["ownerReferences"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if !owners.iter().any(|o| {
        o["kind"] == "Node"
            && o["apiVersion"] == "v1"
            && o["name"] == json!(node.0)
            && o["uid"] == json!(node.1)
    }) {
        return Err("no owner reference to the Node".to_owned());
    }
    if !spec["driver"]
        .as_str()
        .is_some_and(|d| d.len() <= 63 && is_dns_subdomain(d))
    {
        return Err("spec.driver is not a DNS subdomain of at most 63".to_owned());
    }
    let pool = &spec["pool"];
    if !pool["name"].as_str().is_some_and(is_dns_subdomain) || pool["generation"].as_i64().is_none()
    {
        return Err("pool name or generation missing".to_owned());
    }
    if pool["resourceSliceCount"].as_i64().is_none_or(|c| c < 1) {
        return Err("pool.resourceSliceCount must be at least 1".to_owned());
    }
    let devices = spec["devices"].as_array().cloned().unwrap_or_default();
    if !devices.is_empty() && !spec["sharedCounters"].is_null() {
        return Err("devices and sharedCounters in one slice".to_owned());
    }
    let limited = devices
        .iter()
        .any(|d| !d["consumesCounters"].is_null() || !d["taints"].is_null());
    let limit = if limited { 64 } else { 128 };
    if devices.len() > limit {
        return Err(format!("{} devices, at most {limit}", devices.len()));
    }
    for device in &devices {
        let dname = device["name"].as_str().unwrap_or_default();
        if !is_dns_label(dname) {
            return Err(format!("device name {dname:?} is not a DNS label"));
        }
        let attributes = device["attributes"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        let capacity = device["capacity"].as_object().cloned().unwrap_or_default();
        if attributes.len() + capacity.len() > 32 {
            return Err(format!(
                "device {dname}: more than 32 attributes and capacities"
            ));
        }
        for (key, value) in &attributes {
            let kinds = ["string", "int", "bool", "version"]
                .iter()
                .filter(|k| !value[**k].is_null())
                .count();
            if kinds != 1 {
                return Err(format!(
                    "device {dname}: attribute {key} has {kinds} values"
                ));
            }
            if value["string"].as_str().is_some_and(|s| s.len() > 64) {
                return Err(format!("device {dname}: attribute {key} longer than 64"));
            }
        }
    }
    Ok(())
}

pub fn is_dns_label(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

fn is_dns_subdomain(name: &str) -> bool {
    name.len() <= 253 && name.split('.').all(is_dns_label)
}
