use serde_json::json;

use super::*;

fn entry(name: &str, clique: &str, index: i64, ready: bool) -> ComputeDomainNode {
    ComputeDomainNode {
        name: name.to_owned(),
        ip_address: format!("10.0.0.{}", name.trim_start_matches('n')),
        clique_id: clique.to_owned(),
        index,
        status: if ready {
            Readiness::Ready
        } else {
            Readiness::NotReady
        },
    }
}

#[test]
fn bad_entries_are_skipped_with_why_in_their_place_and_the_rest_read() {
    let nodes = json!([
        {"name": "n1", "ipAddress": "10.0.0.1", "cliqueID": "c.1", "index": 0, "status": "Ready"},
        {"name": "n2", "ipAddress": "", "cliqueID": "c.1", "index": 1, "status": "Ready"},
        {"name": "n3", "ipAddress": "compute-domain-daemon-0003", "cliqueID": "c.1", "index": 2},
        {"name": "n4", "ipAddress": "10.0.0.4", "cliqueID": "c.1", "index": 18},
        {"name": "n5", "ipAddress": "10.0.0.5", "cliqueID": "", "index": 3},
        {"name": "n1", "ipAddress": "10.0.0.9", "cliqueID": "c.1", "index": 4},
        {"ipAddress": "10.0.0.6", "cliqueID": "c.1"},
        {"name": "n7", "ipAddress": "10.0.0.7", "cliqueID": "c.1", "index": 5, "status": "Bogus"},
        {"name": "n8", "ipAddress": "fd00::8", "cliqueID": "c.2", "index": 0},
        "not an object"
    ]);
    let read = read(Some(&nodes));
    assert_eq!(read.total, 10);
    let usable: Vec<(usize, &str)> = read
        .usable
        .iter()
        .map(|p| (p.position, p.node.name.as_str()))
        .collect();
    assert_eq!(usable, [(0, "n1"), (8, "n8")]);
    let skipped: Vec<(usize, Option<&str>, &str)> = read
        .skipped
        .iter()
        .map(|s| (s.position, s.name.as_deref(), s.why.as_str()))
        .collect();
    assert_eq!(skipped.len(), 8, "{skipped:#?}");
    assert!(skipped[0].2.contains("is not an IP address"), "{skipped:?}");
    assert!(skipped[2].2.contains("index 18 is not from 0 to 17"));
    assert!(skipped[3].2.contains("no cliqueID"));
    assert_eq!(skipped[4], (5, Some("n1"), "its name is given twice"));
    assert!(skipped[5].2.contains("does not read"), "{:?}", skipped[5]);
    let names: Vec<(usize, &str)> = read.names().collect();
    assert!(names.contains(&(3, "n4")) && names.contains(&(0, "n1")));
}

#[test]
fn only_the_first_36_entries_are_read() {
    let nodes: Vec<_> = (0..50)
        .map(|i| {
            json!({"name": format!("n{i}"), "ipAddress": "10.1.0.1",
                        "cliqueID": format!("c.{}", i / 18), "index": i % 18})
        })
        .collect();
    let many = read(Some(&json!(nodes)));
    assert_eq!((many.total, many.usable.len()), (50, MAX_ENTRIES));
    assert!(many.skipped.is_empty());
    assert_eq!(read(None), Entries::default());
    assert_eq!(read(Some(&json!({"not": "a list"}))), Entries::default());
}

#[test]
fn a_joining_node_takes_the_lowest_free_index_of_its_clique() {
    let held = [entry("n1", "c.1", 0, true), entry("n3", "c.1", 2, true)];
    let others: Vec<&ComputeDomainNode> = held.iter().collect();
    assert_eq!(choose_index(&others, None, "n5", "c.1", &[], 18), Ok(1));
    assert_eq!(choose_index(&others, None, "n5", "c.2", &[], 18), Ok(0));
    let own = entry("n5", "c.1", 7, false);
    assert_eq!(
        choose_index(&others, Some(&own), "n5", "c.1", &[], 18),
        Ok(7),
        "a member keeps its index"
    );
    let moved = entry("n5", "c.2", 7, false);
    assert_eq!(
        choose_index(&others, Some(&moved), "n5", "c.1", &[], 18),
        Ok(1),
        "an entry of another clique is a new one"
    );
}

#[test]
fn nodes_joining_at_once_take_the_free_indices_in_the_order_of_their_names() {
    let held = [entry("n1", "c.1", 1, true)];
    let others: Vec<&ComputeDomainNode> = held.iter().collect();
    let joining = ["n3", "n4", "n7"];
    let pick = |node: &str| {
        let mut rest: Vec<&str> = joining.iter().copied().filter(|j| *j != node).collect();
        rest.push("n9");
        choose_index(&others, None, node, "c.1", &rest, 18)
    };
    assert_eq!(
        [pick("n3"), pick("n4"), pick("n7"), pick("n9")],
        [Ok(0), Ok(2), Ok(3), Ok(4)]
    );
    // More joining than free: the lowest free.
    let crowd = ["n0", "n2"];
    assert_eq!(choose_index(&others, None, "n5", "c.1", &crowd, 3), Ok(0));
}

#[test]
fn of_two_entries_on_one_index_the_ready_one_else_the_lower_name_keeps_it() {
    let ready = entry("n9", "c.1", 0, true);
    let mine = entry("n2", "c.1", 0, false);
    assert_eq!(
        choose_index(&[&ready], Some(&mine), "n2", "c.1", &[], 18),
        Ok(1)
    );
    let not_ready = entry("n9", "c.1", 0, false);
    assert_eq!(
        choose_index(&[&not_ready], Some(&mine), "n2", "c.1", &[], 18),
        Ok(0),
        "n2 < n9"
    );
    let lower = entry("n1", "c.1", 0, false);
    assert_eq!(
        choose_index(&[&lower], Some(&mine), "n2", "c.1", &[], 18),
        Ok(1)
    );
    let mine_ready = entry("n2", "c.1", 0, true);
    assert_eq!(
        choose_index(&[&lower], Some(&mine_ready), "n2", "c.1", &[], 18),
        Ok(0),
        "a Ready entry keeps its index"
    );
    // The members told: the keeper's address.
    let members = members([&lower, &mine_ready, &entry("n3", "c.2", 0, true)], "c.1");
    assert_eq!(members, BTreeMap::from([(0, "10.0.0.2".to_owned())]));
}

#[test]
fn a_full_clique_and_a_node_off_the_fabric_are_refused_saying_why() {
    let held = [entry("n1", "c.1", 0, true), entry("n2", "c.1", 1, true)];
    let others: Vec<&ComputeDomainNode> = held.iter().collect();
    let full = choose_index(&others, None, "n3", "c.1", &[], 2).expect_err("full");
    assert!(full.to_string().contains("already has 2 nodes"), "{full}");
    let off = choose_index(&others, None, "n3", "", &[], 2).expect_err("no clique");
    assert!(
        off.to_string()
            .contains("not on a multi-node NVLink fabric"),
        "{off}"
    );
}

#[test]
fn ready_needs_num_nodes_entries_all_ready_as_nvidias_controller_says() {
    let none: [&ComputeDomainNode; 0] = [];
    assert_eq!(
        readiness(0, none, 0),
        Readiness::Ready,
        "0 asked, none there"
    );
    let (a, b) = (entry("n1", "c.1", 0, true), entry("n2", "c.1", 1, false));
    assert_eq!(readiness(2, [&a], 0), Readiness::NotReady, "one of two");
    assert_eq!(readiness(2, [&a, &b], 0), Readiness::NotReady);
    let b = entry("n2", "c.1", 1, true);
    assert_eq!(readiness(2, [&a, &b], 0), Readiness::Ready);
    assert_eq!(
        readiness(2, [&a, &b], 1),
        Readiness::NotReady,
        "an entry that could not be read is not Ready"
    );
}
