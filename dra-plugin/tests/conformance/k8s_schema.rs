//! The strict resource.k8s.io/v1 schemas of every Kubernetes version
//! vendored in third_party/kubernetes (kubernetes-validate's, generated from
//! each release's OpenAPI; see its SOURCE), compiled once per test process:
//! what an API server of that version refuses by shape (unknown fields,
//! wrong types, missing required fields). The fake API server checks every
//! ResourceSlice the plugin writes against each; `extended_claim` checks the
//! scheduler-shaped ResourceClaims; `fake_compute_domains` the ResourceClaimTemplates
//! the plugins make for ComputeDomains.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use jsonschema::{Registry, Resource, Validator};
use serde_json::{Value, json};

use crate::extended::repo;
use crate::peers::read;

/// The vendored Kubernetes versions.
pub const VERSIONS: [&str; 4] = ["v1.34", "v1.35", "v1.36", "v1.37"];

/// The kinds checked, by their name in the definitions.
const KINDS: [&str; 3] = ["ResourceSlice", "ResourceClaim", "ResourceClaimTemplate"];

const DEFINITIONS_URI: &str = "https://kubernetes.io/api/_definitions.json";

/// Validators by (version, kind).
fn validators() -> &'static BTreeMap<(&'static str, &'static str), Validator> {
    static VALIDATORS: OnceLock<BTreeMap<(&'static str, &'static str), Validator>> =
        OnceLock::new();
    VALIDATORS.get_or_init(|| {
        let dir = repo().join("third_party/kubernetes");
        let mut out = BTreeMap::new();
        for version in VERSIONS {
            let text = read(&dir.join(format!("{version}-definitions.json")));
            let definitions: Value = serde_json::from_str(&text).expect("vendored definitions");
            let registry = Registry::new()
                .add(DEFINITIONS_URI, Resource::from_contents(definitions))
                .expect("register the definitions")
                .prepare()
                .expect("prepare the registry");
            for kind in KINDS {
                let schema = json!({
                    "$ref": format!("{DEFINITIONS_URI}#/$defs/io.k8s.api.resource.v1.{kind}")
                });
                let validator = jsonschema::options()
                    .with_registry(&registry)
                    .build(&schema)
                    .unwrap_or_else(|e| panic!("{version} {kind} schema does not compile: {e}"));
                out.insert((version, kind), validator);
            }
        }
        out
    })
}

/// What each vendored version's schema of `kind` ("ResourceSlice",
/// "ResourceClaim") finds wrong in `object`, one line each, naming the version.
pub fn errors(kind: &str, object: &Value) -> Vec<String> {
    assert!(KINDS.contains(&kind), "no schema for {kind}");
    validators()
        .iter()
        .filter(|((_, k), _)| *k == kind)
        .flat_map(|((version, _), validator)| {
            validator
                .iter_errors(object)
                .map(move |e| format!("{version}: {e} at {}", e.instance_path()))
        })
        .collect()
}

#[test]
fn the_schemas_refuse_an_unknown_field_and_take_a_minimal_slice() {
    let slice = json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"generateName": "node-1-gpu.nvidia.com-"},
        "spec": {"driver": "gpu.nvidia.com", "nodeName": "node-1",
                 "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
                 "devices": [{"name": "gpu-0", "attributes": {
                     "resource.kubernetes.io/numaNode": {"int": 1},
                     "resource.kubernetes.io/pcieRoot": {"string": "pci0000:00"}}}]}});
    assert_eq!(errors("ResourceSlice", &slice), Vec::<String>::new());
    let mut unknown = slice.clone();
    unknown["spec"]["devices"][0]["colour"] = json!("blue");
    assert_eq!(errors("ResourceSlice", &unknown).len(), VERSIONS.len());
}
