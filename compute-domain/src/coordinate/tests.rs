use proptest::prelude::*;
use serde_json::json;

use super::*;
use crate::api::Readiness;

fn domain(num_nodes: i64) -> ComputeDomain {
    serde_json::from_value(json!({
        "apiVersion": "resource.nvidia.com/v1beta1",
        "kind": "ComputeDomain",
        "metadata": {"name": "cd", "namespace": "ns", "uid": "5b9c2d0e-7a41-4f3b-9c8d-2e6f1a0b3c4d"},
        "spec": {"numNodes": num_nodes, "channel": {"resourceClaimTemplate": {"name": "cd-channel"}}}
    }))
    .expect("domain")
}

fn view(node: usize, member: bool, ready: bool) -> NodeView {
    NodeView {
        node: format!("node-{node}"),
        ip_address: format!("127.0.0.{node}"),
        clique_id: "c.0".to_owned(),
        member,
        ready,
    }
}

fn turn(domain: &mut ComputeDomain, view: &NodeView, exists: &dyn Fn(&str) -> bool) -> bool {
    match next_status(domain, view, exists, 18).expect("turn") {
        Some(status) => {
            domain.status = Some(status);
            true
        }
        None => false,
    }
}

#[test]
fn four_nodes_join_and_the_domain_is_ready_once_all_four_are() {
    let mut cd = domain(4);
    let all = |_: &str| true;
    for node in 1..=4 {
        assert!(turn(&mut cd, &view(node, true, node != 4), &all));
        assert_eq!(
            cd.status.as_ref().map(|s| s.status),
            Some(Readiness::NotReady)
        );
    }
    assert!(turn(&mut cd, &view(4, true, true), &all));
    let status = cd.status.clone().expect("status");
    assert_eq!(status.status, Readiness::Ready);
    assert_eq!(status.nodes.len(), 4);
    assert!(status.nodes.iter().all(|n| n.clique_id == "c.0"));
    assert!(!turn(&mut cd, &view(2, true, true), &all), "nothing new");
    assert_eq!(
        membership::peers(&status, "node-3"),
        ["127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4"]
    );
}

#[test]
fn a_lost_node_leaves_and_a_node_without_channels_leaves_itself() {
    let mut cd = domain(2);
    let all = |_: &str| true;
    for node in 1..=3 {
        turn(&mut cd, &view(node, true, true), &all);
    }
    let without_2 = |n: &str| n != "node-2";
    assert!(turn(&mut cd, &view(1, true, true), &without_2));
    let names: Vec<_> = cd
        .status
        .as_ref()
        .expect("s")
        .nodes
        .iter()
        .map(|n| n.name.clone())
        .collect();
    assert_eq!(names, ["node-1", "node-3"]);
    assert!(turn(&mut cd, &view(3, false, false), &all));
    let status = cd.status.clone().expect("status");
    assert_eq!(status.nodes.len(), 1);
    assert_eq!(status.status, Readiness::NotReady, "fewer than numNodes");
    assert!(membership::peers(&status, "node-3").is_empty());
}

#[test]
fn a_node_without_a_clique_cannot_join() {
    let mut me = view(1, true, true);
    me.clique_id.clear();
    let err = next_status(&domain(1), &me, &|_| true, 18).expect_err("no clique");
    assert!(err.to_string().contains("no NVLink clique"), "{err}");
}

proptest! {
    /// Whatever order the nodes take their turns in, and whichever are
    /// lost: each member appears once, indices are unique, a second turn of
    /// anyone changes nothing, and the domain is Ready exactly when at
    /// least numNodes members are all ready.
    #[test]
    fn turns_in_any_order_settle(
        turns in proptest::collection::vec((1usize..=6, any::<bool>(), any::<bool>()), 1..40),
        lost in proptest::collection::btree_set(1usize..=6, 0..3),
        num_nodes in 0i64..6,
    ) {
        let mut cd = domain(num_nodes);
        let exists = |n: &str| !lost.iter().any(|l| n == format!("node-{l}"));
        let mut last = std::collections::BTreeMap::new();
        for (node, member, ready) in turns {
            if lost.contains(&node) { continue; }
            turn(&mut cd, &view(node, member, ready), &exists);
            last.insert(node, (member, ready));
        }
        // Everyone takes one more turn with what they last saw.
        for (node, (member, ready)) in &last {
            turn(&mut cd, &view(*node, *member, *ready), &exists);
        }
        let status = cd.status.clone().unwrap_or_default();
        let members: Vec<usize> = last.iter().filter(|(_, (m, _))| *m).map(|(n, _)| *n).collect();
        prop_assert_eq!(status.nodes.len(), members.len());
        let mut indices: Vec<i64> = status.nodes.iter().map(|n| n.index).collect();
        indices.sort_unstable();
        indices.dedup();
        prop_assert_eq!(indices.len(), status.nodes.len());
        for (node, (member, ready)) in &last {
            prop_assert!(!turn(&mut cd, &view(*node, *member, *ready), &exists));
        }
        if last.is_empty() {
            return Ok(());
        }
        let all_ready = last.values().filter(|(m, _)| *m).all(|(_, r)| *r);
        let ready = i64::try_from(members.len()).unwrap_or(i64::MAX) >= num_nodes && all_ready;
        prop_assert_eq!(status.status == Readiness::Ready, ready);
    }
}
