//! The strict resource.k8s.io/v1 ResourceClaim schema of every Kubernetes
//! version vendored in third_party/kubernetes (see its SOURCE), compiled
//! once: the test's claims must be what a real API server would store.

use std::path::PathBuf;
use std::sync::OnceLock;

use jsonschema::{Registry, Resource, Validator};
use serde_json::{Value, json};

const VERSIONS: [&str; 4] = ["v1.34", "v1.35", "v1.36", "v1.37"];
const DEFINITIONS_URI: &str = "https://kubernetes.io/api/_definitions.json";

fn validators() -> &'static Vec<(&'static str, Validator)> {
    static VALIDATORS: OnceLock<Vec<(&'static str, Validator)>> = OnceLock::new();
    VALIDATORS.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../third_party/kubernetes");
        VERSIONS
            .iter()
            .map(|version| {
                let path = dir.join(format!("{version}-definitions.json"));
                let text = std::fs::read_to_string(&path)
                    .unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
                let definitions: Value = serde_json::from_str(&text).expect("vendored definitions");
                let registry = Registry::new()
                    .add(DEFINITIONS_URI, Resource::from_contents(definitions))
                    .expect("register the definitions")
                    .prepare()
                    .expect("prepare the registry");
                let schema = json!({
                    "$ref": format!("{DEFINITIONS_URI}#/$defs/io.k8s.api.resource.v1.ResourceClaim")
                });
                let validator = jsonschema::options()
                    .with_registry(&registry)
                    .build(&schema)
                    .unwrap_or_else(|e| panic!("{version} schema does not compile: {e}"));
                (*version, validator)
            })
            .collect()
    })
}

/// What each vendored version finds wrong in the ResourceClaim `claim`.
pub fn errors(claim: &Value) -> Vec<String> {
    validators()
        .iter()
        .flat_map(|(version, validator)| {
            validator
                .iter_errors(claim)
                .map(move |e| format!("{version}: {e} at {}", e.instance_path()))
        })
        .collect()
}
