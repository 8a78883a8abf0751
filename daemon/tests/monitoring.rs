//! packaging/monitoring/ as its consumers take it:
//!
//! - the ScrapeConfig and the PrometheusRule are valid for the Prometheus
//!   Operator's CRD schemas (`openAPIV3Schema` of v0.93.0's CRDs, vendored in
//!   third_party/prometheus-operator, see its SOURCE), so `kubectl apply`
//!   accepts them;
//! - every alert's `runbook_url` points at a heading of
//!   docs/troubleshooting.md that exists;
//! - the dashboard ConfigMap carries the Grafana sidecar's label and a
//!   dashboard whose every panel has a query;
//! - the real promtool (Debian's prometheus package, unpacked by `.ci/run`'s
//!   `prometheus` stage under `$GPUSLICE_PROMETHEUS`, default
//!   /var/cache/gpuslice-test/prometheus) accepts the plain scrape snippet
//!   (`check config`) and the rules (`check rules`), and the rules pass their
//!   unit tests (`test rules packaging/monitoring/tests/rules-test.yml`).
//!   Without promtool that part skips with the reason, unless
//!   `GPUSLICE_REQUIRE_TOOLS=1`.
//!
//! The queries themselves run against a real Prometheus scraping a
//! simulated gpusliced in tests/e2e/monitoring/.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn yaml(path: &Path) -> Value {
    serde_norway::from_str(&read(path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn monitoring(name: &str) -> PathBuf {
    repo().join("packaging/monitoring").join(name)
}

/// The `openAPIV3Schema` of `version` in the vendored CRD `file`.
fn crd_schema(file: &str, version: &str) -> Value {
    let crd = yaml(&repo().join("third_party/prometheus-operator").join(file));
    crd["spec"]["versions"]
        .as_array()
        .and_then(|versions| versions.iter().find(|v| v["name"] == version))
        .map(|v| v["schema"]["openAPIV3Schema"].clone())
        .unwrap_or_else(|| panic!("{file}: no version {version}"))
}

fn assert_valid(schema: &Value, doc: &Value, what: &str) {
    let validator = jsonschema::validator_for(schema).expect("the CRD schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(doc)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{what}:\n{}", errors.join("\n"));
}

#[test]
fn scrapeconfig_and_prometheusrule_are_valid_for_the_operator_crds() {
    let scrape = yaml(&monitoring("scrapeconfig.yaml"));
    assert_eq!(scrape["apiVersion"], "monitoring.coreos.com/v1alpha1");
    assert_eq!(scrape["kind"], "ScrapeConfig");
    let schema = crd_schema("monitoring.coreos.com_scrapeconfigs.yaml", "v1alpha1");
    assert_valid(&schema, &scrape, "scrapeconfig.yaml");
    let rule = yaml(&monitoring("prometheusrule.yaml"));
    assert_eq!(rule["apiVersion"], "monitoring.coreos.com/v1");
    assert_eq!(rule["kind"], "PrometheusRule");
    let schema = crd_schema("monitoring.coreos.com_prometheusrules.yaml", "v1");
    assert_valid(&schema, &rule, "prometheusrule.yaml");
    // The schema does refuse what it should: a relabeling action that
    // does not exist.
    let mut bad = scrape.clone();
    bad["spec"]["relabelings"][0]["action"] = Value::from("Substitute");
    let schema = crd_schema("monitoring.coreos.com_scrapeconfigs.yaml", "v1alpha1");
    let validator = jsonschema::validator_for(&schema).expect("compiles");
    assert!(
        !validator.is_valid(&bad),
        "an unknown action must be refused"
    );
}

/// The anchors GitHub gives the headings of a Markdown file.
fn anchors(markdown: &str) -> BTreeSet<String> {
    markdown
        .lines()
        .filter_map(|l| l.strip_prefix('#'))
        .map(|h| h.trim_start_matches('#').trim())
        .map(|h| {
            h.to_lowercase()
                .chars()
                .filter_map(|c| match c {
                    ' ' => Some('-'),
                    c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                    _ => None,
                })
                .collect()
        })
        .collect()
}

/// Every alert rule of the PrometheusRule.
fn alerts() -> Vec<Value> {
    let rule = yaml(&monitoring("prometheusrule.yaml"));
    rule["spec"]["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .flat_map(|g| g["rules"].as_array().cloned().unwrap_or_default())
        .filter(|r| r.get("alert").is_some())
        .collect()
}

#[test]
fn every_alert_has_a_runbook_that_is_a_heading_of_troubleshooting() {
    let headings = anchors(&read(&repo().join("docs/troubleshooting.md")));
    let prefix = "https://github.com/gpuslice/gpuslice/blob/main/docs/troubleshooting.md#";
    let alerts = alerts();
    assert!(alerts.len() >= 9, "{} alerts", alerts.len());
    for alert in alerts {
        let name = alert["alert"].as_str().expect("name");
        let url = alert["annotations"]["runbook_url"]
            .as_str()
            .unwrap_or_else(|| panic!("{name}: no runbook_url"));
        let anchor = url
            .strip_prefix(prefix)
            .unwrap_or_else(|| panic!("{name}: {url} is not a section of troubleshooting.md"));
        assert!(
            headings.contains(anchor),
            "{name}: #{anchor} is no heading of docs/troubleshooting.md"
        );
        assert_eq!(anchor, name.to_lowercase(), "{name}: its own section");
    }
}

#[test]
fn the_dashboard_configmap_is_for_the_grafana_sidecar_and_every_panel_queries() {
    let map = yaml(&monitoring("dashboard-configmap.yaml"));
    assert_eq!(map["kind"], "ConfigMap");
    assert_eq!(map["metadata"]["labels"]["grafana_dashboard"], "1");
    let json = map["data"]["gpuslice.json"]
        .as_str()
        .expect("gpuslice.json");
    let dashboard: Value = serde_json::from_str(json).expect("the dashboard is JSON");
    assert_eq!(dashboard["uid"], "gpuslice");
    let panels = dashboard["panels"].as_array().expect("panels");
    let rows: Vec<&str> = panels
        .iter()
        .filter(|p| p["type"] == "row")
        .filter_map(|p| p["title"].as_str())
        .collect();
    assert_eq!(rows, ["Cluster", "Node $node", "Claim $namespace/$claim"]);
    for panel in panels.iter().filter(|p| p["type"] != "row") {
        let targets = panel["targets"].as_array().expect("targets");
        assert!(!targets.is_empty(), "{}: no query", panel["title"]);
        for t in targets {
            assert!(
                t["expr"].as_str().is_some_and(|e| e.contains("gpuslice_")),
                "{}: {t}",
                panel["title"]
            );
        }
    }
}

/// promtool, or why there is none.
fn promtool() -> Result<PathBuf, String> {
    let dir = std::env::var_os("GPUSLICE_PROMETHEUS").map_or_else(
        || PathBuf::from("/var/cache/gpuslice-test/prometheus"),
        PathBuf::from,
    );
    let tool = dir.join("root/usr/bin/promtool");
    if tool.is_file() {
        Ok(tool)
    } else {
        Err(format!(
            "no promtool at {} (.ci/run's prometheus stage unpacks Debian's prometheus there; \
             GPUSLICE_PROMETHEUS names another folder)",
            tool.display()
        ))
    }
}

fn run(tool: &Path, args: &[&str], cwd: &Path) -> String {
    let out = Command::new(tool)
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("run promtool");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "promtool {args:?}:\n{text}");
    text
}

#[test]
fn promtool_accepts_the_scrape_snippet_and_the_rules_and_the_rules_pass_their_tests() {
    let tool = match promtool() {
        Ok(tool) => tool,
        Err(why) => {
            let require = std::env::var_os("GPUSLICE_REQUIRE_TOOLS").is_some_and(|v| v == "1");
            assert!(
                !require,
                "{why} (GPUSLICE_REQUIRE_TOOLS=1 forbids skipping)"
            );
            eprintln!("skipped: {why}");
            return;
        }
    };
    let version = run(&tool, &["--version"], &repo());
    eprintln!("{}", version.lines().next().unwrap_or_default());
    let snippet = monitoring("prometheus-scrape.yml");
    let checked = run(
        &tool,
        &["check", "config", snippet.to_str().expect("utf-8")],
        &repo(),
    );
    assert!(checked.contains("SUCCESS"), "{checked}");
    let dir = tempfile::tempdir().expect("temp dir");
    let rule = yaml(&monitoring("prometheusrule.yaml"));
    let groups = serde_json::json!({ "groups": rule["spec"]["groups"] });
    let generated = serde_norway::to_string(&groups).expect("YAML");
    gpuslice_cdi::atomic::write_atomic(
        dir.path(),
        "rules.generated.yml",
        generated.as_bytes(),
        0o644,
    )
    .expect("write rules");
    std::fs::copy(
        monitoring("tests/rules-test.yml"),
        dir.path().join("rules-test.yml"),
    )
    .expect("copy the rules test");
    let checked = run(
        &tool,
        &["check", "rules", "rules.generated.yml"],
        dir.path(),
    );
    assert!(
        checked.contains(&format!("SUCCESS: {} rules found", alerts().len())),
        "{checked}"
    );
    let tested = run(&tool, &["test", "rules", "rules-test.yml"], dir.path());
    assert!(tested.contains("SUCCESS"), "{tested}");
}
