//! The resource.k8s.io/v1 rules a node-local ResourceSlice written by the
//! shim must satisfy, checked independently of the shim's own code: names,
//! nodeName, the owner reference to the Node, the pool, devices per slice,
//! attributes plus capacities per device, their qualified names
//! (`validateQualifiedName` of pkg/apis/resource/validation: a C identifier
//! of at most 32, optionally after a domain, a DNS subdomain of at most 63,
//! and "/", as in `resource.kubernetes.io/pcieRoot`), attribute value kinds,
//! and (DRAConsumableCapacity) `allowMultipleAllocations` and capacity
//! `requestPolicy` as the API documents them; then the strict ResourceSlice
//! schema of every vendored Kubernetes version ([`crate::k8s_schema`]).

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
        for key in attributes.keys().chain(capacity.keys()) {
            if !is_qualified_name(key) {
                return Err(format!(
                    "device {dname}: {key:?} is not a qualified name ([domain/]C identifier)"
                ));
            }
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
        let multiple = &device["allowMultipleAllocations"];
        if !multiple.is_null() && !multiple.is_boolean() {
            return Err(format!(
                "device {dname}: allowMultipleAllocations is not a bool"
            ));
        }
        for (key, capacity) in &capacity {
            check_request_policy(capacity)
                .map_err(|why| format!("device {dname}: capacity {key}: {why}"))?;
        }
    }
    let schema_errors = crate::k8s_schema::errors("ResourceSlice", slice);
    if !schema_errors.is_empty() {
        return Err(schema_errors.join("; "));
    }
    Ok(())
}

/// `validateQualifiedName`: `[domain/]name`, the name a C identifier of at
/// most 32 characters, the domain a DNS subdomain of at most 63.
fn is_qualified_name(key: &str) -> bool {
    let is_c_identifier = |name: &str| {
        let mut chars = name.chars();
        name.len() <= 32
            && chars
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    match key.split_once('/') {
        None => is_c_identifier(key),
        Some((domain, name)) => {
            domain.len() <= 63 && is_dns_subdomain(domain) && is_c_identifier(name)
        }
    }
}

/// CapacityRequestPolicy: at most one of validRange and validValues, each
/// with a default inside it; min ≤ default ≤ max ≤ the capacity; default and
/// max multiples of step; min + step within the capacity; validValues at most
/// 10, ascending, holding the default.
fn check_request_policy(capacity: &Value) -> Result<(), String> {
    let policy = &capacity["requestPolicy"];
    if policy.is_null() {
        return Ok(());
    }
    let value = quantity(&capacity["value"]).ok_or("value is not a quantity")?;
    let range = &policy["validRange"];
    let values = &policy["validValues"];
    if !range.is_null() && !values.is_null() {
        return Err("both validRange and validValues".to_owned());
    }
    let default = match &policy["default"] {
        Value::Null if range.is_null() && values.is_null() => return Ok(()),
        Value::Null => return Err("a valid range or values need a default".to_owned()),
        q => quantity(q).ok_or("default is not a quantity")?,
    };
    if default > value {
        return Err(format!(
            "default {default} is more than the capacity {value}"
        ));
    }
    if !range.is_null() {
        let min = quantity(&range["min"]).ok_or("validRange.min is not a quantity")?;
        let max = match &range["max"] {
            Value::Null => None,
            q => Some(quantity(q).ok_or("validRange.max is not a quantity")?),
        };
        let step = match &range["step"] {
            Value::Null => None,
            q => Some(quantity(q).ok_or("validRange.step is not a quantity")?),
        };
        if min < 0 || min > value || default < min {
            return Err(format!(
                "min {min} must be within 0..={value} and at most the default {default}"
            ));
        }
        if let Some(max) = max
            && (max > value || max < min || default > max)
        {
            return Err(format!(
                "max {max} must be within min..=capacity and at least the default"
            ));
        }
        if let Some(step) = step {
            if step <= 0 || default % step != 0 || max.is_some_and(|m| m % step != 0) {
                return Err(format!("default and max must be multiples of step {step}"));
            }
            if min + step > value {
                return Err(format!("min + step is more than the capacity {value}"));
            }
        }
    }
    if let Some(list) = values.as_array() {
        let list: Vec<i128> = list.iter().filter_map(quantity).collect();
        if list.len() > 10 || list.windows(2).any(|w| w[0] >= w[1]) || !list.contains(&default) {
            return Err("validValues: at most 10, ascending, holding the default".to_owned());
        }
    }
    Ok(())
}

/// A quantity string as written in canonical form ("80Gi", "2k", "132").
fn quantity(value: &Value) -> Option<i128> {
    let text = value.as_str()?;
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '-'))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let number: i128 = number.parse().ok()?;
    let scale: i128 = match suffix {
        "" => 1,
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        "Ti" => 1 << 40,
        "Pi" => 1 << 50,
        "Ei" => 1 << 60,
        "k" => 1_000,
        "M" => 1_000_000,
        "G" => 1_000_000_000,
        "T" => 1_000_000_000_000,
        "P" => 1_000_000_000_000_000,
        "E" => 1_000_000_000_000_000_000,
        _ => return None,
    };
    number.checked_mul(scale)
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

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::check_slice;
    use crate::{NODE, NODE_UID};

    /// One way to break a slice.
    type Mutation<'a> = Box<dyn Fn(&mut Value) + 'a>;

    /// The checker itself refuses what the API server refuses (so a passing
    /// conformance run means something).
    #[test]
    #[allow(clippy::too_many_lines, reason = "one scenario, read top to bottom")]
    fn slice_rules_refuse_what_the_api_refuses() {
        let node = (NODE.to_owned(), NODE_UID.to_owned());
        let device = |i: usize| {
            json!({"name": format!("gpu-{i}"), "attributes": {"type": {"string": "gpu"},
                       "resource.kubernetes.io/numaNode": {"int": 1}},
                   "allowMultipleAllocations": true,
                   "capacity": {"memory": {"value": "80Gi", "requestPolicy":
                       {"default": "80Gi", "validRange": {"min": "1Mi", "step": "1Mi"}}}}})
        };
        let good = json!({
            "metadata": {"ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": NODE, "uid": NODE_UID}]},
            "spec": {"driver": "gpu.nvidia.com", "nodeName": NODE,
                     "pool": {"name": NODE, "generation": 1, "resourceSliceCount": 1},
                     "devices": (0..128).map(device).collect::<Vec<_>>()}});
        check_slice(&good, "node-1-gpu.nvidia.com-abcde", &node).expect("a good slice passes");
        let broken: Vec<(&str, Mutation<'_>)> = vec![
            (
                "129 devices",
                Box::new(|s| {
                    s["spec"]["devices"]
                        .as_array_mut()
                        .expect("devices")
                        .push(device(128))
                }),
            ),
            (
                "device name",
                Box::new(|s| s["spec"]["devices"][0]["name"] = json!("GPU_0")),
            ),
            (
                "nodeName",
                Box::new(|s| s["spec"]["nodeName"] = json!("other")),
            ),
            (
                "owner",
                Box::new(|s| s["metadata"]["ownerReferences"] = json!([])),
            ),
            (
                "count",
                Box::new(|s| s["spec"]["pool"]["resourceSliceCount"] = json!(0)),
            ),
            (
                "mixed",
                Box::new(|s| s["spec"]["sharedCounters"] = json!([{"name": "c", "counters": {}}])),
            ),
            (
                "two kinds",
                Box::new(|s| s["spec"]["devices"][0]["attributes"]["type"]["int"] = json!(1)),
            ),
            (
                "33 keys",
                Box::new(|s| {
                    let caps: serde_json::Map<String, Value> = (0..32)
                        .map(|i| (format!("c{i}"), json!({"value": "1"})))
                        .collect();
                    s["spec"]["devices"][0]["capacity"] = Value::Object(caps);
                }),
            ),
            (
                "attribute name with a dash",
                Box::new(|s| {
                    s["spec"]["devices"][0]["attributes"]["numa-node"] = json!({"int": 1})
                }),
            ),
            (
                "attribute domain not a DNS subdomain",
                Box::new(|s| {
                    s["spec"]["devices"][0]["attributes"]["Resource.Kubernetes.io/numaNode"] =
                        json!({"int": 1})
                }),
            ),
            (
                "capacity name of 33 characters",
                Box::new(|s| {
                    s["spec"]["devices"][0]["capacity"]["m".repeat(33)] = json!({"value": "1"})
                }),
            ),
            (
                "a field no version knows (the schemas)",
                Box::new(|s| s["spec"]["devices"][0]["colour"] = json!("blue")),
            ),
            (
                "allowMultipleAllocations not a bool",
                Box::new(|s| s["spec"]["devices"][0]["allowMultipleAllocations"] = json!("yes")),
            ),
            (
                "default over the capacity",
                Box::new(|s| {
                    s["spec"]["devices"][0]["capacity"]["memory"]["requestPolicy"]["default"] =
                        json!("81Gi")
                }),
            ),
            (
                "default not a multiple of step",
                Box::new(|s| {
                    s["spec"]["devices"][0]["capacity"]["memory"]["requestPolicy"]["default"] =
                        json!("1025Ki")
                }),
            ),
            (
                "range without a default",
                Box::new(|s| {
                    s["spec"]["devices"][0]["capacity"]["memory"]["requestPolicy"]["default"] =
                        Value::Null
                }),
            ),
            (
                "range and values",
                Box::new(|s| {
                    s["spec"]["devices"][0]["capacity"]["memory"]["requestPolicy"]["validValues"] =
                        json!(["80Gi"])
                }),
            ),
        ];
        for (what, mutate) in broken {
            let mut slice = good.clone();
            mutate(&mut slice);
            assert!(
                check_slice(&slice, "node-1-gpu.nvidia.com-abcde", &node).is_err(),
                "{what} must be refused"
            );
        }
        assert!(check_slice(&good, "Bad_Name", &node).is_err());
    }
}
