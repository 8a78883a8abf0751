use serde_json::json;

use super::*;

fn domain(spec: serde_json::Value) -> ComputeDomain {
    serde_json::from_value(json!({
        "apiVersion": "resource.nvidia.com/v1beta1",
        "kind": "ComputeDomain",
        "metadata": {"name": "cd", "namespace": "ml", "uid": "u-1"},
        "spec": spec,
    }))
    .expect("a ComputeDomain")
}

#[test]
fn nvidias_defaults_apply_a_single_channel_and_no_node_count() {
    let cd = domain(json!({"channel": {"resourceClaimTemplate": {"name": "imex-channel-0"}}}));
    assert_eq!(cd.validate(), Ok(()));
    let channel = cd.channel().expect("a channel");
    assert_eq!(channel.allocation_mode, AllocationMode::Single);
    assert_eq!(cd.spec.num_nodes, 0);
}

#[test]
fn each_broken_rule_is_refused_saying_what_to_fix() {
    let template = |name: &str| json!({"channel": {"resourceClaimTemplate": {"name": name}}});
    let cases = [
        (json!({"numNodes": 2}), "spec.channel is missing"),
        (
            json!({"numNodes": -1, "channel": {"resourceClaimTemplate": {"name": "t"}}}),
            "must be 0 or more",
        ),
        (template(""), "it is empty"),
        (template("Imex"), "lowercase letters"),
        (template("imex-"), "starting and ending"),
        (template("a..b"), "starting and ending"),
        (template(&"a".repeat(254)), "longer than 253"),
    ];
    for (spec, said) in cases {
        let error = domain(spec.clone())
            .validate()
            .expect_err("refused")
            .to_string();
        assert!(error.contains(said), "{spec}: {error}");
    }
}

#[test]
fn an_object_of_another_kind_is_not_taken_for_a_compute_domain() {
    let mut cd = domain(json!({"channel": {"resourceClaimTemplate": {"name": "t"}}}));
    cd.kind = "ComputeDomainClique".to_owned();
    let error = cd.validate().expect_err("refused").to_string();
    assert!(
        error.contains("write apiVersion: resource.nvidia.com/v1beta1 and kind: ComputeDomain"),
        "{error}"
    );
}

#[test]
fn a_status_names_each_node_once_and_each_clique_index_once() {
    let node = |name: &str, clique: &str, index: i64| ComputeDomainNode {
        name: name.to_owned(),
        ip_address: "10.0.0.1".to_owned(),
        clique_id: clique.to_owned(),
        index,
        status: Readiness::Ready,
    };
    let mut cd = domain(json!({"channel": {"resourceClaimTemplate": {"name": "t"}}}));
    let status = |nodes| ComputeDomainStatus {
        status: Readiness::NotReady,
        nodes,
    };
    cd.status = Some(status(vec![
        node("a", "c.1", 0),
        node("b", "c.1", 1),
        node("c", "c.2", 0),
    ]));
    assert_eq!(cd.validate(), Ok(()));
    cd.status = Some(status(vec![node("a", "c.1", 0), node("a", "c.2", 0)]));
    assert_eq!(cd.validate(), Err(ApiError::NodeTwice("a".to_owned())));
    cd.status = Some(status(vec![node("a", "c.1", 0), node("b", "c.1", 0)]));
    assert!(matches!(
        cd.validate(),
        Err(ApiError::IndexTwice { index: 0, .. })
    ));
}

#[test]
fn the_status_reads_and_writes_nvidias_field_names() {
    let status: ComputeDomainStatus = serde_json::from_value(json!({
        "status": "Ready",
        "nodes": [{"name": "n1", "ipAddress": "10.0.0.1", "cliqueID": "abc.1", "index": 0, "status": "Ready"}],
    }))
    .expect("a status");
    assert_eq!(status.nodes[0].clique_id, "abc.1");
    let back = serde_json::to_value(&status).expect("JSON");
    assert_eq!(back["nodes"][0]["ipAddress"], "10.0.0.1");
    assert_eq!(back["nodes"][0]["cliqueID"], "abc.1");
    assert_eq!(back["nodes"][0]["index"], 0);
    assert_eq!(back["status"], "Ready");
}
