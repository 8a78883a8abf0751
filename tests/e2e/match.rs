//! `gpuslicectl match` end to end: the real gpuslicectl against a real
//! gpusliced on two simulated H100s (GPU 1 in MIG mode, layout advertised:
//! its slices, never the GPU whole): which devices a
//! selector matches, the failing clause on the others, the mistakes it
//! refuses with their fix, claims with the packaged classes, the driver and
//! plugin-config options, claims judged whole (now, only on an empty node,
//! not at all, and what falls short), and the documented exit statuses.

use std::process::Command;

use serde_json::Value;

use crate::common::ctl::run_ctl;
use crate::common::files::write_text;
use crate::harness::{Daemon, write_config};

const MIG: &str = "[mig]\nadvertise = \"layout\"\ncreate = \"on-prepare\"\n\
                   [[mig.gpu]]\nindex = 1\nlayout = [\"3g.40gb\", \"1g.10gb\"]\n";

const CLAIM: &str = r#"
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: train}
spec:
  devices:
    requests:
    - name: slice
      exactly:
        deviceClassName: mig.nvidia.com
        selectors:
        - cel: {expression: "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"}
    - name: big
      exactly:
        deviceClassName: gpu.nvidia.com
        selectors:
        - cel: {expression: "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('100Gi')) >= 0"}
"#;

fn daemon() -> Daemon {
    Daemon::start_with(2, MIG)
}

/// Runs `gpuslicectl ARGS`: exit status, stdout, stderr. An empty plugin
/// config (all defaults) is given unless ARGS has one, so the host's /etc
/// never leaks in.
fn run(daemon: &Daemon, args: &[&str]) -> (i32, String, String) {
    let absent = daemon.dir.path().join("empty-plugin.toml");
    let has_config = args.contains(&"--plugin-config");
    let mut command = Command::new(crate::binaries::gpuslicectl());
    command.arg("--socket").arg(&daemon.socket).args(args);
    if !has_config {
        write_text(&absent, "");
        command.arg("--plugin-config").arg(&absent);
    }
    let out = command.output().expect("run gpuslicectl match");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn json(daemon: &Daemon, args: &[&str]) -> (i32, Value) {
    let mut all = vec!["--output", "json", "match"];
    all.extend_from_slice(args);
    let (code, stdout, stderr) = run(daemon, &all);
    let doc = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout} {stderr}"));
    (code, doc)
}

fn devices(doc: &Value, target: usize) -> Vec<&Value> {
    doc["targets"][target]["devices"]
        .as_array()
        .map(|a| a.iter().collect())
        .unwrap_or_default()
}

fn names_with(doc: &Value, target: usize, result: &str) -> Vec<String> {
    devices(doc, target)
        .into_iter()
        .filter(|d| d["result"] == result)
        .filter_map(|d| d["device"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn sim_match_lists_matches_and_the_failing_clause_with_its_value() {
    let daemon = daemon();
    let selector =
        "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'";
    let (code, doc) = json(&daemon, &[selector]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(
        names_with(&doc, 0, "match"),
        ["gpu-1-mig-3g40gb-4", "gpu-1-mig-1g10gb-0"]
    );
    let gpu0 = devices(&doc, 0)
        .into_iter()
        .find(|d| d["device"] == "gpu-0")
        .cloned();
    let gpu0 = gpu0.expect("gpu-0 reported");
    assert_eq!(gpu0["result"], "no_match");
    assert_eq!(
        gpu0["clause"],
        "device.attributes['gpu.nvidia.com'].type == 'mig'"
    );
    assert_eq!(gpu0["actual"], "\"gpu\"");

    let (code, text, _) = run(
        &daemon,
        &[
            "match",
            "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('20Gi')) >= 0",
        ],
    );
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("2 of 3 devices match."), "{text}");
    assert!(text.contains("(here quantity(\"9984Mi\"))"), "{text}");

    let (code, text, _) = run(&daemon, &["match", "device.driver == 'driver.example.com'"]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("0 of 3 devices match."), "{text}");
}

#[test]
fn sim_match_refuses_common_mistakes_with_the_fix() {
    let daemon = daemon();
    let cases = [
        (
            "device.capacity['gpu.nvidia.com'].memory >= quantity(\"40Gi\")",
            "device.capacity[\"gpu.nvidia.com\"].memory.compareTo(quantity(\"40Gi\")) >= 0",
        ),
        (
            "device.attributes.productName == 'NVIDIA H100 80GB HBM3'",
            "device.attributes[\"gpu.nvidia.com\"].productName",
        ),
        (
            "device.attributes['gpu.nvidia.com'].driverVersion > '550.0.0'",
            "device.attributes[\"gpu.nvidia.com\"].driverVersion.compareTo(semver(\"550.0.0\")) > 0",
        ),
    ];
    for (selector, fix) in cases {
        let (code, doc) = json(&daemon, &[selector]);
        assert_eq!(code, 2, "{selector}: {doc}");
        let hints = &doc["targets"][0]["selectors"][0]["hints"];
        assert_eq!(hints[0]["severity"], "error", "{selector}: {doc}");
        assert_eq!(hints[0]["suggestion"], fix, "{selector}: {doc}");
        assert!(
            devices(&doc, 0).is_empty(),
            "an invalid selector is not evaluated"
        );
    }

    // A misspelled attribute is legal CEL: a warning with the real name, and
    // an evaluation error on every device (exit 1).
    let (code, doc) = json(
        &daemon,
        &["device.attributes['gpu.nvidia.com'].productname == 'x'"],
    );
    assert_eq!(code, 1, "{doc}");
    let hint = &doc["targets"][0]["selectors"][0]["hints"][0];
    assert_eq!(hint["severity"], "warning");
    assert_eq!(
        hint["suggestion"],
        "device.attributes[\"gpu.nvidia.com\"].productName"
    );
    assert_eq!(names_with(&doc, 0, "error").len(), 3, "{doc}");

    let (code, text, _) = run(&daemon, &["match", "device.driver =="]);
    assert_eq!(code, 2);
    assert!(text.contains("the selector does not parse"), "{text}");
}

#[test]
fn sim_match_claims_with_packaged_classes_and_other_drivers() {
    let daemon = daemon();
    let claim = daemon.dir.path().join("claim.yaml");
    write_text(&claim, CLAIM);
    let path = claim.to_str().expect("utf-8 path");
    let (code, doc) = json(&daemon, &["-f", path]);
    assert_eq!(code, 1, "request big matches nothing: {doc}");
    assert_eq!(doc["targets"][0]["target"], "claim train, request slice");
    assert_eq!(names_with(&doc, 0, "match"), ["gpu-1-mig-1g10gb-0"]);
    let gpu0 = devices(&doc, 0)
        .into_iter()
        .find(|d| d["device"] == "gpu-0")
        .cloned();
    assert_eq!(
        gpu0.expect("gpu-0")["selector"],
        "class mig.nvidia.com, selector 1"
    );
    assert!(names_with(&doc, 1, "match").is_empty(), "{doc}");

    // gpu-1 is MIG-managed in layout mode: published as its slices only,
    // never whole (docs/publication.md), so the class finds gpu-0 alone.
    let (code, doc) = json(&daemon, &["--class", "gpu.nvidia.com"]);
    assert_eq!(
        (code, names_with(&doc, 0, "match")),
        (0, vec!["gpu-0".to_owned()])
    );

    // Another driver name: attributes move to its domain.
    let (code, doc) = json(
        &daemon,
        &[
            "--driver",
            "gpu.example.com",
            "device.attributes['gpu.example.com'].type == 'gpu'",
        ],
    );
    assert_eq!(
        (code, doc["driver"].clone()),
        (0, Value::from("gpu.example.com"))
    );
    assert_eq!(names_with(&doc, 0, "match"), ["gpu-0"]);

    // The plugin's config: its driver, and consumable capacity.
    let config = daemon.dir.path().join("plugin.toml");
    write_text(
        &config,
        "driver_name = \"gpu.example.com\"\nconsumable_capacity = true\n",
    );
    let config = config.to_str().expect("utf-8 path");
    let (code, doc) = json(
        &daemon,
        &["--plugin-config", config, "device.allowMultipleAllocations"],
    );
    assert_eq!(
        (code, doc["driver"].clone()),
        (0, Value::from("gpu.example.com"))
    );
    assert_eq!(names_with(&doc, 0, "match"), ["gpu-0"]);

    let (code, _, stderr) = run(&daemon, &["match", "--class", "nope.example.com"]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("no DeviceClass \"nope.example.com\""),
        "{stderr}"
    );
}

/// A claim for `count` 3g.40gb slices (the node has one).
fn slices_claim(count: u32) -> String {
    format!(
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {{name: big-slices}}\n\
         spec:\n  devices:\n    requests:\n    - name: slices\n      exactly:\n\
         \x20       deviceClassName: mig.nvidia.com\n        count: {count}\n\
         \x20       selectors:\n        - cel: {{expression: \"device.attributes['gpu.nvidia.com'].profile == '3g.40gb'\"}}\n"
    )
}

/// Prepares a claim holding `device`, as the DRA plugin would.
fn hold(daemon: &Daemon, uid: &str, device: &str) {
    run_ctl(
        &daemon.socket,
        &["prepare", "--uid", uid, "--device", device],
    )
    .ok();
}

#[test]
fn sim_match_judges_claims_whole_now_and_on_an_empty_node() {
    let daemon = daemon();
    let file = daemon.dir.path().join("slices.yaml");
    let path = file.to_str().expect("utf-8 path");

    // More slices than the node has: the selectors match, the claim cannot
    // be allocated, and the request and its shortfall are named.
    write_text(&file, &slices_claim(3));
    let (code, text, _) = run(&daemon, &["match", "-f", path]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("1 of 3 devices match."), "{text}");
    assert!(
        text.contains(
            "claim big-slices: cannot be allocated on this node, not even when it is empty:\n  \
             request slices: needs 3 devices matching class mig.nvidia.com and its selectors; \
             1 exists on this node, 1 is free now\n"
        ),
        "{text}"
    );
    let (code, doc) = json(&daemon, &["-f", path]);
    assert_eq!(code, 1);
    let verdict = &doc["claims"][0];
    assert_eq!(
        (
            &verdict["claim"],
            &verdict["now"],
            &verdict["empty_node"],
            &verdict["verdict"]
        ),
        (
            &Value::from("big-slices"),
            &Value::from(false),
            &Value::from(false),
            &Value::from("never")
        ),
        "{doc}"
    );
    let shortfall = &verdict["shortfalls"][0];
    assert_eq!(
        (&shortfall["kind"], &shortfall["request"]),
        (&Value::from("devices"), &Value::from("slices"))
    );
    assert_eq!(
        (&shortfall["needs"], &shortfall["exist"]),
        (&Value::from(3), &Value::from(1))
    );

    // One fits, and says where.
    write_text(&file, &slices_claim(1));
    let (code, text, _) = run(&daemon, &["match", "-f", path]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("claim big-slices: can be allocated now: slices gpu-1-mig-3g40gb-4\n"),
        "{text}"
    );

    // Its device held by a prepared claim, a claim fits only on an empty
    // node. (gpu-0 is the one GPU offered whole: gpu-1 is MIG-managed.)
    write_text(
        &file,
        "kind: ResourceClaim\nmetadata: {name: whole}\nspec:\n  devices:\n    requests:\n\
         \x20   - {name: gpu, exactly: {deviceClassName: gpu.nvidia.com}}\n",
    );
    let (code, text, _) = run(&daemon, &["match", "-f", path]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("claim whole: can be allocated now: gpu gpu-0\n"),
        "{text}"
    );
    hold(&daemon, "11111111-2222-4333-8444-555555555555", "gpu-0");
    let (code, text, _) = run(&daemon, &["match", "-f", path]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains(
            "claim whole: cannot be allocated now, only on an empty node (other claims hold what it needs):\n  \
             request gpu: needs 1 device matching class gpu.nvidia.com; \
             1 exists on this node, 0 are free now\n"
        ),
        "{text}"
    );
    let (_, doc) = json(&daemon, &["-f", path]);
    assert_eq!(doc["claims"][0]["verdict"], "empty_node_only", "{doc}");
    assert_eq!(
        doc["claims"][0]["shortfalls"][0]["blocked"][0],
        serde_json::json!({"device": "gpu-0", "why": "held"})
    );
}

/// The standard topology attributes gpusliced publishes in the
/// `resource.kubernetes.io` domain (gpu::sim::topology places both GPUs
/// under `pci0000:00` on NUMA node 0; a slice sits where its GPU does), and
/// a node whose kernel gives no NUMA affinity (`numa_nodes = 0`), where
/// `numaNode` is not published at all.
#[test]
fn sim_match_sees_the_standard_topology_attributes() {
    let daemon = daemon();
    let aligned = "device.attributes['resource.kubernetes.io'].pcieRoot == 'pci0000:00' && \
                   device.attributes['resource.kubernetes.io'].numaNode == 0";
    let (code, doc) = json(&daemon, &[aligned]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(
        names_with(&doc, 0, "match"),
        ["gpu-0", "gpu-1-mig-3g40gb-4", "gpu-1-mig-1g10gb-0"]
    );
    // In the driver's domain it is a name no device has: the warning names
    // the real one.
    let (code, doc) = json(
        &daemon,
        &["device.attributes['gpu.nvidia.com'].pcieRoot == 'x'"],
    );
    assert_eq!(code, 1, "{doc}");
    let hint = &doc["targets"][0]["selectors"][0]["hints"][0];
    assert_eq!(
        hint["suggestion"], "device.attributes[\"resource.kubernetes.io\"].pcieRoot",
        "{doc}"
    );

    let dir = tempfile::tempdir().expect("temp dir");
    let config = write_config(dir.path(), 2, MIG);
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&config)
        .expect("the config");
    std::io::Write::write_all(&mut file, b"numa_nodes = 0\n").expect("append to [backend.sim]");
    let no_numa = Daemon::start_in(dir);
    let (code, doc) = json(
        &no_numa,
        &[
            "!has(device.attributes['resource.kubernetes.io'].numaNode) && \
           has(device.attributes['resource.kubernetes.io'].pcieRoot)",
        ],
    );
    assert_eq!(code, 0, "{doc}");
    assert_eq!(names_with(&doc, 0, "match").len(), 3, "{doc}");
}
