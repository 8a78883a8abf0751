//! Every CDI spec the daemon writes is checked against the published CDI JSON
//! schema vendored in third_party/cdi (cdi-schema.json, which `$ref`s defs.json),
//! the independent definition of what a runtime expects, and loaded by the
//! reference Go CDI library (`go_cdi`), which is what runtimes really run.

use std::path::{Path, PathBuf};

use jsonschema::{Registry, Resource};
use serde_json::Value;

/// The reference folder: GPUSLICE_REFERENCE_DIR, else the repository's
/// vendored third_party/cdi.
fn reference_dir() -> PathBuf {
    std::env::var_os("GPUSLICE_REFERENCE_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../third_party/cdi"),
        PathBuf::from,
    )
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read(path).unwrap_or_else(|e| {
        panic!(
            "cannot read {} ({e}); the CDI schema is vendored in third_party/cdi (or set \
             GPUSLICE_REFERENCE_DIR to a folder that holds cdi-schema.json and cdi-defs.json)",
            path.display()
        )
    });
    serde_json::from_slice(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// The CDI schema, compiled once: for callers that check many specs (the
/// load test checks every prepared claim's spec many times a second).
pub struct SchemaCheck {
    validator: jsonschema::Validator,
}

impl SchemaCheck {
    /// Reads and compiles the reference schema.
    pub fn new() -> Self {
        let dir = reference_dir();
        let schema = read_json(&dir.join("cdi-schema.json"));
        let defs = read_json(&dir.join("cdi-defs.json"));
        let registry = Registry::new()
            .add("file:///cdi/defs.json", Resource::from_contents(defs))
            .expect("register defs.json")
            .prepare()
            .expect("prepare registry");
        let validator = jsonschema::options()
            .with_base_uri("file:///cdi/schema.json")
            .with_registry(&registry)
            .build(&schema)
            .expect("compile the CDI schema");
        Self { validator }
    }

    /// Schema errors of `spec`, empty when it is valid.
    pub fn errors(&self, spec: &Value) -> Vec<String> {
        self.validator
            .iter_errors(spec)
            .map(|e| e.to_string())
            .collect()
    }
}

/// Schema errors of `spec`, empty when it is valid.
pub fn schema_errors(spec: &Value) -> Vec<String> {
    SchemaCheck::new().errors(spec)
}

/// Asserts every *.json spec in `dir` is valid for the schema and the Go CDI
/// library (loaded, and injected into an OCI spec, which checks that every
/// device node's hostPath is a real device), and that there is at least one.
pub fn assert_all_valid(dir: &Path) -> usize {
    let mut checked = 0;
    let mut files = Vec::new();
    for name in super::harness::list(dir) {
        if !name.ends_with(".json") || name.starts_with('.') {
            continue;
        }
        let spec = read_json(&dir.join(&name));
        let errors = schema_errors(&spec);
        assert!(
            errors.is_empty(),
            "{name} violates the CDI schema: {errors:?}"
        );
        checked += 1;
        files.push(dir.join(&name));
    }
    assert!(checked > 0, "no CDI spec in {} to check", dir.display());
    match super::go_cdi::checker() {
        Ok(checker) => {
            if let Err(report) = super::go_cdi::check(checker, &files, true) {
                panic!(
                    "the Go CDI library refuses a spec in {}: {report}",
                    dir.display()
                );
            }
        }
        Err(why) => super::tools::skip("the Go CDI library check", why),
    }
    checked
}

#[test]
fn the_schema_check_can_fail() {
    let bad = serde_json::json!({ "cdiVersion": "0.5.0", "devices": [] });
    let errors = schema_errors(&bad);
    assert!(errors.iter().any(|e| e.contains("kind")), "{errors:?}");
    let bad_node = serde_json::json!({
        "cdiVersion": "0.5.0", "kind": "k8s.gpuslice.dev/claim",
        "devices": [{ "name": "d", "containerEdits": { "deviceNodes": [{ "hostPath": "/dev/null" }] } }]
    });
    assert!(!schema_errors(&bad_node).is_empty());
}
