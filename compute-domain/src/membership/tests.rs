use std::collections::BTreeSet;

use proptest::prelude::*;

use super::*;

fn report(node: &str, clique: &str, ready: bool) -> Report {
    Report {
        node: node.to_owned(),
        ip_address: format!("10.0.0.{}", node.trim_start_matches('n')),
        clique_id: clique.to_owned(),
        ready,
    }
}

fn indices(status: &ComputeDomainStatus) -> Vec<(String, i64)> {
    status
        .nodes
        .iter()
        .map(|n| (n.name.clone(), n.index))
        .collect()
}

#[test]
fn a_new_member_takes_the_lowest_free_index_of_its_clique() {
    let mut status = ComputeDomainStatus::default();
    for node in ["n1", "n2", "n3"] {
        status = join(&status, &report(node, "c.1", true), 18).expect("joins");
    }
    status = join(&status, &report("n4", "c.2", true), 18).expect("joins");
    assert_eq!(
        indices(&status),
        [("n1", 0), ("n2", 1), ("n3", 2), ("n4", 0)].map(|(n, i)| (n.to_owned(), i))
    );
    status = leave(&status, "n2");
    status = join(&status, &report("n5", "c.1", true), 18).expect("joins");
    assert_eq!(
        indices(&status),
        [("n1", 0), ("n3", 2), ("n4", 0), ("n5", 1)].map(|(n, i)| (n.to_owned(), i)),
        "n5 fills n2's gap; n3 keeps 2"
    );
}

#[test]
fn a_full_clique_and_a_node_off_the_fabric_are_refused_saying_why() {
    let mut status = ComputeDomainStatus::default();
    for node in ["n1", "n2"] {
        status = join(&status, &report(node, "c.1", true), 2).expect("joins");
    }
    let full = join(&status, &report("n3", "c.1", true), 2).expect_err("full");
    assert!(full.to_string().contains("already has 2 nodes"), "{full}");
    let off = join(&status, &report("n3", "", true), 2).expect_err("no clique");
    assert!(
        off.to_string()
            .contains("not on a multi-node NVLink fabric"),
        "{off}"
    );
}

#[test]
fn ready_needs_num_nodes_members_all_ready_as_nvidias_controller_says() {
    let mut status = ComputeDomainStatus::default();
    assert_eq!(
        readiness(0, &status),
        Readiness::Ready,
        "0 nodes asked, none there"
    );
    status = join(&status, &report("n1", "c.1", true), 18).expect("joins");
    assert_eq!(readiness(2, &status), Readiness::NotReady, "one of two");
    status = join(&status, &report("n2", "c.1", false), 18).expect("joins");
    assert_eq!(
        readiness(2, &status),
        Readiness::NotReady,
        "n2's daemon not ready"
    );
    status = join(&status, &report("n2", "c.1", true), 18).expect("reports again");
    assert_eq!(readiness(2, &status), Readiness::Ready);
    assert_eq!(
        indices(&status)[1],
        ("n2".to_owned(), 1),
        "a report again keeps the index"
    );
}

#[test]
fn peers_are_the_members_of_the_nodes_own_clique_in_index_order() {
    let mut status = ComputeDomainStatus::default();
    for (node, clique) in [("n3", "c.1"), ("n1", "c.1"), ("n2", "c.2")] {
        status = join(&status, &report(node, clique, true), 18).expect("joins");
    }
    assert_eq!(peers(&status, "n1"), ["10.0.0.3", "10.0.0.1"]);
    assert_eq!(peers(&status, "n2"), ["10.0.0.2"]);
    assert!(peers(&status, "n9").is_empty());
}

#[derive(Debug, Clone)]
enum Op {
    Join { node: u8, clique: u8, ready: bool },
    Leave { node: u8 },
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        3 => (0u8..7, 0u8..2, any::<bool>())
            .prop_map(|(node, clique, ready)| Op::Join { node, clique, ready }),
        1 => (0u8..7).prop_map(|node| Op::Leave { node }),
    ];
    proptest::collection::vec(op, 0..40)
}

const MAX: i64 = 4;

proptest! {
    /// Whatever nodes join and leave: one entry per node, one node per
    /// (clique, index), every index below the maximum and the lowest free
    /// one when taken, the others' indices untouched, and each node's peers
    /// exactly its clique in index order.
    #[test]
    fn membership_rules_hold_for_any_joins_and_leaves(ops in ops()) {
        let mut status = ComputeDomainStatus::default();
        for op in ops {
            let before = status.clone();
            let moved = match op {
                Op::Join { node, clique, ready } => {
                    let r = report(&format!("n{node}"), &format!("c.{clique}"), ready);
                    match join(&status, &r, MAX) {
                        Ok(next) => status = next,
                        Err(MembershipError::CliqueFull { .. }) => {
                            let members = before.nodes.iter().filter(|n| n.clique_id == r.clique_id).count();
                            prop_assert_eq!(i64::try_from(members).unwrap(), MAX);
                        }
                        Err(e) => prop_assert!(false, "{}", e),
                    }
                    format!("n{node}")
                }
                Op::Leave { node } => {
                    status = leave(&status, &format!("n{node}"));
                    format!("n{node}")
                }
            };
            let names: BTreeSet<&str> = status.nodes.iter().map(|n| n.name.as_str()).collect();
            prop_assert_eq!(names.len(), status.nodes.len());
            let slots: BTreeSet<(&str, i64)> =
                status.nodes.iter().map(|n| (n.clique_id.as_str(), n.index)).collect();
            prop_assert_eq!(slots.len(), status.nodes.len());
            for n in &status.nodes {
                prop_assert!((0..MAX).contains(&n.index));
                if let Some(old) = before.nodes.iter().find(|o| o.name == n.name && n.name != moved) {
                    prop_assert_eq!((old.index, &old.clique_id), (n.index, &n.clique_id));
                }
                if n.name == moved && !before.nodes.iter().any(|o| o.name == n.name && o.clique_id == n.clique_id) {
                    let others: Vec<&ComputeDomainNode> =
                        status.nodes.iter().filter(|o| o.name != n.name).collect();
                    let lowest = (0..).find(|i| !others.iter().any(|o| o.clique_id == n.clique_id && o.index == *i));
                    prop_assert_eq!(Some(n.index), lowest);
                }
                let mut clique: Vec<&ComputeDomainNode> =
                    status.nodes.iter().filter(|o| o.clique_id == n.clique_id).collect();
                clique.sort_by_key(|o| o.index);
                let expected: Vec<String> = clique.iter().map(|o| o.ip_address.clone()).collect();
                prop_assert_eq!(peers(&status, &n.name), expected);
            }
        }
    }
}
