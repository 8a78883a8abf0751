//! Membership Leases (policy 3), templates (policy 4), callers whose token
//! names no node, identities the policies leave alone, and requests the
//! tool refuses to evaluate.

use serde_json::{Value, json};

use crate::objects::{
    DOMAIN_UID, domain, entry, lease, lease_write, status_write, template, template_create,
};
use crate::runner::{
    AdmissionError, COMPUTE_DOMAINS_ACCOUNT, NODE_NAME_EXTRA, Operation, Resource, UserInfo,
    available,
};
use crate::{allowed, refused};

const LEASES: &str = "gpuslice-compute-domain-leases";
const TEMPLATES: &str = "gpuslice-compute-domain-templates";

/// A change to an object the plugin writes that a policy refuses: what it
/// is, the change, the refusal's code and what its message says.
type Refused = (&'static str, fn(&mut Value), u16, &'static str);

#[test]
fn a_node_writes_only_its_own_membership_lease() {
    let Some(admission) = available("a_node_writes_only_its_own_membership_lease") else {
        return;
    };
    let a = UserInfo::compute_domains_node("gb200-a");
    for operation in [Operation::Create, Operation::Delete] {
        allowed(
            admission,
            &format!("{operation:?} of its own Lease"),
            &lease_write(&a, operation, lease("gb200-a")),
        );
        refused(
            admission,
            &format!("{operation:?} of gb200-b's Lease"),
            &lease_write(&a, operation, lease("gb200-b")),
            403,
            LEASES,
            "node gb200-a may write only its own membership Leases",
        );
    }
    // Each change of its own Lease, and how it is refused.
    let changes: [Refused; 4] = [
        // Its own label, but another node's name or owner.
        (
            "a Lease named for gb200-b",
            |l| l["metadata"]["name"] = json!(format!("{DOMAIN_UID}.gb200-b")),
            422,
            "is not 7d3c1a52-0b7e-4f4c-9f6e-2a1d5e8c9b10.gb200-a",
        ),
        (
            "a Lease owned by gb200-b's Node",
            |l| l["metadata"]["ownerReferences"][0]["name"] = json!("gb200-b"),
            422,
            "one ownerReference, the Node of its node (v1 Node gb200-a)",
        ),
        (
            "a Lease without an owner (it would outlive its Node)",
            |l| l["metadata"]["ownerReferences"] = json!([]),
            422,
            "so that it is deleted with the Node",
        ),
        (
            "a Lease outside gpuslice-system",
            |l| l["metadata"]["namespace"] = json!("kube-system"),
            403,
            "membership Leases live in the namespace gpuslice-system only",
        ),
    ];
    for (case, change, code, says) in changes {
        let mut changed = lease("gb200-a");
        change(&mut changed);
        let request = lease_write(&a, Operation::Create, changed);
        refused(admission, case, &request, code, LEASES, says);
    }
}

#[test]
fn a_template_needs_its_domain_as_owner() {
    let Some(admission) = available("a_template_needs_its_domain_as_owner") else {
        return;
    };
    let a = UserInfo::compute_domains_node("gb200-a");
    allowed(
        admission,
        "the template the plugin makes, owned by its domain",
        &template_create(&a, template()),
    );
    // Each change of the plugin's template, and how it is refused.
    let changes: [Refused; 6] = [
        (
            "a template without its owner",
            |t| {
                if let Some(metadata) = t["metadata"].as_object_mut() {
                    metadata.remove("ownerReferences");
                }
            },
            422,
            "exactly one ownerReference, its ComputeDomain",
        ),
        (
            "an owner that is not the controller",
            |t| t["metadata"]["ownerReferences"][0]["controller"] = json!(false),
            422,
            "controller: true",
        ),
        (
            "an owner other than the domain its label and config name",
            |t| t["metadata"]["ownerReferences"][0]["uid"] = json!("0b5d9e1f-another-domain"),
            422,
            "the label resource.nvidia.com/computeDomain must be the owning ComputeDomain's uid, 0b5d9e1f-another-domain",
        ),
        (
            "another DeviceClass",
            |t| {
                t["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] =
                    json!("gpu.nvidia.com");
            },
            422,
            "one request, channel, of the DeviceClass compute-domain-default-channel.nvidia.com",
        ),
        (
            "a channel config of another domain",
            |t| {
                t["spec"]["spec"]["devices"]["config"][0]["opaque"]["parameters"]["domainID"] =
                    json!("0b5d9e1f-another-domain");
            },
            422,
            "whose domainID is the owning ComputeDomain's uid",
        ),
        (
            "a finalizer (nothing would clear it: the role has no patch)",
            |t| t["metadata"]["finalizers"] = json!(["resource.nvidia.com/computeDomain"]),
            422,
            "has no finalizer",
        ),
    ];
    for (case, change, code, says) in changes {
        let mut changed = template();
        change(&mut changed);
        let request = template_create(&a, changed);
        refused(admission, case, &request, code, TEMPLATES, says);
    }
}

#[test]
fn a_caller_whose_token_names_no_node_is_refused() {
    let Some(admission) = available("a_caller_whose_token_names_no_node_is_refused") else {
        return;
    };
    let (namespace, account) = COMPUTE_DOMAINS_ACCOUNT;
    let unbound = UserInfo::service_account(namespace, account);
    let mut no_extra = unbound.clone();
    no_extra.extra.clear();
    let mut empty_name = unbound.clone();
    empty_name
        .extra
        .insert(NODE_NAME_EXTRA.to_owned(), Vec::new());
    let says = "the caller's token names no node";
    for (case, caller) in [
        ("a token bound to no object", &unbound),
        ("no extra at all", &no_extra),
        ("an empty node-name extra", &empty_name),
    ] {
        let request = status_write(
            caller,
            domain(0, "NotReady", vec![]),
            domain(0, "NotReady", vec![entry("gb200-a", "10.8.0.1", 0, false)]),
            &["gb200-a"],
        );
        refused(
            admission,
            &format!("status: {case}"),
            &request,
            403,
            "gpuslice-compute-domain-status",
            says,
        );
        refused(
            admission,
            &format!("lease: {case}"),
            &lease_write(caller, Operation::Create, lease("gb200-a")),
            403,
            LEASES,
            says,
        );
        refused(
            admission,
            &format!("template: {case}"),
            &template_create(caller, template()),
            403,
            TEMPLATES,
            says,
        );
    }
}

#[test]
fn other_identities_are_left_to_their_own_rules() {
    let Some(admission) = available("other_identities_are_left_to_their_own_rules") else {
        return;
    };
    // The claim-status identity and a cluster admin: the policies match
    // only gpuslice-compute-domains (RBAC decides for the others).
    let claim_status =
        UserInfo::node_bound("gpuslice-system", "gpuslice-dra-plugin", "gb200-a", "uid-a");
    let admin = UserInfo {
        username: "kubernetes-admin".to_owned(),
        uid: String::new(),
        groups: vec![
            "kubeadm:cluster-admins".to_owned(),
            "system:authenticated".to_owned(),
        ],
        extra: Default::default(),
    };
    for caller in [&claim_status, &admin] {
        let b = entry("gb200-b", "10.8.0.2", 1, false);
        let request = status_write(
            caller,
            domain(0, "NotReady", vec![b]),
            domain(0, "Ready", vec![entry("gb200-b", "10.66.6.6", 1, true)]),
            &["gb200-a", "gb200-b"],
        );
        allowed(admission, &caller.username, &request);
        allowed(
            admission,
            &caller.username,
            &lease_write(caller, Operation::Create, lease("gb200-b")),
        );
    }
}

#[test]
fn the_tool_says_what_it_cannot_evaluate() {
    let Some(admission) = available("the_tool_says_what_it_cannot_evaluate") else {
        return;
    };
    let a = UserInfo::compute_domains_node("gb200-a");
    let mut converted = template_create(&a, template());
    converted.resource = Resource::new("resource.k8s.io", "v1beta2", "resourceclaimtemplates");
    let cases = [
        (
            r#"{"operation":"UPDATE"}"#.to_owned(),
            "resource needs version and resource",
        ),
        (
            serde_json::to_string(&converted).expect("serializes"),
            "the API server would convert the object, this tool cannot; send it as v1",
        ),
        (
            serde_json::to_value(status_write(
                &a,
                domain(0, "NotReady", vec![]),
                domain(0, "NotReady", vec![]),
                &[],
            ))
            .map(|mut v| {
                if let Some(map) = v.as_object_mut() {
                    map.remove("nodes");
                }
                v.to_string()
            })
            .expect("serializes"),
            "nodes is missing",
        ),
        (
            r#"{"operation":"UPDATE","nosuchfield":1}"#.to_owned(),
            "unknown field \"nosuchfield\"",
        ),
    ];
    for (json, says) in cases {
        match admission.ask_json(json.as_bytes()) {
            Err(AdmissionError::Request(why)) => {
                assert!(why.contains(says), "{why:?} lacks {says:?}")
            }
            other => panic!("{json}: {other:?}"),
        }
    }
    // And it answers the next request as usual.
    allowed(
        admission,
        "after the errors",
        &lease_write(&a, Operation::Create, lease("gb200-a")),
    );
}

#[test]
fn a_policy_the_api_server_would_refuse_is_refused_at_start() {
    let Some(_) = available("a_policy_the_api_server_would_refuse_is_refused_at_start") else {
        return;
    };
    let packaged =
        std::fs::read_to_string(crate::runner::repo_root().join(crate::runner::PACKAGED))
            .expect("read the packaged policies");
    let broken = packaged.replacen("expression: variables.caller != ''", "expression: isIP(", 1);
    assert_ne!(broken, packaged);
    let dir = tempfile::tempdir().expect("a temp dir");
    gpuslice_cdi::atomic::write_atomic(dir.path(), "broken.yaml", broken.as_bytes(), 0o644)
        .expect("write");
    let file = dir.path().join("broken.yaml");
    match crate::runner::Admission::start(&[file]) {
        Err(AdmissionError::Files(why)) => assert!(
            why.contains("ValidatingAdmissionPolicy \"gpuslice-compute-domain-status\" would be refused by the API server")
                && why.contains("spec.validations[0].expression"),
            "{why}"
        ),
        other => panic!("{other:?}"),
    }
}
