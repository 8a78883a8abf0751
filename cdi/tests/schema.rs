//! Conformance: specs built with the model, serialised by `to_json`, pass the
//! CDI project's own JSON schema (`third_party/cdi/cdi-schema.json`, which
//! `$ref`s `defs.json`, vendored unchanged: see `third_party/cdi/SOURCE`). The schema is weak (it mostly checks required keys),
//! so it is a floor; `validate` is the stricter check.
//!
//! The reference directory is `$GPUSLICE_REFERENCE_DIR`, or else the vendored
//! `third_party/cdi`; when the schema is missing there the test fails.

use std::path::PathBuf;

use gpuslice_cdi::{
    ContainerEdits, Device, DeviceNode, Hook, Mount, Spec, finalize, minimum_version, to_json,
};
use jsonschema::{Draft, Registry, Validator};
use serde_json::{Value, json};

/// Where the schema's relative `$ref: "defs.json#..."` resolves to.
const BASE: &str = "https://cdi.invalid/schema/schema.json";
const DEFS: &str = "https://cdi.invalid/schema/defs.json";

fn reference_dir() -> PathBuf {
    let dir = std::env::var_os("GPUSLICE_REFERENCE_DIR").map_or_else(
        || PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../third_party/cdi")),
        PathBuf::from,
    );
    assert!(
        dir.join("cdi-schema.json").is_file() && dir.join("cdi-defs.json").is_file(),
        "CDI schema reference not found: looked for cdi-schema.json and cdi-defs.json in {} \
         (set GPUSLICE_REFERENCE_DIR to the directory that holds them)",
        dir.display()
    );
    dir
}

fn load(name: &str) -> Value {
    let path = reference_dir().join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|err| panic!("read {}: {err}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|err| panic!("parse {}: {err}", path.display()))
}

fn validator() -> Validator {
    let defs = Draft::Draft7.create_resource(load("cdi-defs.json"));
    let registry = Registry::new()
        .add(DEFS, defs)
        .expect("defs uri")
        .prepare()
        .expect("registry");
    jsonschema::options()
        .with_draft(Draft::Draft7)
        .with_base_uri(BASE)
        .with_registry(&registry)
        .build(&load("cdi-schema.json"))
        .expect("build schema validator")
}

fn errors(validator: &Validator, instance: &Value) -> Vec<String> {
    validator
        .iter_errors(instance)
        .map(|e| e.to_string())
        .collect()
}

fn env(entries: &[&str]) -> ContainerEdits {
    ContainerEdits {
        env: entries.iter().map(|e| (*e).to_owned()).collect(),
        ..ContainerEdits::default()
    }
}

fn spec(devices: Vec<Device>, container_edits: ContainerEdits) -> Spec {
    let mut spec = Spec {
        cdi_version: String::new(),
        kind: "k8s.gpuslice.dev/claim".to_owned(),
        devices,
        container_edits,
    };
    finalize(&mut spec);
    spec
}

fn minimal() -> Spec {
    let device = Device {
        name: "gpu0".to_owned(),
        container_edits: env(&["NVIDIA_VISIBLE_DEVICES=0"]),
    };
    spec(vec![device], ContainerEdits::default())
}

fn with_host_path() -> Spec {
    let node = DeviceNode {
        path: "/dev/nvidia0".to_owned(),
        host_path: Some("/dev/nvidia3".to_owned()),
        node_type: Some("c".to_owned()),
        major: Some(195),
        minor: Some(3),
        file_mode: Some(0o666),
        permissions: Some("rw".to_owned()),
        uid: Some(0),
        gid: Some(44),
    };
    let device = Device {
        name: "0-mig-1g".to_owned(),
        container_edits: ContainerEdits {
            device_nodes: vec![node],
            ..env(&["A=1"])
        },
    };
    spec(vec![device], ContainerEdits::default())
}

fn with_hooks_and_mounts() -> Spec {
    let hook = Hook {
        hook_name: "createContainer".to_owned(),
        path: "/usr/bin/nvidia-cdi-hook".to_owned(),
        args: vec!["nvidia-cdi-hook".to_owned(), "update-ldcache".to_owned()],
        env: vec!["DEBUG=1".to_owned()],
        timeout: Some(30),
    };
    let mount = Mount {
        host_path: "/run/gpuslice/mps/gpu0".to_owned(),
        container_path: "/run/nvidia/mps".to_owned(),
        options: vec!["rw".to_owned(), "nosuid".to_owned(), "bind".to_owned()],
        mount_type: Some("bind".to_owned()),
    };
    let devices = ["a", "b"]
        .into_iter()
        .map(|name| Device {
            name: format!("claim-{name}"),
            container_edits: env(&[&format!("SLICE={name}")]),
        })
        .collect();
    let shared = ContainerEdits {
        hooks: vec![hook],
        mounts: vec![mount],
        ..env(&["CUDA_MPS_PIPE_DIRECTORY=/run/nvidia/mps"])
    };
    spec(devices, shared)
}

#[test]
fn model_specs_pass_the_cdi_schema() {
    let validator = validator();
    let cases = [
        ("minimal", minimal(), "0.3.0"),
        ("with hostPath", with_host_path(), "0.5.0"),
        ("with hooks and mounts", with_hooks_and_mounts(), "0.4.0"),
    ];
    for (what, spec, version) in cases {
        assert_eq!(minimum_version(&spec).as_str(), version, "{what}");
        let bytes = to_json(&spec).unwrap_or_else(|err| panic!("{what}: {err}"));
        let instance: Value = serde_json::from_slice(&bytes).expect("to_json output is JSON");
        assert_eq!(instance["cdiVersion"], version, "{what}");
        assert_eq!(
            errors(&validator, &instance),
            Vec::<String>::new(),
            "{what}"
        );
    }
}

#[test]
fn the_schema_rejects_a_spec_without_kind() {
    let validator = validator();
    let mut instance = serde_json::to_value(minimal()).expect("serialise");
    assert!(
        validator.is_valid(&instance),
        "the minimal spec must pass first"
    );
    instance
        .as_object_mut()
        .expect("spec is an object")
        .remove("kind");
    let errors = errors(&validator, &instance);
    assert!(
        errors.iter().any(|e| e.contains("kind")),
        "expected a missing-kind error, got {errors:?}"
    );
}

#[test]
fn the_schema_checks_refs_into_defs() {
    // deviceNodes[].path is required only through defs.json, so this fails
    // only if the $ref into the registered defs resource resolves.
    let validator = validator();
    let instance = json!({
        "cdiVersion": "0.3.0",
        "kind": "k8s.gpuslice.dev/claim",
        "devices": [{"name": "gpu0", "containerEdits": {"deviceNodes": [{"type": "c"}]}}]
    });
    let errors = errors(&validator, &instance);
    assert!(
        errors.iter().any(|e| e.contains("path")),
        "expected a missing-path error, got {errors:?}"
    );
}
