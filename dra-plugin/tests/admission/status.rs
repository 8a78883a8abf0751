//! A node's writes of a ComputeDomain's status: its own entry (policy 1,
//! gpuslice-compute-domain-status) and the entries of Nodes that are gone
//! (policy 2, gpuslice-compute-domain-gone-nodes, evaluated once per Node).

use crate::objects::{self, domain, entry, status_write};
use crate::runner::{UserInfo, available};
use crate::{GONE, STATUS, allowed, refused};

#[test]
fn a_node_adds_changes_and_removes_its_own_entry() {
    let Some(admission) = available("a_node_adds_changes_and_removes_its_own_entry") else {
        return;
    };
    let a = UserInfo::compute_domains_node("gb200-a");
    let b_entry = entry("gb200-b", "10.8.0.2", 1, true);
    let cluster = ["gb200-a", "gb200-b"];
    let cases = [
        (
            "add",
            domain(0, "NotReady", vec![b_entry.clone()]),
            domain(
                0,
                "NotReady",
                vec![b_entry.clone(), entry("gb200-a", "10.8.0.1", 0, false)],
            ),
        ),
        (
            "change (Ready, and the domain Ready with it)",
            domain(
                0,
                "NotReady",
                vec![b_entry.clone(), entry("gb200-a", "10.8.0.1", 0, false)],
            ),
            domain(
                0,
                "Ready",
                vec![b_entry.clone(), entry("gb200-a", "10.8.0.1", 0, true)],
            ),
        ),
        (
            "change its address (IPv6)",
            domain(0, "NotReady", vec![entry("gb200-a", "10.8.0.1", 0, false)]),
            domain(0, "NotReady", vec![entry("gb200-a", "fd00::a", 0, false)]),
        ),
        (
            "remove",
            domain(
                0,
                "NotReady",
                vec![b_entry.clone(), entry("gb200-a", "10.8.0.1", 0, false)],
            ),
            domain(0, "NotReady", vec![b_entry]),
        ),
    ];
    for (case, old, new) in cases {
        allowed(admission, case, &status_write(&a, old, new, &cluster));
    }
}

#[test]
fn another_nodes_entry_is_refused_changed_or_added() {
    let Some(admission) = available("another_nodes_entry_is_refused_changed_or_added") else {
        return;
    };
    let a = UserInfo::compute_domains_node("gb200-a");
    let b = entry("gb200-b", "10.8.0.2", 1, false);
    let cluster = ["gb200-a", "gb200-b", "gb200-c"];
    let cases = [
        (
            "another's entry made Ready",
            vec![b.clone()],
            vec![entry("gb200-b", "10.8.0.2", 1, true)],
            "gb200-b",
        ),
        (
            "another's address moved (a peer every member would dial)",
            vec![b.clone()],
            vec![entry("gb200-b", "10.66.6.6", 1, false)],
            "gb200-b",
        ),
        (
            "another's entry added beside its own",
            vec![],
            vec![
                entry("gb200-a", "10.8.0.1", 0, false),
                entry("gb200-c", "10.8.0.3", 2, false),
            ],
            "gb200-c",
        ),
        (
            "an entry of a node that does not exist added",
            vec![],
            vec![entry("ghost", "10.8.0.9", 5, true)],
            "ghost",
        ),
    ];
    for (case, old, new, whose) in cases {
        let request = status_write(
            &a,
            domain(0, "NotReady", old),
            domain(0, "NotReady", new),
            &cluster,
        );
        refused(
            admission,
            case,
            &request,
            403,
            STATUS,
            &format!(
                "node gb200-a may add, change or remove only its own entry of status.nodes, and it writes the entry of {whose}"
            ),
        );
    }
}

#[test]
fn an_entry_without_an_ip_address_is_refused() {
    let Some(admission) = available("an_entry_without_an_ip_address_is_refused") else {
        return;
    };
    let a = UserInfo::compute_domains_node("gb200-a");
    for bad in [
        "",
        "10.0.0.300",
        "gb200-a.rack.example",
        "10.0.0.1/24",
        "::ffff:10.0.0.1",
    ] {
        let request = status_write(
            &a,
            domain(0, "NotReady", vec![]),
            domain(0, "NotReady", vec![entry("gb200-a", bad, 0, false)]),
            &["gb200-a"],
        );
        refused(
            admission,
            &format!("ipAddress {bad:?}"),
            &request,
            422,
            STATUS,
            &format!(
                "the entry of node gb200-a has ipAddress \"{bad}\", which is not an IP address"
            ),
        );
    }
    for (case, index, clique) in [
        ("index 18", 18, "9b2f.1"),
        ("index -1", -1, "9b2f.1"),
        ("no clique", 0, ""),
    ] {
        let mut own = entry("gb200-a", "10.8.0.1", index, false);
        own["cliqueID"] = clique.into();
        let request = status_write(
            &a,
            domain(0, "NotReady", vec![]),
            domain(0, "NotReady", vec![own]),
            &["gb200-a"],
        );
        let says = if clique.is_empty() {
            "needs a cliqueID"
        } else {
            "needs an index from 0 to 17"
        };
        refused(admission, case, &request, 422, STATUS, says);
    }
}

#[test]
fn a_list_past_the_cap_is_refused() {
    let Some(admission) = available("a_list_past_the_cap_is_refused") else {
        return;
    };
    let a = UserInfo::compute_domains_node("gb200-a");
    let members = |n: i64| -> Vec<serde_json::Value> {
        (0..n)
            .map(|i| {
                entry(
                    &format!("gb200-{i:02}"),
                    &format!("10.8.0.{}", i + 1),
                    i % 18,
                    false,
                )
            })
            .collect()
    };
    // 35 others and its own: 36, the cap, admitted.
    let mut at_cap = members(35);
    at_cap.push(entry("gb200-a", "10.8.1.1", 17, false));
    allowed(
        admission,
        "36 entries",
        &status_write(
            &a,
            domain(0, "NotReady", members(35)),
            domain(0, "NotReady", at_cap),
            &["gb200-a"],
        ),
    );
    // 36 others and its own: 37.
    let mut past = members(36);
    past.push(entry("gb200-a", "10.8.1.1", 17, false));
    refused(
        admission,
        "37 entries",
        &status_write(
            &a,
            domain(0, "NotReady", members(36)),
            domain(0, "NotReady", past),
            &["gb200-a"],
        ),
        422,
        STATUS,
        "status.nodes would hold 37 entries; at most 36",
    );
    // A hostile list of 5,000 entries costs the API server little: the cap
    // is checked before anything that looks at every entry.
    let flood = members(5000);
    refused(
        admission,
        "5,000 entries",
        &status_write(
            &a,
            domain(0, "NotReady", vec![]),
            domain(0, "NotReady", flood),
            &["gb200-a"],
        ),
        422,
        STATUS,
        "status.nodes would hold 5000 entries",
    );
}

#[test]
fn ready_needs_every_entry_ready_and_num_nodes_of_them() {
    let Some(admission) = available("ready_needs_every_entry_ready_and_num_nodes_of_them") else {
        return;
    };
    let a = UserInfo::compute_domains_node("gb200-a");
    let own_ready = entry("gb200-a", "10.8.0.1", 0, true);
    let cluster = ["gb200-a", "gb200-b"];
    let b_not_ready = entry("gb200-b", "10.8.0.2", 1, false);
    refused(
        admission,
        "Ready with a NotReady member",
        &status_write(
            &a,
            domain(0, "NotReady", vec![b_not_ready.clone()]),
            domain(0, "Ready", vec![b_not_ready, own_ready.clone()]),
            &cluster,
        ),
        422,
        STATUS,
        "1 of 2 entries are Ready, numNodes is 0",
    );
    refused(
        admission,
        "Ready with fewer than numNodes",
        &status_write(
            &a,
            domain(2, "NotReady", vec![]),
            domain(2, "Ready", vec![own_ready.clone()]),
            &cluster,
        ),
        422,
        STATUS,
        "1 of 1 entries are Ready, numNodes is 2",
    );
    let b_ready = entry("gb200-b", "10.8.0.2", 1, true);
    allowed(
        admission,
        "Ready with numNodes members, all Ready",
        &status_write(
            &a,
            domain(2, "NotReady", vec![b_ready.clone()]),
            domain(2, "Ready", vec![b_ready.clone(), own_ready.clone()]),
            &cluster,
        ),
    );
    allowed(
        admission,
        "NotReady at any time",
        &status_write(
            &a,
            domain(2, "Ready", vec![b_ready.clone(), own_ready.clone()]),
            domain(2, "NotReady", vec![b_ready, own_ready]),
            &cluster,
        ),
    );
}

#[test]
fn another_nodes_entry_is_removed_only_once_its_node_is_gone() {
    let Some(admission) = available("another_nodes_entry_is_removed_only_once_its_node_is_gone")
    else {
        return;
    };
    let a = UserInfo::compute_domains_node("gb200-a");
    let own = entry("gb200-a", "10.8.0.1", 0, false);
    let b = entry("gb200-b", "10.8.0.2", 1, false);
    let old = domain(0, "NotReady", vec![own.clone(), b]);
    let new = domain(0, "NotReady", vec![own]);
    refused(
        admission,
        "gb200-b's entry removed while its Node exists",
        &status_write(
            &a,
            old.clone(),
            new.clone(),
            &["gb200-a", "gb200-b", "gb200-c"],
        ),
        403,
        GONE,
        "node gb200-a may not remove the entry of node gb200-b from status.nodes: that Node exists",
    );
    allowed(
        admission,
        "gb200-b's entry removed once its Node is gone",
        &status_write(&a, old.clone(), new.clone(), &["gb200-a", "gb200-c"]),
    );
    allowed(
        admission,
        "with no Node at all (no param: parameterNotFoundAction Allow)",
        &status_write(&a, old, new, &[]),
    );
}

/// Policy 2 is evaluated once per Node of the cluster, each verdict must
/// allow: one Node of a thousand refusing is enough. Prints
/// what a status write costs the evaluation with Nodes of a real kubelet's
/// size (the API server converts every Node for every evaluation).
#[test]
fn a_status_write_is_evaluated_against_every_node() {
    let Some(admission) = available("a_status_write_is_evaluated_against_every_node") else {
        return;
    };
    let a = UserInfo::compute_domains_node("gb200-a");
    let names: Vec<String> = (0..1000).map(|i| format!("node-{i:04}")).collect();
    let mut cluster: Vec<serde_json::Value> =
        names.iter().map(|n| objects::kubelet_node(n)).collect();
    cluster.push(objects::kubelet_node("gb200-a"));
    // 35 members, the last of them node-0999, and gb200-a.
    let members: Vec<_> = (0..35_i64)
        .zip(&names[965..])
        .map(|(k, name)| entry(name, &format!("10.8.0.{}", k + 1), k % 18, true))
        .collect();
    let mut with_own = members.clone();
    with_own.push(entry("gb200-a", "10.8.1.1", 17, true));
    let mut request = status_write(
        &a,
        domain(0, "NotReady", members),
        domain(0, "NotReady", with_own.clone()),
        &[],
    );
    request.nodes = cluster;
    let started = std::time::Instant::now();
    allowed(admission, "its own entry added, 1,001 Nodes", &request);
    let took = started.elapsed();
    request.old_object = Some(domain(0, "NotReady", with_own.clone()));
    with_own.retain(|e| e["name"] != "node-0999");
    request.object = Some(domain(0, "NotReady", with_own));
    refused(
        admission,
        "node-0999's entry removed, one of 1,001 Nodes",
        &request,
        403,
        GONE,
        "may not remove the entry of node node-0999 from status.nodes: that Node exists",
    );
    eprintln!(
        "a status write with 36 entries against 1,001 Nodes of about 13 KB: {took:?} in the tool (JSON included)"
    );
}
