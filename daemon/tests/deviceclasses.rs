//! The packaged DeviceClasses (packaging/deviceclasses/, its
//! extended-resources/ folder included) as Kubernetes would take them:
//!
//! - every document is valid for the strict resource.k8s.io/v1 DeviceClass
//!   schema of Kubernetes 1.34, 1.35, 1.36 and 1.37 (third_party/kubernetes,
//!   see its SOURCE), so `kubectl apply` accepts it on each;
//! - every `spec.extendedResourceName` passes the API server's own check
//!   (`IsExtendedResourceName` of k8s.io/kubernetes pkg/apis/core/v1/helper,
//!   which `validateDeviceClassSpec` applies): a qualified name outside the
//!   kubernetes.io namespace, no `requests.` prefix, and still a qualified
//!   name with `requests.` in front (the quota form);
//! - no two classes claim one name (the scheduler would pick only one), and
//!   only the opt-in extended-resources/ folder claims any;
//! - the names are the ones NVIDIA's device plugin gives under its "mixed"
//!   MIG strategy (k8s-device-plugin internal/rm/rm.go at 014b4ecd:
//!   `strings.ReplaceAll("mig-"+profile, "+", ".")`), one class for every
//!   MIG profile of every model the simulator knows, plus nvidia.com/gpu.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use gpuslice::gpu::sim::SimModel;
use jsonschema::{Registry, Resource};
use serde::Deserialize;
use serde_json::{Value, json};

const VERSIONS: [&str; 4] = ["v1.34", "v1.35", "v1.36", "v1.37"];
const DEFINITIONS_URI: &str = "https://kubernetes.io/api/_definitions.json";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The strict DeviceClass schema of one Kubernetes version.
fn validator(version: &str) -> jsonschema::Validator {
    let dir = repo().join("third_party/kubernetes");
    let load = |name: String| -> Value {
        serde_json::from_str(&read(&dir.join(name))).expect("vendored schema is JSON")
    };
    let schema = load(format!("{version}-deviceclass-resource-v1.json"));
    let definitions = load(format!("{version}-definitions.json"));
    let registry = Registry::new()
        .add(DEFINITIONS_URI, Resource::from_contents(definitions))
        .expect("register the definitions")
        .prepare()
        .expect("prepare the registry");
    jsonschema::options()
        .with_registry(&registry)
        .build(&schema)
        .unwrap_or_else(|e| panic!("{version} DeviceClass schema does not compile: {e}"))
}

fn errors(validator: &jsonschema::Validator, class: &Value) -> Vec<String> {
    validator
        .iter_errors(class)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

/// Every YAML document of the packaged classes, with the file it came from.
fn packaged() -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for folder in [
        "packaging/deviceclasses",
        "packaging/deviceclasses/extended-resources",
    ] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(repo().join(folder))
            .expect("deviceclasses folder")
            .map(|e| e.expect("dir entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
            .collect();
        files.sort();
        for file in files {
            let name = format!(
                "{folder}/{}",
                file.file_name().unwrap_or_default().display()
            );
            for doc in serde_norway::Deserializer::from_str(&read(&file)) {
                let value = Value::deserialize(doc).unwrap_or_else(|e| panic!("{name}: {e}"));
                out.push((name.clone(), value));
            }
        }
    }
    out
}

/// Why `name` is not a valid extended resource name, as the API server
/// decides it (pkg/apis/core/v1/helper `IsExtendedResourceName`).
fn extended_name_problem(name: &str) -> Option<String> {
    if !name.contains('/') {
        return Some("has no domain: unprefixed names are native resources".to_owned());
    }
    if name.contains("kubernetes.io/") {
        return Some("is in the kubernetes.io namespace, which is Kubernetes' own".to_owned());
    }
    if name.starts_with("requests.") {
        return Some("starts with requests., the resource quota prefix".to_owned());
    }
    qualified_name_problem(&format!("requests.{name}"))
}

/// k8s.io/apimachinery `IsQualifiedName`: [DNS-1123 subdomain "/"] name.
fn qualified_name_problem(value: &str) -> Option<String> {
    let (prefix, name) = match value.split('/').collect::<Vec<_>>()[..] {
        [name] => (None, name),
        [prefix, name] => (Some(prefix), name),
        _ => return Some("has more than one /".to_owned()),
    };
    if let Some(prefix) = prefix {
        let label = |l: &str| {
            !l.is_empty()
                && l.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        };
        if prefix.is_empty() || prefix.len() > 253 || !prefix.split('.').all(label) {
            return Some(format!("prefix {prefix:?} is not a DNS-1123 subdomain"));
        }
    }
    let alnum = |c: char| c.is_ascii_alphanumeric();
    let ok = !name.is_empty()
        && name.len() <= 63
        && name.starts_with(alnum)
        && name.ends_with(alnum)
        && name.chars().all(|c| alnum(c) || "-_.".contains(c));
    (!ok).then(|| format!("name part {name:?} is not a qualified name (63 characters at most, alphanumerics, - _ . inside)"))
}

fn extended_name(class: &Value) -> Option<&str> {
    class["spec"]["extendedResourceName"].as_str()
}

#[test]
fn every_packaged_class_is_valid_for_kubernetes_1_34_to_1_37() {
    let classes = packaged();
    assert!(classes.len() > 30, "only {} classes found", classes.len());
    for version in VERSIONS {
        let validator = validator(version);
        for (file, class) in &classes {
            let found = errors(&validator, class);
            assert!(
                found.is_empty(),
                "{file} {}: invalid for {version}: {found:?}",
                class["metadata"]["name"]
            );
        }
    }
}

#[test]
fn the_schema_check_refuses_what_kubernetes_refuses() {
    let good = json!({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
        "metadata": {"name": "x.example.com"},
        "spec": {"extendedResourceName": "example.com/x",
                 "selectors": [{"cel": {"expression": "true"}}]}});
    let typo = json!({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
        "metadata": {"name": "x.example.com"}, "spec": {"extendedResourceNames": "example.com/x"}});
    let old_api = json!({"apiVersion": "resource.k8s.io/v1beta1", "kind": "DeviceClass",
        "metadata": {"name": "x.example.com"}, "spec": {}});
    let bad_selector = json!({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
        "metadata": {"name": "x.example.com"}, "spec": {"selectors": [{"cel": {}}]}});
    for version in VERSIONS {
        let validator = validator(version);
        assert_eq!(errors(&validator, &good), Vec::<String>::new(), "{version}");
        for bad in [&typo, &old_api, &bad_selector] {
            assert!(
                !errors(&validator, bad).is_empty(),
                "{version} accepts {bad}"
            );
        }
    }
}

#[test]
fn extended_resource_names_follow_the_api_servers_rule() {
    for good in [
        "nvidia.com/gpu",
        "nvidia.com/mig-1g.10gb",
        "nvidia.com/mig-1g.10gb.me",
        "example.com/a_b-c.d",
    ] {
        assert_eq!(extended_name_problem(good), None, "{good}");
    }
    let bad = [
        "gpu",
        "kubernetes.io/gpu",
        "deviceclass.resource.kubernetes.io/gpu.nvidia.com",
        "requests.nvidia.com/gpu",
        "nvidia.com/mig-1g.10gb+me",
        "Nvidia.com/gpu",
        "nvidia.com/",
        "nvidia.com/-gpu",
        "a/b/c",
        "nvidia..com/gpu",
    ];
    for name in bad {
        assert!(extended_name_problem(name).is_some(), "{name} passed");
    }
    let long = format!("nvidia.com/{}", "a".repeat(64));
    assert!(extended_name_problem(&long).is_some());
    for (file, class) in packaged() {
        if let Some(name) = extended_name(&class) {
            assert_eq!(extended_name_problem(name), None, "{file}: {name}");
        }
    }
}

#[test]
fn each_name_has_one_class_and_only_the_opt_in_folder_claims_any() {
    let mut owners: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut class_names = BTreeSet::new();
    for (file, class) in packaged() {
        let name = class["metadata"]["name"]
            .as_str()
            .expect("metadata.name")
            .to_owned();
        assert!(class_names.insert(name.clone()), "class {name} twice");
        if let Some(resource) = extended_name(&class) {
            assert!(
                file.starts_with("packaging/deviceclasses/extended-resources/"),
                "{file}: {name} maps {resource} but is outside the opt-in folder"
            );
            owners.entry(resource.to_owned()).or_default().push(name);
        }
    }
    let shared: Vec<_> = owners
        .iter()
        .filter(|(_, classes)| classes.len() > 1)
        .collect();
    assert!(shared.is_empty(), "one name, several classes: {shared:?}");
}

/// The device plugin's resource name for a MIG profile (mixed strategy).
fn device_plugin_name(profile: &str) -> String {
    format!("nvidia.com/mig-{profile}").replace('+', ".")
}

#[test]
fn the_device_plugins_names_are_all_mapped_to_the_right_devices() {
    let classes: BTreeMap<String, Value> = packaged()
        .into_iter()
        .filter_map(|(_, c)| extended_name(&c).map(|n| (n.to_owned(), c.clone())))
        .collect();
    let selector = |resource: &str| -> String {
        let class = classes
            .get(resource)
            .unwrap_or_else(|| panic!("no class maps {resource}"));
        let selectors = class["spec"]["selectors"].as_array().expect("selectors");
        assert_eq!(selectors.len(), 1, "{resource}");
        selectors[0]["cel"]["expression"]
            .as_str()
            .expect("expression")
            .to_owned()
    };
    let ours = "device.driver == 'gpu.nvidia.com'";
    let gpu = selector("nvidia.com/gpu");
    assert_eq!(
        gpu,
        format!("{ours} && device.attributes['gpu.nvidia.com'].type == 'gpu'")
    );
    let mut profiles = BTreeSet::new();
    for model in SimModel::ALL {
        for profile in model.spec().gi_profiles {
            profiles.insert(profile.name);
        }
    }
    assert!(profiles.contains("1g.10gb+me") && profiles.contains("7g.141gb"));
    for profile in &profiles {
        let want = format!(
            "{ours} && device.attributes['gpu.nvidia.com'].type == 'mig' \
             && device.attributes['gpu.nvidia.com'].profile == '{profile}'"
        );
        assert_eq!(selector(&device_plugin_name(profile)), want, "{profile}");
    }
    assert_eq!(
        classes.len(),
        profiles.len() + 1,
        "a class for a profile no model has"
    );
}

#[test]
fn plus_in_a_profile_becomes_a_dot_as_in_the_device_plugin() {
    assert_eq!(
        device_plugin_name("1g.10gb+me"),
        "nvidia.com/mig-1g.10gb.me"
    );
    assert_eq!(device_plugin_name("3g.40gb"), "nvidia.com/mig-3g.40gb");
    assert!(extended_name_problem(&format!("nvidia.com/mig-{}", "1g.10gb+me")).is_some());
}
