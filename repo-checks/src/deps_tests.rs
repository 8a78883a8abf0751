use serde_json::{Value, json};

use super::{MetadataError, Reached, forbidden_reached};

/// A dependency edge of kind `kind` (`None` for normal).
fn dep(pkg: &str, kinds: &[Option<&str>]) -> Value {
    let kinds: Vec<Value> = kinds
        .iter()
        .map(|k| json!({ "kind": k, "target": null }))
        .collect();
    json!({ "name": pkg, "pkg": format!("id-{pkg}"), "dep_kinds": kinds })
}

/// Metadata for packages `names`, `members` of them in the workspace, and
/// `edges` (from, to, kinds).
fn metadata(names: &[&str], members: &[&str], edges: &[(&str, &str, &[Option<&str>])]) -> Value {
    let packages: Vec<Value> = names
        .iter()
        .map(|n| json!({ "id": format!("id-{n}"), "name": n }))
        .collect();
    let nodes: Vec<Value> = names
        .iter()
        .map(|n| {
            let deps: Vec<Value> = edges
                .iter()
                .filter(|(from, _, _)| from == n)
                .map(|(_, to, kinds)| dep(to, kinds))
                .collect();
            json!({ "id": format!("id-{n}"), "deps": deps })
        })
        .collect();
    let members: Vec<String> = members.iter().map(|m| format!("id-{m}")).collect();
    json!({ "packages": packages, "workspace_members": members, "resolve": { "nodes": nodes } })
}

fn kube(name: &str) -> bool {
    name == "kube" || name.starts_with("kube-") || name == "k8s-openapi"
}

const NORMAL: &[Option<&str>] = &[None];
const DEV: &[Option<&str>] = &[Some("dev")];
const BUILD: &[Option<&str>] = &[Some("build")];

#[test]
fn a_forbidden_package_two_steps_away_is_found_with_its_path() {
    let m = metadata(
        &["daemon", "plugin", "kube-client", "serde"],
        &["daemon", "plugin"],
        &[
            ("daemon", "serde", NORMAL),
            ("daemon", "plugin", NORMAL),
            ("plugin", "kube-client", NORMAL),
        ],
    );
    let reached = forbidden_reached(&m, "daemon", kube).expect("readable");
    assert_eq!(
        reached,
        [Reached {
            package: "kube-client".to_owned(),
            path: vec!["daemon".into(), "plugin".into(), "kube-client".into()],
        }]
    );
    assert_eq!(reached[0].to_string(), "daemon -> plugin -> kube-client");
}

#[test]
fn dev_and_build_dependencies_are_not_followed() {
    let m = metadata(
        &["daemon", "tests-only", "k8s-openapi", "kube"],
        &["daemon"],
        &[
            ("daemon", "tests-only", DEV),
            ("tests-only", "k8s-openapi", NORMAL),
            ("daemon", "kube", BUILD),
        ],
    );
    assert_eq!(forbidden_reached(&m, "daemon", kube), Ok(Vec::new()));
}

#[test]
fn an_edge_that_is_normal_among_other_kinds_is_followed() {
    let m = metadata(
        &["daemon", "kube"],
        &["daemon"],
        &[("daemon", "kube", &[Some("dev"), None])],
    );
    let reached = forbidden_reached(&m, "daemon", kube).expect("readable");
    assert_eq!(reached.len(), 1, "{reached:?}");
}

#[test]
fn the_walk_stops_at_a_forbidden_package_and_meets_each_once() {
    let m = metadata(
        &["daemon", "a", "b", "kube", "kube-core"],
        &["daemon"],
        &[
            ("daemon", "a", NORMAL),
            ("daemon", "b", NORMAL),
            ("a", "kube", NORMAL),
            ("b", "kube", NORMAL),
            ("kube", "kube-core", NORMAL),
        ],
    );
    let reached = forbidden_reached(&m, "daemon", kube).expect("readable");
    let paths: Vec<String> = reached.iter().map(ToString::to_string).collect();
    assert_eq!(paths, ["daemon -> a -> kube"]);
}

#[test]
fn a_root_outside_the_workspace_or_bad_json_is_an_error() {
    let m = metadata(&["daemon", "serde"], &["daemon"], &[]);
    assert_eq!(
        forbidden_reached(&m, "serde", kube),
        Err(MetadataError::UnknownRoot("serde".to_owned()))
    );
    assert_eq!(
        forbidden_reached(&json!({ "packages": [] }), "daemon", kube),
        Err(MetadataError::Shape("resolve.nodes"))
    );
}
