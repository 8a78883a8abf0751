//! The packaged RBAC grants exactly what the plugin needs and nothing more.
//! For claim status (`packaging/rbac/claim-status.yaml`): `patch` on
//! `resourceclaims/status` and `associated-node:patch` on
//! `resourceclaims/driver` for the default driver name, bound to the
//! plugin's ServiceAccount (docs/claim-status.md#access). For ComputeDomains
//! (`packaging/rbac/compute-domains.yaml`, docs/compute-domains.md#access):
//! a ServiceAccount of their own, a ClusterRole (read and watch domains,
//! patch their status, create and read templates, get a Node) and a Role
//! for membership Leases in gpuslice-system, each bound to that account only;
//! its admission policies (`compute-domains-admission.yaml`) match that
//! account.

use std::collections::BTreeSet;

use gpuslice_repo_checks::tree::repo_root;
use serde::Deserialize as _;
use serde_norway::Value;

/// The plugin's default `driver_name` (plugin-config/src/lib.rs).
const DEFAULT_DRIVER: &str = "gpu.nvidia.com";

fn documents() -> Vec<Value> {
    documents_of("packaging/rbac/claim-status.yaml")
}

fn documents_of(file: &str) -> Vec<Value> {
    let path = repo_root().join(file);
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_norway::Deserializer::from_str(&text)
        .map(|doc| Value::deserialize(doc).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
        .collect()
}

fn of_kind<'a>(docs: &'a [Value], kind: &str) -> Vec<&'a Value> {
    docs.iter().filter(|d| d["kind"] == kind).collect()
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_sequence()
        .map(|s| {
            s.iter()
                .map(|v| v.as_str().unwrap_or("<not a string>").to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// One rule as a comparable tuple: groups, resources, verbs, resourceNames.
type Rule = (Vec<String>, Vec<String>, Vec<String>, Vec<String>);

/// A ClusterRole's rules as comparable tuples (only the four plain keys).
fn rules_of(role: &Value) -> BTreeSet<Rule> {
    role["rules"]
        .as_sequence()
        .expect("rules is a list")
        .iter()
        .map(|r| {
            let keys: BTreeSet<&str> = r
                .as_mapping()
                .expect("a rule is a mapping")
                .keys()
                .filter_map(Value::as_str)
                .collect();
            assert!(
                keys.is_subset(&BTreeSet::from([
                    "apiGroups",
                    "resources",
                    "verbs",
                    "resourceNames"
                ])),
                "unexpected rule keys {keys:?} (no nonResourceURLs)"
            );
            (
                strings(&r["apiGroups"]),
                strings(&r["resources"]),
                strings(&r["verbs"]),
                strings(&r["resourceNames"]),
            )
        })
        .collect()
}

#[test]
fn the_claim_status_role_grants_exactly_the_two_rules() {
    let docs = documents();
    let kinds: BTreeSet<&str> = docs.iter().filter_map(|d| d["kind"].as_str()).collect();
    assert_eq!(
        kinds,
        BTreeSet::from([
            "Namespace",
            "ServiceAccount",
            "ClusterRole",
            "ClusterRoleBinding"
        ]),
    );
    assert_eq!(docs.len(), 4, "one object of each kind");
    let [role] = of_kind(&docs, "ClusterRole")[..] else {
        panic!("one ClusterRole");
    };
    assert_eq!(role["metadata"]["name"], "gpuslice-claim-status");
    assert!(role.get("aggregationRule").is_none(), "no aggregation");
    let rules = rules_of(role);
    let own = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let want = BTreeSet::from([
        (
            own(&["resource.k8s.io"]),
            own(&["resourceclaims/status"]),
            own(&["patch"]),
            vec![],
        ),
        (
            own(&["resource.k8s.io"]),
            own(&["resourceclaims/driver"]),
            own(&["associated-node:patch"]),
            own(&[DEFAULT_DRIVER]),
        ),
    ]);
    assert_eq!(
        rules, want,
        "the rule set is exactly patch status + associated-node:patch driver"
    );
}

#[test]
fn the_binding_gives_the_role_to_the_plugins_service_account() {
    let docs = documents();
    let [account] = of_kind(&docs, "ServiceAccount")[..] else {
        panic!("one ServiceAccount");
    };
    let [namespace] = of_kind(&docs, "Namespace")[..] else {
        panic!("one Namespace");
    };
    let [binding] = of_kind(&docs, "ClusterRoleBinding")[..] else {
        panic!("one ClusterRoleBinding");
    };
    assert_eq!(account["metadata"]["name"], "gpuslice-dra-plugin");
    assert_eq!(
        account["metadata"]["namespace"],
        namespace["metadata"]["name"]
    );
    assert_eq!(binding["roleRef"]["kind"], "ClusterRole");
    assert_eq!(binding["roleRef"]["name"], "gpuslice-claim-status");
    assert_eq!(binding["roleRef"]["apiGroup"], "rbac.authorization.k8s.io");
    let subjects = binding["subjects"].as_sequence().expect("subjects");
    assert_eq!(subjects.len(), 1, "one subject");
    assert_eq!(subjects[0]["kind"], "ServiceAccount");
    assert_eq!(subjects[0]["name"], account["metadata"]["name"]);
    assert_eq!(subjects[0]["namespace"], account["metadata"]["namespace"]);
}

/// The ComputeDomain identity's rules: the ClusterRole's, the Role's.
fn compute_domain_rules() -> (BTreeSet<Rule>, BTreeSet<Rule>) {
    let own = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let cluster = BTreeSet::from([
        (
            own(&["resource.nvidia.com"]),
            own(&["computedomains"]),
            own(&["get", "list", "watch"]),
            vec![],
        ),
        (
            own(&["resource.nvidia.com"]),
            own(&["computedomains/status"]),
            own(&["patch"]),
            vec![],
        ),
        (
            own(&["resource.k8s.io"]),
            own(&["resourceclaimtemplates"]),
            own(&["create", "get", "list", "watch"]),
            vec![],
        ),
        (own(&[""]), own(&["nodes"]), own(&["get"]), vec![]),
    ]);
    let namespaced = BTreeSet::from([(
        own(&["coordination.k8s.io"]),
        own(&["leases"]),
        own(&["create", "get", "list", "watch", "delete"]),
        vec![],
    )]);
    (cluster, namespaced)
}

/// The one object of `kind` in `docs`.
fn one<'a>(docs: &'a [Value], kind: &str) -> &'a Value {
    let [object] = of_kind(docs, kind)[..] else {
        panic!("one {kind}");
    };
    object
}

#[test]
fn the_compute_domain_identity_is_its_own_account_with_exactly_its_rules() {
    let docs = documents_of("packaging/rbac/compute-domains.yaml");
    let kinds: Vec<&str> = docs.iter().filter_map(|d| d["kind"].as_str()).collect();
    assert_eq!(
        kinds,
        [
            "ServiceAccount",
            "ClusterRole",
            "ClusterRoleBinding",
            "Role",
            "RoleBinding"
        ],
        "one object of each kind (the Namespace is claim-status.yaml's)"
    );
    let account = one(&docs, "ServiceAccount");
    assert_eq!(account["metadata"]["name"], "gpuslice-compute-domains");
    assert_eq!(account["metadata"]["namespace"], "gpuslice-system");
    let claim_status = documents();
    assert_ne!(
        one(&claim_status, "ServiceAccount")["metadata"]["name"],
        account["metadata"]["name"],
        "separate from claim status's account"
    );
    assert_eq!(
        one(&claim_status, "Namespace")["metadata"]["name"],
        "gpuslice-system"
    );

    let (cluster, namespaced) = compute_domain_rules();
    let role = one(&docs, "ClusterRole");
    assert!(role.get("aggregationRule").is_none(), "no aggregation");
    assert_eq!(rules_of(role), cluster);
    let lease_role = one(&docs, "Role");
    assert_eq!(lease_role["metadata"]["namespace"], "gpuslice-system");
    assert_eq!(rules_of(lease_role), namespaced);

    for (binding_kind, role_kind, role) in [
        ("ClusterRoleBinding", "ClusterRole", role),
        ("RoleBinding", "Role", lease_role),
    ] {
        let binding = one(&docs, binding_kind);
        assert_eq!(
            binding["metadata"]["namespace"],
            role["metadata"]["namespace"]
        );
        assert_eq!(binding["roleRef"]["kind"], role_kind);
        assert_eq!(binding["roleRef"]["name"], role["metadata"]["name"]);
        assert_eq!(binding["roleRef"]["apiGroup"], "rbac.authorization.k8s.io");
        let subjects = binding["subjects"].as_sequence().expect("subjects");
        assert_eq!(subjects.len(), 1, "{binding_kind}: one subject");
        assert_eq!(subjects[0]["kind"], "ServiceAccount");
        assert_eq!(subjects[0]["name"], account["metadata"]["name"]);
        assert_eq!(subjects[0]["namespace"], account["metadata"]["namespace"]);
    }
}

#[test]
fn the_compute_domain_policies_match_that_account_and_deny() {
    let docs = documents_of("packaging/rbac/compute-domains-admission.yaml");
    let identity = documents_of("packaging/rbac/compute-domains.yaml");
    let account = one(&identity, "ServiceAccount");
    let username = format!(
        "system:serviceaccount:{}:{}",
        account["metadata"]["namespace"]
            .as_str()
            .expect("a namespace"),
        account["metadata"]["name"].as_str().expect("a name")
    );
    let policies = of_kind(&docs, "ValidatingAdmissionPolicy");
    let bindings = of_kind(&docs, "ValidatingAdmissionPolicyBinding");
    assert_eq!(
        policies.len(),
        4,
        "the four policies of docs/compute-domains.md#access"
    );
    assert_eq!(docs.len(), 8, "each with its binding, nothing else");
    for policy in policies {
        let name = &policy["metadata"]["name"];
        assert_eq!(policy["spec"]["failurePolicy"], "Fail", "{name:?}");
        let conditions = policy["spec"]["matchConditions"]
            .as_sequence()
            .expect("matchConditions");
        assert!(
            conditions
                .iter()
                .any(|c| c["expression"].as_str().is_some_and(
                    |e| e.trim() == format!("request.userInfo.username == \"{username}\"")
                )),
            "{name:?} matches only {username}"
        );
        let binding = bindings
            .iter()
            .find(|b| b["spec"]["policyName"] == *name)
            .unwrap_or_else(|| panic!("{name:?} has a binding"));
        assert_eq!(binding["metadata"]["name"], *name);
        assert_eq!(strings(&binding["spec"]["validationActions"]), ["Deny"]);
    }
}
