//! gpuslice's ComputeDomain API against NVIDIA's own, vendored unchanged in
//! third_party/dra-driver-nvidia-gpu (see its SOURCE):
//!
//! - every ComputeDomain of NVIDIA's example manifests is valid for NVIDIA's
//!   CRD (its `openAPIV3Schema`) and taken by gpuslice, and both refuse the
//!   same broken specs;
//! - the names (driver, DeviceClass, labels, finalizer, kinds) are the ones
//!   NVIDIA's Go sources declare, and the membership rules (an index per
//!   clique filling gaps, at most 18 nodes, Ready) the ones they apply;
//! - the ResourceClaimTemplate made for each example is NVIDIA's template
//!   (templates/compute-domain-workload-claim-template.tmpl.yaml) filled in
//!   as NVIDIA's controller fills it, and valid for Kubernetes' strict
//!   resource.k8s.io/v1 schema of 1.34 to 1.37 (third_party/kubernetes);
//! - packaging/compute-domains/ ships NVIDIA's CRD byte for byte and the
//!   channel DeviceClass as NVIDIA's chart renders it, valid for the same
//!   Kubernetes schemas.

use std::path::{Path, PathBuf};

use gpuslice_compute_domain::api::ComputeDomain;
use gpuslice_compute_domain::template::workload_template;
use gpuslice_compute_domain::{
    API_VERSION, COMPUTE_DOMAIN_LABEL, DEFAULT_CHANNEL_CLASS, DRIVER_NAME, TARGET_LABEL,
    TARGET_WORKLOAD,
};
use gpuslice_compute_domain::{channels, imex, membership};
use jsonschema::{Registry, Resource};
use serde::Deserialize;
use serde_json::{Value, json};

const EXAMPLES: [&str; 3] = [
    "channel-injection.yaml",
    "channel-injection-all.yaml",
    "nvbandwidth-test-job-1.yaml",
];
const KUBERNETES: [&str; 4] = ["v1.34", "v1.35", "v1.36", "v1.37"];
const DEFINITIONS_URI: &str = "https://kubernetes.io/api/_definitions.json";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(path: &str) -> String {
    let full = repo().join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

fn nvidia(name: &str) -> String {
    read(&format!("third_party/dra-driver-nvidia-gpu/{name}"))
}

/// Every document of a YAML stream.
fn documents(text: &str) -> Vec<Value> {
    serde_norway::Deserializer::from_str(text)
        .map(|doc| Value::deserialize(doc).expect("YAML"))
        .filter(|doc| !doc.is_null())
        .collect()
}

/// The ComputeDomains of NVIDIA's examples, as the API server would hold
/// them once created (a namespace and a uid).
fn example_domains() -> Vec<Value> {
    let mut found = Vec::new();
    for (i, example) in EXAMPLES.iter().enumerate() {
        for mut doc in documents(&nvidia(example)) {
            if doc["kind"] == "ComputeDomain" {
                doc["metadata"]["namespace"] = json!("default");
                doc["metadata"]["uid"] = json!(format!("6c1e0f2a-0000-4000-8000-00000000000{i}"));
                found.push(doc);
            }
        }
    }
    assert_eq!(found.len(), EXAMPLES.len(), "one ComputeDomain per example");
    found
}

/// NVIDIA's CRD's schema of v1beta1.
fn crd_validator() -> jsonschema::Validator {
    let crd = documents(&nvidia("resource.nvidia.com_computedomains.yaml"));
    let version = &crd[0]["spec"]["versions"][0];
    assert_eq!(version["name"], "v1beta1");
    jsonschema::validator_for(&version["schema"]["openAPIV3Schema"]).expect("the CRD's schema")
}

/// Kubernetes' strict schema of resource.k8s.io/v1 `kind`, per version.
fn kubernetes_validators(kind: &str) -> Vec<(&'static str, jsonschema::Validator)> {
    KUBERNETES
        .iter()
        .map(|version| {
            let text = read(&format!(
                "third_party/kubernetes/{version}-definitions.json"
            ));
            let definitions: Value = serde_json::from_str(&text).expect("JSON");
            let registry = Registry::new()
                .add(DEFINITIONS_URI, Resource::from_contents(definitions))
                .expect("register the definitions")
                .prepare()
                .expect("prepare the registry");
            let schema =
                json!({"$ref": format!("{DEFINITIONS_URI}#/$defs/io.k8s.api.resource.v1.{kind}")});
            let validator = jsonschema::options()
                .with_registry(&registry)
                .build(&schema)
                .unwrap_or_else(|e| panic!("{version} {kind}: {e}"));
            (*version, validator)
        })
        .collect()
}

fn kubernetes_errors(kind: &str, object: &Value) -> Vec<String> {
    kubernetes_validators(kind)
        .iter()
        .flat_map(|(version, v)| {
            v.iter_errors(object)
                .map(move |e| format!("{version}: {e}"))
        })
        .collect()
}

#[test]
fn nvidias_example_compute_domains_are_valid_for_its_crd_and_taken_by_gpuslice() {
    let crd = crd_validator();
    for doc in example_domains() {
        let errors: Vec<String> = crd.iter_errors(&doc).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{doc}: {errors:#?}");
        let domain: ComputeDomain = serde_json::from_value(doc.clone()).expect("taken");
        assert_eq!(domain.validate(), Ok(()), "{doc}");
    }
}

#[test]
fn the_crd_and_gpuslice_refuse_the_same_broken_specs() {
    let crd = crd_validator();
    let base = example_domains().remove(0);
    let broken = [
        ("no channel", json!({"numNodes": 1})),
        (
            "negative numNodes",
            json!({"numNodes": -1, "channel": base["spec"]["channel"]}),
        ),
        (
            "an unknown allocation mode",
            json!({"channel": {"allocationMode": "Some", "resourceClaimTemplate": {"name": "t"}}}),
        ),
        (
            "no template name",
            json!({"channel": {"resourceClaimTemplate": {}}}),
        ),
        ("no template", json!({"channel": {"allocationMode": "All"}})),
    ];
    for (what, spec) in broken {
        let mut doc = base.clone();
        doc["spec"] = spec;
        assert!(!crd.is_valid(&doc), "{what}: the CRD takes {doc}");
        let ours = serde_json::from_value::<ComputeDomain>(doc.clone())
            .map_err(|e| e.to_string())
            .and_then(|d| d.validate().map_err(|e| e.to_string()));
        assert!(ours.is_err(), "{what}: gpuslice takes {doc}");
    }
}

/// The string constant `name` declares in Go source `text`.
fn go_constant(text: &str, name: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter_map(|l| l.strip_prefix(name))
        .filter_map(|rest| rest.trim_start().strip_prefix('='))
        .find_map(|value| {
            let value = value.trim();
            value
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .map(str::to_owned)
        })
        .unwrap_or_else(|| panic!("no constant {name}"))
}

#[test]
fn the_names_are_the_ones_nvidias_sources_declare() {
    let api = nvidia("api.go");
    let version = format!(
        "{}/{}",
        go_constant(&api, "GroupName"),
        go_constant(&api, "Version")
    );
    assert_eq!(API_VERSION, version);
    assert_eq!(
        gpuslice_compute_domain::config::CHANNEL_KIND,
        go_constant(&api, "ComputeDomainChannelConfigKind")
    );
    assert_eq!(
        gpuslice_compute_domain::config::DAEMON_KIND,
        go_constant(&api, "ComputeDomainDaemonConfigKind")
    );
    assert_eq!(
        gpuslice_compute_domain::api::KIND,
        go_constant(&api, "ComputeDomainKind")
    );
    assert_eq!(
        DRIVER_NAME,
        go_constant(&nvidia("controller-main.go"), "DriverName")
    );
    let controller = nvidia("controller-computedomain.go");
    let pairs = [
        (COMPUTE_DOMAIN_LABEL, "computeDomainLabelKey"),
        (
            DEFAULT_CHANNEL_CLASS,
            "computeDomainDefaultChannelDeviceClass",
        ),
        (
            TARGET_LABEL,
            "computeDomainResourceClaimTemplateTargetLabelKey",
        ),
        (
            TARGET_WORKLOAD,
            "computeDomainResourceClaimTemplateTargetWorkload",
        ),
    ];
    for (ours, theirs) in pairs {
        assert_eq!(ours, go_constant(&controller, theirs), "{theirs}");
    }
    assert!(
        controller.contains("computeDomainFinalizer      = computeDomainLabelKey"),
        "the finalizer is the label key"
    );
}

#[test]
fn the_membership_rules_are_the_ones_nvidias_sources_apply() {
    let main = nvidia("controller-main.go");
    let max = main
        .lines()
        .find_map(|l| l.trim().strip_prefix("defaultMaxNodesPerIMEXDomain = "))
        .and_then(|v| v.trim().parse::<i64>().ok())
        .expect("defaultMaxNodesPerIMEXDomain");
    assert_eq!(membership::DEFAULT_MAX_NODES_PER_CLIQUE, max);
    let clique = nvidia("daemon-cdclique.go");
    for line in [
        "nextIndex := 0",
        "for usedIndices[nextIndex] {",
        "nextIndex >= m.config.maxNodesPerIMEXDomain",
    ] {
        assert!(
            clique.contains(line),
            "getNextAvailableIndex changed: {line}"
        );
    }
    let controller = nvidia("controller-computedomain.go");
    for line in [
        "if len(cd.Status.Nodes) < cd.Spec.NumNodes {",
        "if n.Status == nvapi.ComputeDomainStatusNotReady {",
    ] {
        assert!(
            controller.contains(line),
            "calculateGlobalStatus changed: {line}"
        );
    }
}

/// NVIDIA's workload template filled in for `domain` as its controller
/// does (resourceclaimtemplate.go: the domain's namespace, the template
/// name of its spec, its uid, the Workload target, the default-channel
/// class, the driver, and a channel config of the domain's uid and mode).
fn nvidias_template(domain: &Value) -> Value {
    let mode = domain["spec"]["channel"]["allocationMode"]
        .as_str()
        .unwrap_or("Single");
    let text = |v: &Value| v.as_str().expect("a string").to_owned();
    let fields = [
        ("{{ .Namespace }}", text(&domain["metadata"]["namespace"])),
        (
            "{{ .Name }}",
            text(&domain["spec"]["channel"]["resourceClaimTemplate"]["name"]),
        ),
        ("{{ .Finalizer }}", COMPUTE_DOMAIN_LABEL.to_owned()),
        (
            "{{ .ComputeDomainLabelKey }}",
            COMPUTE_DOMAIN_LABEL.to_owned(),
        ),
        (
            "{{ .ComputeDomainLabelValue }}",
            text(&domain["metadata"]["uid"]),
        ),
        ("{{ .TargetLabelKey }}", TARGET_LABEL.to_owned()),
        ("{{ .TargetLabelValue }}", TARGET_WORKLOAD.to_owned()),
        ("{{ .DeviceClassName }}", DEFAULT_CHANNEL_CLASS.to_owned()),
        ("{{ .DriverName }}", DRIVER_NAME.to_owned()),
        ("{{ .ChannelConfig.APIVersion }}", API_VERSION.to_owned()),
        (
            "{{ .ChannelConfig.Kind }}",
            gpuslice_compute_domain::config::CHANNEL_KIND.to_owned(),
        ),
        (
            "{{ .ChannelConfig.DomainID }}",
            text(&domain["metadata"]["uid"]),
        ),
        ("{{ .ChannelConfig.AllocationMode }}", mode.to_owned()),
    ];
    let filled = fields.iter().fold(
        nvidia("compute-domain-workload-claim-template.tmpl.yaml"),
        |t, (field, value)| t.replace(field, value),
    );
    assert!(!filled.contains("{{"), "a field left: {filled}");
    documents(&filled).remove(0)
}

#[test]
fn the_template_made_for_each_example_is_nvidias_and_valid_for_kubernetes() {
    for doc in example_domains() {
        let domain: ComputeDomain = serde_json::from_value(doc.clone()).expect("taken");
        let made =
            serde_json::to_value(workload_template(&domain).expect("a template")).expect("JSON");
        assert_eq!(made, nvidias_template(&doc), "{doc}");
        let errors = kubernetes_errors("ResourceClaimTemplate", &made);
        assert!(errors.is_empty(), "{made}: {errors:#?}");
    }
}

#[test]
fn no_template_is_made_for_a_domain_the_api_server_has_not_created() {
    let mut doc = example_domains().remove(0);
    doc["metadata"]
        .as_object_mut()
        .expect("metadata")
        .remove("uid");
    let domain: ComputeDomain = serde_json::from_value(doc).expect("taken");
    let error = workload_template(&domain).expect_err("no uid").to_string();
    assert!(error.contains("no metadata.uid yet"), "{error}");
}

#[test]
fn the_packaged_crd_is_nvidias_and_the_class_is_its_chart_rendered() {
    assert_eq!(
        read("packaging/compute-domains/resource.nvidia.com_computedomains.yaml"),
        nvidia("resource.nvidia.com_computedomains.yaml"),
        "the CRD is shipped byte for byte"
    );
    let chart: String = nvidia("deviceclass-compute-domain-default-channel.yaml")
        .lines()
        .filter(|l| !l.trim_start().starts_with("{{-"))
        .map(|l| {
            l.replace(
                r#"{{ include "dra-driver-nvidia-gpu.resourceApiVersion" . }}"#,
                "resource.k8s.io/v1",
            ) + "\n"
        })
        .collect();
    let rendered = documents(&chart).remove(0);
    let shipped = documents(&read(
        "packaging/compute-domains/compute-domain-default-channel.nvidia.com.yaml",
    ))
    .remove(0);
    assert_eq!(shipped, rendered);
    assert_eq!(shipped["metadata"]["name"], DEFAULT_CHANNEL_CLASS);
    let errors = kubernetes_errors("DeviceClass", &shipped);
    assert!(errors.is_empty(), "{errors:#?}");
}

/// The `KEY=VALUE` lines of an IMEX config, comments and blanks left out.
fn settings(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (key, value) = l
                .split_once('=')
                .unwrap_or_else(|| panic!("not KEY=VALUE: {l}"));
            (key.to_owned(), value.to_owned())
        })
        .collect()
}

#[test]
fn the_imex_daemon_is_configured_queried_and_named_as_nvidias_daemon_does() {
    let rendered = nvidia("compute-domain-daemon-config.tmpl.cfg")
        .replace(
            "{{ .IMEXDaemonNodesConfigPath }}",
            "/run/gpuslice/imex/nodes.cfg",
        )
        .replace("{{ .IMEXCmdBindInterfaceIP }}", "10.1.2.3");
    let ours = settings(&imex::daemon_config(&imex::DaemonPlaces {
        bind_ip: "10.1.2.3",
        nodes_config: "/run/gpuslice/imex/nodes.cfg",
        command_socket: "/run/gpuslice/imex/cmd.sock",
        stats_file: "/run/gpuslice/imex/imex-stats.log",
    }));
    // gpuslice's four differences, each for a reason of its own: the
    // daemon binds the node's rack address (it knows its own name by it),
    // the command service is a unix socket (gpusliced, which asks it, runs
    // AF_UNIX-only), its TCP side kept on loopback, and the statistics go to
    // the domain's folder (the only place its unit may write).
    let differs = [
        (
            "STATS_FILE_NAME",
            "/var/log/nvidia-imex-stats.log",
            "/run/gpuslice/imex/imex-stats.log",
        ),
        ("BIND_INTERFACE_IP", "", "10.1.2.3"),
        ("IMEX_CMD_BIND_INTERFACE_IP", "10.1.2.3", "127.0.0.1"),
        (
            "IMEX_CMD_UNIX_DOMAIN_PATH",
            "",
            "/run/gpuslice/imex/cmd.sock",
        ),
    ];
    let theirs = settings(&rendered);
    assert_eq!(
        ours.iter().map(|(k, _)| k).collect::<Vec<_>>(),
        theirs.iter().map(|(k, _)| k).collect::<Vec<_>>(),
        "the same keys in the same order as NVIDIA's template"
    );
    for ((key, value), (_, nvidia_value)) in ours.iter().zip(&theirs) {
        match differs.iter().find(|(k, _, _)| k == key) {
            Some((_, nv, us)) => {
                assert_eq!((nvidia_value.as_str(), value.as_str()), (*nv, *us), "{key}")
            }
            None => assert_eq!(value, nvidia_value, "{key}: NVIDIA's value"),
        }
    }
    let value = |key: &str| {
        theirs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("no {key}"))
    };
    assert_eq!(value("SERVER_PORT"), imex::SERVER_PORT.to_string());
    assert_eq!(value("IMEX_CMD_PORT"), imex::CMD_PORT.to_string());
    let main = nvidia("daemon-main.go");
    for line in [
        r#"imexDaemonBinaryName      = "nvidia-imex""#,
        r#"imexCtlBinaryName         = "nvidia-imex-ctl""#,
        "daemonCommandLine := []string{imexDaemonBinaryName, \"-c\", imexDaemonConfigPath}",
        r#"cmd := exec.CommandContext(ctx, imexCtlBinaryName, "-c", imexDaemonConfigPath, "-q")"#,
        r#"if string(outerr) != "READY\n" {"#,
        "if err := processManager.Signal(syscall.SIGUSR1); err != nil {",
    ] {
        assert!(main.contains(line), "NVIDIA's daemon changed: {line}");
    }
    let names = nvidia("daemon-dnsnames.go");
    for line in [
        r#"dnsNamePrefix = "compute-domain-daemon-""#,
        r#"dnsNameFormat = dnsNamePrefix + "%04d""#,
    ] {
        assert!(names.contains(line), "NVIDIA's names changed: {line}");
    }
    assert_eq!(
        gpuslice_compute_domain::names::member_name(7),
        "compute-domain-daemon-0007"
    );
    assert_eq!(
        imex::daemon_command("c.cfg"),
        ["nvidia-imex", "-c", "c.cfg"]
    );
    assert_eq!(
        imex::query_command("c.cfg"),
        ["nvidia-imex-ctl", "-c", "c.cfg", "-q"]
    );
}

#[test]
fn channels_are_offered_as_nvidias_plugin_offers_them_and_the_class_selects_channel_0() {
    let nvlib = nvidia("plugin-nvlib.go");
    let lines = [
        format!(
            "nvidiaCapsImexChannelsDeviceName = \"{}\"",
            channels::PROC_DEVICES_NAME
        ),
        format!("return {}, nil", channels::CHANNEL_COUNT),
        format!(
            "Path:   fmt.Sprintf(\"{}/channel%d\", channelID),",
            channels::DEVICE_FOLDER
        ),
        format!("Mode:   0{:o},", channels::DEVICE_MODE),
        "Minor:  channelID,".to_owned(),
    ];
    for line in lines {
        assert!(
            nvlib.contains(&line),
            "NVIDIA's plugin says otherwise: {line}"
        );
    }
    assert_eq!(
        go_constant(&nvidia("plugin-types.go"), "ComputeDomainChannelType"),
        channels::CHANNEL_TYPE
    );
    let info = nvidia("plugin-deviceinfo.go");
    assert!(info.contains(r#"return fmt.Sprintf("%s-%d", ComputeDomainChannelType, d.ID)"#));
    let class = documents(&read(
        "packaging/compute-domains/compute-domain-default-channel.nvidia.com.yaml",
    ))
    .remove(0);
    let expression = class["spec"]["selectors"][0]["cel"]["expression"]
        .as_str()
        .expect("a CEL selector");
    let views: Vec<gpuslice_selector::DeviceView> = (0..3)
        .map(|id| {
            gpuslice_selector::DeviceView::new(&channels::channel_device(id), DRIVER_NAME)
                .expect("a device view")
        })
        .collect();
    let catalog = gpuslice_selector::Catalog::new(DRIVER_NAME, &views);
    let selector = gpuslice_selector::Selector::compile(expression, &catalog).expect("compiles");
    let chosen: Vec<bool> = views
        .iter()
        .map(|v| selector.holds(v).expect("evaluates"))
        .collect();
    assert_eq!(chosen, [true, false, false], "channel 0 only");
}
