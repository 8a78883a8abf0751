//! The environment against the selectors of the Kubernetes DRA docs and
//! library comments, and NVIDIA's DRA driver docs; each common mistake with
//! its hint; the cost limit; the per-device outcome.

use std::collections::BTreeMap;

use k8s_openapi::api::resource::v1::{Device, DeviceAttribute, DeviceCapacity};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use crate::{Catalog, CompileError, DeviceView, Outcome, Selector, Severity};

enum A {
    S(&'static str),
    V(&'static str),
    I(i64),
    B(bool),
}

/// A device with every attribute type, from another driver.
fn other_driver() -> DeviceView {
    let d = device(
        "dev-0",
        &[
            ("model", A::S("model-a")),
            ("cores", A::I(8)),
            ("oneBool", A::B(true)),
            ("anotherBool", A::B(true)),
            ("driverVersion", A::V("1.2.0")),
        ],
        &[("memory", "64Gi")],
    );
    DeviceView::new(&d, "dra.example.com").unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn kubernetes_docs_examples_on_another_driver() {
    let view = other_driver();
    let catalog = Catalog::new("dra.example.com", std::slice::from_ref(&view));
    for (source, want) in [
        ("device.driver == 'dra.example.com'", true),
        ("device.driver == 'driver.example.com'", false),
        (
            "device.attributes['dra.example.com'].model == 'model-a'",
            true,
        ),
        ("device.attributes['dra.example.com'].cores >= 4", true),
        (
            "cel.bind(dra, device.attributes['dra.example.com'], dra.oneBool && dra.anotherBool)",
            true,
        ),
        (
            "device.attributes['dra.example.com'].driverVersion.isGreaterThan(semver('1.0.0'))",
            true,
        ),
        (
            "device.attributes['dra.example.com'].driverVersion.compareTo(semver('1.2.0')) == 0",
            true,
        ),
        (
            "device.capacity['dra.example.com'].memory.compareTo(quantity('64Gi')) >= 0",
            true,
        ),
        (
            "device.capacity['dra.example.com'].memory.compareTo(quantity('65Gi')) >= 0",
            false,
        ),
    ] {
        let selector =
            Selector::compile(source, &catalog).unwrap_or_else(|e| panic!("{source}: {e}"));
        assert_eq!(selector.evaluate(&view) == Outcome::Match, want, "{source}");
    }
}

fn device(name: &str, attributes: &[(&str, A)], capacity: &[(&str, &str)]) -> Device {
    let attributes = attributes
        .iter()
        .map(|(k, v)| {
            let mut a = DeviceAttribute::default();
            match v {
                A::S(s) => a.string = Some((*s).to_owned()),
                A::V(s) => a.version = Some((*s).to_owned()),
                A::I(n) => a.int = Some(*n),
                A::B(b) => a.bool = Some(*b),
            }
            ((*k).to_owned(), a)
        })
        .collect::<BTreeMap<_, _>>();
    let capacity = capacity
        .iter()
        .map(|(k, v)| {
            let c = DeviceCapacity {
                value: Quantity((*v).to_owned()),
                request_policy: None,
            };
            ((*k).to_owned(), c)
        })
        .collect::<BTreeMap<_, _>>();
    Device {
        name: name.to_owned(),
        attributes: Some(attributes),
        capacity: Some(capacity),
        ..Device::default()
    }
}

/// An H100 and one of an A100's MIG slices, as gpuslice-dra-plugin
/// publishes them (driver gpu.nvidia.com).
fn node() -> Vec<DeviceView> {
    let gpu = device(
        "gpu-0",
        &[
            ("type", A::S("gpu")),
            ("productName", A::S("NVIDIA H100 80GB HBM3")),
            ("architecture", A::S("Hopper")),
            ("cudaComputeCapability", A::V("9.0.0")),
            ("driverVersion", A::V("570.124.6")),
            ("resource.kubernetes.io/pciBusID", A::S("0000:3b:00.0")),
        ],
        &[("memory", "80Gi")],
    );
    let mig = device(
        "gpu-1-mig-1g5gb-0",
        &[
            ("type", A::S("mig")),
            ("productName", A::S("NVIDIA A100-SXM4-40GB")),
            ("profile", A::S("1g.5gb")),
            ("architecture", A::S("Ampere")),
            ("cudaComputeCapability", A::V("8.0.0")),
            ("driverVersion", A::V("570.124.6")),
            ("resource.kubernetes.io/pciBusID", A::S("0000:4c:00.0")),
        ],
        &[("memory", "4864Mi"), ("multiprocessors", "14")],
    );
    [gpu, mig]
        .iter()
        .map(|d| DeviceView::new(d, "gpu.nvidia.com").unwrap_or_else(|e| panic!("{e}")))
        .collect()
}

fn compile(source: &str) -> Result<Selector, CompileError> {
    Selector::compile(source, &Catalog::new("gpu.nvidia.com", &node()))
}

/// The names of the devices `source` matches; panics on errors.
fn matching(source: &str) -> Vec<String> {
    let selector = compile(source).unwrap_or_else(|e| panic!("{source}: {e}"));
    node()
        .iter()
        .filter_map(|d| match selector.evaluate(d) {
            Outcome::Match => Some(d.name.clone()),
            Outcome::NoMatch { .. } => None,
            Outcome::Error { message, .. } => panic!("{source} on {}: {message}", d.name),
        })
        .collect()
}

#[test]
fn nvidia_driver_examples() {
    let both = ["gpu-0", "gpu-1-mig-1g5gb-0"];
    let cases: &[(&str, &[&str])] = &[
        (
            "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'",
            &["gpu-0"],
        ),
        (
            "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'",
            &["gpu-1-mig-1g5gb-0"],
        ),
        (
            "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA A100-SXM4-40GB'",
            &["gpu-1-mig-1g5gb-0"],
        ),
        // As a request under the mig.nvidia.com class: the class's type test
        // comes first, so GPUs without a profile never reach the lookup.
        (
            "device.attributes['gpu.nvidia.com'].type == 'mig' && device.attributes['gpu.nvidia.com'].profile == '1g.5gb'",
            &["gpu-1-mig-1g5gb-0"],
        ),
        (
            "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0",
            &["gpu-0"],
        ),
        (
            "device.attributes['gpu.nvidia.com'].architecture == 'Hopper'",
            &["gpu-0"],
        ),
        (
            "device.attributes['gpu.nvidia.com'].cudaComputeCapability.isGreaterThan(semver('8.0.0'))",
            &["gpu-0"],
        ),
        (
            "device.attributes['gpu.nvidia.com'].driverVersion.compareTo(semver('550.0.0')) >= 0",
            &both,
        ),
        (
            "device.attributes['resource.kubernetes.io'].pciBusID.startsWith('0000:3b')",
            &["gpu-0"],
        ),
    ];
    for (source, want) in cases {
        assert_eq!(matching(source), *want, "{source}");
    }
}

#[test]
fn kubernetes_examples() {
    let both = ["gpu-0", "gpu-1-mig-1g5gb-0"];
    let none: [&str; 0] = [];
    let cases: &[(&str, &[&str])] = &[
        ("device.driver == \"gpu.nvidia.com\"", &both),
        ("device.driver == \"driver.example.com\"", &none),
        ("\"gpu.nvidia.com\" in device.attributes", &both),
        ("!(\"dra.example.com\" in device.attributes)", &both),
        (
            "'profile' in device.attributes['gpu.nvidia.com']",
            &["gpu-1-mig-1g5gb-0"],
        ),
        ("size(device.attributes['other.example.com']) == 0", &both),
        (
            "cel.bind(dra, device.attributes['gpu.nvidia.com'], dra.type == 'gpu' && dra.architecture == 'Hopper')",
            &["gpu-0"],
        ),
        (
            "device.capacity['gpu.nvidia.com'].memory.isLessThan(quantity('10Gi'))",
            &["gpu-1-mig-1g5gb-0"],
        ),
        (
            "device.capacity['gpu.nvidia.com'].memory == quantity('80Gi')",
            &["gpu-0"],
        ),
        (
            "device.capacity['gpu.nvidia.com'].memory == quantity('81920Mi')",
            &["gpu-0"],
        ),
        ("device.allowMultipleAllocations == false", &both),
        (
            "device.attributes['gpu.nvidia.com'].productName.lowerAscii().contains('h100')",
            &["gpu-0"],
        ),
        (
            "device.attributes['gpu.nvidia.com'].productName.matches('^NVIDIA (H|A)100')",
            &both,
        ),
    ];
    for (source, want) in cases {
        assert_eq!(matching(source), *want, "{source}");
    }
}

#[test]
fn quantity_and_semver_library_examples() {
    let all = ["gpu-0", "gpu-1-mig-1g5gb-0"];
    for source in [
        "quantity('200M').compareTo(quantity('0.2G')) == 0",
        "quantity('50M').compareTo(quantity('50Mi')) == -1",
        "quantity('50Mi').compareTo(quantity('50M')) == 1",
        "quantity('150Mi').isGreaterThan(quantity('100Mi'))",
        "quantity('50M').isLessThan(quantity('100M'))",
        "quantity('50k').add(quantity('20k')) == quantity('70k')",
        "quantity('50k').add(20) == quantity('50020')",
        "quantity('50k').sub(20000) == quantity('30k')",
        "quantity('50k').add(20).sub(quantity('100k')).sub(-50000) == quantity('20')",
        "quantity('50k').asInteger() == 50000",
        "quantity('50000000G').isInteger()",
        "quantity('50k').sub(20000).asApproximateFloat() == 30000.0",
        "quantity('-5').sign() == -1",
        "isQuantity('1.3Gi') && isQuantity('10000k') && !isQuantity('200K') && !isQuantity('1,3G') && !isQuantity('Mi')",
        "semver('1.2.3').major() == 1 && semver('1.2.3').minor() == 2 && semver('1.2.3').patch() == 3",
        "semver('1.10.0').isGreaterThan(semver('1.9.0'))",
        "semver('1.0.0-alpha').isLessThan(semver('1.0.0'))",
        "semver('1.2.3').compareTo(semver('1.2.3')) == 0",
        "semver('1.0.0+build') == semver('1.0.0')",
        "isSemver('1.2.3') && !isSemver('v1.2') && isSemver('v1.2', true)",
        "semver('v1.2', true) == semver('1.2.0')",
    ] {
        assert_eq!(matching(source), all, "{source}");
    }
}

fn mistakes(source: &str) -> Vec<(String, Option<String>)> {
    match compile(source) {
        Err(CompileError::Mistakes(hints)) => hints
            .into_iter()
            .map(|h| (h.problem, h.suggestion))
            .collect(),
        other => panic!("{source}: expected mistakes, got {other:?}"),
    }
}

fn suggestion(source: &str) -> String {
    mistakes(source)
        .into_iter()
        .find_map(|(_, s)| s)
        .unwrap_or_else(|| panic!("{source}: no suggestion"))
}

#[test]
fn ordering_operators_on_quantities_and_versions() {
    let (problem, fix) =
        &mistakes("device.capacity['gpu.nvidia.com'].memory >= quantity(\"40Gi\")")[0];
    assert!(problem.contains("no ordering operators"), "{problem}");
    assert_eq!(
        fix.as_deref(),
        Some("device.capacity[\"gpu.nvidia.com\"].memory.compareTo(quantity(\"40Gi\")) >= 0")
    );
    assert_eq!(
        suggestion("quantity('1Gi') < device.capacity['gpu.nvidia.com'].memory"),
        "device.capacity[\"gpu.nvidia.com\"].memory.compareTo(quantity(\"1Gi\")) > 0"
    );
    assert_eq!(
        suggestion("device.capacity['gpu.nvidia.com'].memory > '40Gi'"),
        "device.capacity[\"gpu.nvidia.com\"].memory.compareTo(quantity(\"40Gi\")) > 0"
    );
    assert_eq!(
        suggestion("device.attributes['gpu.nvidia.com'].driverVersion >= semver('550.0.0')"),
        "device.attributes[\"gpu.nvidia.com\"].driverVersion.compareTo(semver(\"550.0.0\")) >= 0"
    );
    assert_eq!(
        suggestion("device.attributes['gpu.nvidia.com'].driverVersion > '550.0.0'"),
        "device.attributes[\"gpu.nvidia.com\"].driverVersion.compareTo(semver(\"550.0.0\")) > 0"
    );
}

#[test]
fn quantities_compared_with_strings() {
    assert_eq!(
        suggestion("device.capacity['gpu.nvidia.com'].memory == '80Gi'"),
        "device.capacity[\"gpu.nvidia.com\"].memory == quantity(\"80Gi\")"
    );
    assert_eq!(
        suggestion("device.capacity['gpu.nvidia.com'].memory.compareTo('40Gi') >= 0"),
        "device.capacity[\"gpu.nvidia.com\"].memory.compareTo(quantity(\"40Gi\"))"
    );
}

#[test]
fn names_without_their_domain() {
    for source in [
        "device.attributes.productName == 'x'",
        "device.attributes['productName'] == 'x'",
        "device.attributes['gpu.nvidia.com/productName'] == 'x'",
    ] {
        assert_eq!(
            suggestion(source),
            "device.attributes[\"gpu.nvidia.com\"].productName",
            "{source}"
        );
    }
    assert_eq!(
        suggestion("device.attributes.pciBusID == 'x'"),
        "device.attributes[\"resource.kubernetes.io\"].pciBusID"
    );
    assert_eq!(
        suggestion("device.capacity.memory.compareTo(quantity('1Gi')) > 0"),
        "device.capacity[\"gpu.nvidia.com\"].memory"
    );
    assert_eq!(
        suggestion("device.drivr == 'gpu.nvidia.com'"),
        "device.driver"
    );
}

#[test]
fn warnings_about_this_node() {
    let warnings = |source: &str| {
        compile(source)
            .unwrap_or_else(|e| panic!("{source}: {e}"))
            .warnings
            .into_iter()
            .inspect(|h| assert_eq!(h.severity, Severity::Warning))
            .map(|h| h.suggestion.unwrap_or_default())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        warnings("device.attributes['gpu.nvidia.com'].productname == 'x'"),
        ["device.attributes[\"gpu.nvidia.com\"].productName"]
    );
    assert_eq!(
        warnings("device.attributes['gpu.nvidia.com'].pciBusID == 'x'"),
        ["device.attributes[\"resource.kubernetes.io\"].pciBusID"]
    );
    assert_eq!(
        warnings("device.attributes['gpu.nvidia.com'].driverVersion == '570.124.6'"),
        ["device.attributes[\"gpu.nvidia.com\"].driverVersion == semver(\"570.124.6\")"]
    );
}

#[test]
fn outcomes_name_the_failing_clause() {
    let views = node();
    let selector = compile("device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu' && device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0")
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(selector.evaluate(&views[0]), Outcome::Match);
    assert_eq!(
        selector.evaluate(&views[1]),
        Outcome::NoMatch {
            clause: "device.attributes['gpu.nvidia.com'].type == 'gpu'".to_owned(),
            actual: Some("\"mig\"".to_owned()),
        }
    );
    // The receiver of a comparison method is what the clause is about.
    let selector =
        compile("device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0")
            .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        selector.evaluate(&views[1]),
        Outcome::NoMatch {
            clause: "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0"
                .to_owned(),
            actual: Some("quantity(\"4864Mi\")".to_owned()),
        }
    );
    let selector = compile("device.attributes['gpu.nvidia.com'].profile == '1g.5gb'")
        .unwrap_or_else(|e| panic!("{e}"));
    match selector.evaluate(&views[0]) {
        Outcome::Error {
            clause,
            message,
            hint,
        } => {
            assert_eq!(
                clause,
                "device.attributes['gpu.nvidia.com'].profile == '1g.5gb'"
            );
            assert!(
                message.contains("gpu-0 has no attribute or capacity \"profile\""),
                "{message}"
            );
            assert!(hint.is_some_and(|h| {
                h.contains("\"profile\" in device.attributes[\"gpu.nvidia.com\"]")
            }));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn refusals() {
    assert!(matches!(
        compile("device.driver == "),
        Err(CompileError::Parse(_))
    ));
    assert!(matches!(
        compile(&"a".repeat(10 * 1024 + 1)),
        Err(CompileError::TooLong(10_241))
    ));
    let list = format!("[{}]", vec!["1"; 200].join(","));
    let nested = format!("{list}.all(x, {list}.all(y, {list}.exists(z, x + y == z)))");
    let err = compile(&nested)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.starts_with("too complex, exceeds cost limit"), "{err}");
}

#[test]
fn runtime_errors_explained() {
    let views = node();
    let error = |source: &str| match compile(source)
        .unwrap_or_else(|e| panic!("{e}"))
        .evaluate(&views[0])
    {
        Outcome::Error { message, hint, .. } => (message, hint.unwrap_or_default()),
        other => panic!("{source}: {other:?}"),
    };
    let (message, _) = error("quantity('40GB').sign() == 1");
    assert!(message.contains("unknown suffix \"GB\""), "{message}");
    let (message, hint) = error("devise.driver == 'x'");
    assert!(message.contains("unknown name \"devise\""), "{message}");
    assert_eq!(hint, "did you mean device?");
    let (message, _) = error("device.driver");
    assert!(message.contains("must evaluate to bool"), "{message}");
}
