//! A claim from a file, whole, as a resource.k8s.io/v1 ResourceClaim: what
//! the allocator judges. A v1beta1 request carries its fields itself
//! (`deviceClassName`, `count`...); v1 puts them under `exactly`, so they
//! move there. Pure.

use k8s_openapi::api::resource::v1::ResourceClaim;
use serde_json::{Map, Value};

use super::InputError;

/// The fields of a v1beta1 request that v1 keeps under `exactly`.
const EXACT_FIELDS: [&str; 7] = [
    "deviceClassName",
    "selectors",
    "allocationMode",
    "count",
    "adminAccess",
    "tolerations",
    "capacity",
];

/// A ResourceClaim, or a template's claim spec, to judge whole.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimDoc {
    /// "claim train", "template mig-pair".
    pub label: String,
    /// "ResourceClaim" or "ResourceClaimTemplate".
    pub kind: &'static str,
    /// The claim (a template's spec under the template's name).
    pub claim: ResourceClaim,
}

/// A v1beta1 request in the v1 shape.
fn as_v1(request: &Value) -> Value {
    let Some(fields) = request.as_object() else {
        return request.clone();
    };
    if fields.contains_key("exactly") || fields.contains_key("firstAvailable") {
        return request.clone();
    }
    let (exact, rest): (Map<String, Value>, Map<String, Value>) = fields
        .clone()
        .into_iter()
        .partition(|(k, _)| EXACT_FIELDS.contains(&k.as_str()));
    let mut out = rest;
    if !exact.is_empty() {
        out.insert("exactly".to_owned(), Value::Object(exact));
    }
    Value::Object(out)
}

impl ClaimDoc {
    /// A ResourceClaim (`template` false) or ResourceClaimTemplate: the
    /// document, and the claim spec in it.
    pub fn new(template: bool, document: &Value, spec: &Value) -> Result<Self, InputError> {
        let metadata = &document["metadata"];
        let name = metadata["name"].as_str().unwrap_or("(unnamed)");
        let (word, kind) = if template {
            ("template", "ResourceClaimTemplate")
        } else {
            ("claim", "ResourceClaim")
        };
        let label = format!("{word} {name}");
        let mut spec = spec.clone();
        if let Some(requests) = spec
            .pointer_mut("/devices/requests")
            .and_then(Value::as_array_mut)
        {
            for request in requests {
                *request = as_v1(request);
            }
        }
        let mut meta = Map::new();
        meta.insert("name".to_owned(), Value::from(name));
        if let Some(ns) = metadata["namespace"].as_str() {
            meta.insert("namespace".to_owned(), Value::from(ns));
        }
        let object = serde_json::json!({ "metadata": meta, "spec": spec });
        let claim = serde_json::from_value(object).map_err(|e| InputError::Claim {
            label: label.clone(),
            message: format!("not a resource.k8s.io/v1 claim spec: {e}"),
        })?;
        Ok(Self { label, kind, claim })
    }
}
