//! ComputeDomains end to end on simulated GB200 nodes
//! ([`crate::compute_domains_cluster`]: real gpusliceds and IMEX stand-ins, each
//! node's plugin side with its own token) against
//! [`crate::fake_compute_domains`], whose writes of the compute-domains identity
//! go through the packaged role and, where the admission tool is built,
//! Kubernetes' own evaluation of the packaged admission policies. NVIDIA's
//! nvbandwidth-test-job-1.yaml goes in unchanged.
//!
//! One domain's life: it forms Ready without a flap and with every member's
//! daemon knowing and reaching the others; workloads hold imports while a
//! node joins and one leaves (no daemon restarts, no import lost, the
//! others READY throughout); a lost Node's entry is removed; at rest the
//! nodes send nothing but their watches; a killed daemon, a restarted
//! gpusliced; the domain deleted. Then tenancy: two domains on one clique
//! kept apart, and claims refused that name another namespace's domain, a
//! domain being deleted or none, or another node's channel.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::admission;
use crate::compute_domains_cluster::{
    BOUND, Cluster, addresses, addresses_of, flaps, kill_daemons, member_addresses, members,
    nvidia_domain, ready_members, tools,
};
use crate::fake_compute_domains::Kind;
use crate::peers::write;

const DOMAIN: &str = "d0000000-0000-4000-8000-000000000001";

/// The plugin's refusal to prepare the claim `namespace/name` (uid
/// [`claim_uid`] of `n`, channel `parameters`) allocated on node `on`.
fn refused_on(
    cluster: &Cluster,
    on: usize,
    n: usize,
    (namespace, name): (&str, &str),
    parameters: &Value,
) -> String {
    let uid = claim_uid(n);
    cluster.put_claim(on, &uid, namespace, name, parameters);
    cluster
        .prepare_claim(on, &uid, namespace, name)
        .expect_err("refused")
}

fn claim_uid(n: usize) -> String {
    format!("c0000000-0000-4000-8000-{n:012}")
}

/// A fake-imex-workload on node `i`'s daemon of `DOMAIN`.
fn workload(cluster: &Cluster, i: usize, args: &[&str]) -> Child {
    let tool = tools().expect("tools").join("fake-imex-workload");
    Command::new(tool)
        .arg("-c")
        .arg(cluster.imex_config(i, DOMAIN))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("fake-imex-workload")
}

/// An import of `handle` from `entry` held on node `i`, once it holds.
fn import(cluster: &Cluster, i: usize, entry: &str, handle: &str) -> Child {
    let mut child = workload(cluster, i, &["import", entry, handle]);
    let mut line = String::new();
    let stdout = child.stdout.as_mut().expect("stdout");
    BufReader::new(stdout).read_line(&mut line).expect("a line");
    assert!(line.starts_with("imported"), "node {}: {line:?}", i + 1);
    child
}

/// The IMEX name of node `name`'s entry.
fn entry_name(cluster: &Cluster, name: &str) -> String {
    let status = cluster
        .api
        .state()
        .status("nvbandwidth-test-compute-domain-1");
    let index = (status["nodes"].as_array().into_iter().flatten())
        .find(|n| n["name"] == name)
        .and_then(|n| n["index"].as_u64())
        .expect("an entry");
    format!("compute-domain-daemon-{index:04}")
}

fn pids(cluster: &Cluster, nodes: &[usize]) -> Vec<u32> {
    nodes
        .iter()
        .map(|i| cluster.domains(*i).domains[0].pid)
        .collect()
}

/// Whether every one of `nodes`' daemons answers READY.
fn all_ready(cluster: &Cluster, nodes: &[usize]) -> bool {
    nodes
        .iter()
        .all(|i| cluster.domains(*i).domains.first().is_some_and(|d| d.ready))
}

/// Waits for `done` while checking that `nodes`' daemons stay READY.
fn stay_ready_until(cluster: &Cluster, nodes: &[usize], what: &str, done: impl Fn(&Value) -> bool) {
    let deadline = Instant::now() + BOUND;
    loop {
        assert!(
            all_ready(cluster, nodes),
            "{what}: a daemon of {nodes:?} went not READY"
        );
        if done(
            &cluster
                .api
                .state()
                .status("nvbandwidth-test-compute-domain-1"),
        ) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: {}",
            cluster
                .api
                .state()
                .status("nvbandwidth-test-compute-domain-1")
        );
        cluster.api.wait_for(Duration::from_millis(100), |_| false);
    }
}

fn alive(child: &mut Child) -> bool {
    child.try_wait().expect("try_wait").is_none()
}

#[test]
#[allow(
    clippy::too_many_lines,
    reason = "one domain's life, read top to bottom"
)]
fn sim_nvidias_compute_domain_forms_holds_its_imports_and_stays_quiet() {
    let Some(tools) = tools() else { return };
    let admission = admission::available("sim_nvidias_compute_domain_forms_holds_its_imports");
    let mut cluster = Cluster::start(&tools, &addresses("127.0.0", 41, 4), admission);
    let domain = nvidia_domain("nvbandwidth-test-job-1.yaml");
    let name = "nvbandwidth-test-compute-domain-1";
    let template = "nvbandwidth-test-compute-domain-1-channel";
    cluster.api.mutate(|s| s.put_domain(domain.clone(), DOMAIN));
    assert!(
        cluster.api.wait_for(BOUND, |s| s.templates().len() == 1),
        "a node makes the workload template"
    );
    {
        let state = cluster.api.state();
        let made = &state.templates()[&("default".to_owned(), template.to_owned())];
        assert_eq!(made["metadata"]["ownerReferences"][0]["uid"], DOMAIN);
        assert_eq!(made["metadata"]["ownerReferences"][0]["controller"], true);
        assert!(made["metadata"]["finalizers"].is_null());
        assert!(state.refused.is_empty(), "{:?}", state.refused);
    }

    // Two workers at once (numNodes 2): Ready once, with no flap, and no
    // entry Ready before its daemon knows and reaches the other.
    std::thread::scope(|scope| {
        for i in 0..2 {
            let cluster = &cluster;
            scope.spawn(move || {
                cluster
                    .prepare(i, &claim_uid(i), "default", template)
                    .expect("prepared")
            });
        }
    });
    cluster.wait_status("default", name, "two members Ready", ready_members(2));
    let two = addresses_of(&cluster.nodes[..2]);
    for i in 0..2 {
        let d = &cluster.domains(i).domains[0];
        assert!(d.members_known && d.connected, "node {}: {d:?}", i + 1);
        assert_eq!(member_addresses(d), two);
    }
    {
        let state = cluster.api.state();
        let history = &state.history[&("default".to_owned(), name.to_owned())];
        assert!(
            !flaps(history),
            "Ready then NotReady while forming: {history:#?}"
        );
        assert_eq!(state.conflicts, 0);
        let leases = state.leases();
        assert_eq!(leases.len(), 2, "{leases:?}");
        for ((ns, lease), object) in leases {
            assert_eq!(ns, "gpuslice-system");
            let node = object["metadata"]["labels"]["gpuslice.dev/node"]
                .as_str()
                .expect("node");
            assert_eq!(lease, &format!("{DOMAIN}.{node}"));
            assert_eq!(
                object["metadata"]["ownerReferences"][0]["uid"],
                format!("uid-of-node-{node}")
            );
        }
        for node in ["node-1", "node-2"] {
            assert!(
                state.requests.get(node).is_some_and(|n| *n > 0),
                "{node} wrote with its own token"
            );
        }
    }

    // Workloads: node 1 exports, node 2 imports from it.
    let exported = workload(&cluster, 0, &["export", "h1"])
        .wait_with_output()
        .expect("export");
    assert!(exported.status.success(), "{exported:?}");
    let mut held = vec![import(&cluster, 1, &entry_name(&cluster, "node-1"), "h1")];
    let before = pids(&cluster, &[0, 1]);

    // Node 3 joins: no daemon restarts, no import lost, 1 and 2 READY
    // throughout; it imports too.
    cluster
        .prepare(2, &claim_uid(2), "default", template)
        .expect("node 3 prepared");
    stay_ready_until(&cluster, &[0, 1], "node 3 joins", ready_members(3));
    assert_eq!(pids(&cluster, &[0, 1]), before, "no daemon restarted");
    held.push(import(&cluster, 2, &entry_name(&cluster, "node-1"), "h1"));
    let before = pids(&cluster, &[0, 1, 2]);

    // Node 4 joins, then leaves.
    cluster
        .prepare(3, &claim_uid(3), "default", template)
        .expect("node 4 prepared");
    stay_ready_until(&cluster, &[0, 1, 2], "node 4 joins", ready_members(4));
    cluster.unprepare(3, &claim_uid(3));
    stay_ready_until(&cluster, &[0, 1, 2], "node 4 leaves", ready_members(3));
    assert_eq!(pids(&cluster, &[0, 1, 2]), before, "no daemon restarted");
    assert!(held.iter_mut().all(alive), "an import was lost");
    assert!(
        cluster.api.wait_for(BOUND, |s| s.leases().len() == 3),
        "node 4's Lease goes after its entry"
    );
    let three = addresses_of(&cluster.nodes[..3]);
    for i in 0..3 {
        cluster.wait_node(i, "knows the three", |r| {
            r.domains
                .first()
                .is_some_and(|d| member_addresses(d) == three && d.members_known)
        });
    }

    // Node 3 is lost: its plugin and gpusliced gone, its Node deleted; the
    // garbage collector takes its Lease, a member removes its entry.
    let mut lost = held.pop().expect("node 3's import");
    cluster.stop_plugin(2);
    drop(cluster.nodes[2].daemon.take());
    kill_daemons(&cluster.nodes[2].dir);
    let _ = lost.kill();
    let _ = lost.wait();
    cluster.api.mutate(|s| s.delete_node("node-3"));
    cluster.wait_status("default", name, "node 3's entry removed", ready_members(2));
    assert_eq!(pids(&cluster, &[0, 1]), before[..2], "no daemon restarted");
    assert!(held.iter_mut().all(alive), "node 2's import holds");
    for i in 0..2 {
        cluster.wait_node(i, "knows the two", |r| {
            r.domains
                .first()
                .is_some_and(|d| member_addresses(d) == two && d.connected)
        });
    }

    // At rest (nothing written for 3 s): no request from any node's plugin
    // over the next 5 s, no watch opened again.
    let counts = |c: &Cluster| {
        let s = c.api.state();
        (s.requests.clone(), s.watches.clone(), s.version)
    };
    let deadline = Instant::now() + BOUND;
    let settled = loop {
        let before = counts(&cluster);
        let version = before.2;
        if !cluster
            .api
            .wait_for(Duration::from_secs(3), |s| s.version != version)
        {
            break before;
        }
        assert!(Instant::now() < deadline, "the domain never came to rest");
    };
    cluster.api.wait_for(Duration::from_secs(5), |_| false);
    let after = counts(&cluster);
    if after != settled {
        let state = cluster.api.state();
        let history = &state.history[&("default".to_owned(), name.to_owned())];
        let tail: Vec<_> = history
            .iter()
            .rev()
            .take(4)
            .map(|(_, s)| s.clone())
            .collect();
        panic!("requests at rest: {after:?} after {settled:?}; the last statuses {tail:#?}");
    }

    // A daemon killed (node 2's import goes with it): NotReady, then Ready.
    for mut child in held.drain(..) {
        let _ = child.kill();
        let _ = child.wait();
    }
    let pid = cluster.domains(1).domains[0].pid;
    write(&cluster.nodes[1].dir.join("not-ready"), "");
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(pid).expect("pid")),
        nix::sys::signal::Signal::SIGKILL,
    );
    cluster.wait_status("default", name, "node-2 NotReady", |s| {
        s["status"] == "NotReady"
            && members(s)
                .iter()
                .any(|(n, _, r)| n == "node-2" && r == "NotReady")
    });
    std::fs::remove_file(cluster.nodes[1].dir.join("not-ready")).expect("flag off");
    cluster.wait_status("default", name, "Ready again", ready_members(2));
    assert_ne!(cluster.domains(1).domains[0].pid, pid);

    // gpusliced restarts on node 1: the daemon is found again, Ready holds.
    let pid = cluster.domains(0).domains[0].pid;
    cluster.nodes[0]
        .daemon
        .as_mut()
        .expect("daemon")
        .restart(BOUND);
    assert_eq!(
        cluster.domains(0).domains[0].pid,
        pid,
        "the same IMEX daemon"
    );
    cluster.wait_status("default", name, "still Ready", ready_members(2));

    // The pods go, then the domain: daemons, folders, specs, Leases and (by
    // the garbage collector) the template go.
    for i in 0..2 {
        cluster.unprepare(i, &claim_uid(i));
    }
    cluster.api.mutate(|s| s.delete_domain("default", name));
    assert!(
        cluster
            .api
            .wait_for(BOUND, |s| s.templates().is_empty() && s.leases().is_empty())
    );
    for i in 0..2 {
        assert!(cluster.domains(i).domains.is_empty());
        let left: Vec<_> = std::fs::read_dir(cluster.nodes[i].dir.join("run/imex"))
            .into_iter()
            .flatten()
            .flatten()
            .collect();
        assert!(left.is_empty(), "node {}: {left:?}", i + 1);
    }
    let state = cluster.api.state();
    assert!(state.refused.is_empty(), "{:?}", state.refused);
    assert!(
        admission.is_none() || state.admitted > 0,
        "the writes went through admission"
    );
}

#[test]
#[allow(clippy::too_many_lines, reason = "one scenario, read top to bottom")]
fn sim_domains_are_kept_apart_and_a_claim_joins_only_its_own_namespaces() {
    let Some(tools) = tools() else { return };
    let admission = admission::available("sim_domains_are_kept_apart");
    let cluster = Cluster::start(&tools, &addresses("127.0.0", 51, 4), admission);
    let mut a = nvidia_domain("nvbandwidth-test-job-1.yaml");
    a["metadata"]["namespace"] = json!("team-a");
    let mut b = nvidia_domain("channel-injection.yaml");
    b["metadata"]["namespace"] = json!("team-b");
    let (uid_a, uid_b) = (
        "d0000000-0000-4000-8000-00000000000a",
        "d0000000-0000-4000-8000-00000000000b",
    );
    cluster.api.mutate(|s| {
        s.put_domain(a.clone(), uid_a);
        s.put_domain(b.clone(), uid_b);
    });
    assert!(cluster.api.wait_for(BOUND, |s| s.templates().len() == 2));
    let (name_a, template_a) = (
        "nvbandwidth-test-compute-domain-1",
        "nvbandwidth-test-compute-domain-1-channel",
    );
    let (name_b, template_b) = ("imex-channel-injection", "imex-channel-0");
    for i in 0..2 {
        cluster
            .prepare(i, &claim_uid(10 + i), "team-a", template_a)
            .expect("a");
    }
    for i in 2..4 {
        cluster
            .prepare(i, &claim_uid(20 + i), "team-b", template_b)
            .expect("b");
    }
    cluster.wait_status("team-a", name_a, "A on nodes 1 and 2", ready_members(2));
    cluster.wait_status("team-b", name_b, "B on nodes 3 and 4", ready_members(2));
    let names = |ns: &str, d: &str| -> Vec<String> {
        members(&cluster.api.state().status_in(ns, d))
            .into_iter()
            .map(|(n, _, _)| n)
            .collect()
    };
    assert_eq!(names("team-a", name_a), ["node-1", "node-2"]);
    assert_eq!(names("team-b", name_b), ["node-3", "node-4"]);
    for (nodes, want) in [
        (0..2, addresses_of(&cluster.nodes[..2])),
        (2..4, addresses_of(&cluster.nodes[2..])),
    ] {
        for i in nodes {
            cluster.wait_node(i, "its own domain's members only", |r| {
                r.domains
                    .first()
                    .is_some_and(|d| member_addresses(d) == want)
            });
        }
    }

    // A claim in team-b naming A's uid: refused by the plugin, naming both
    // namespaces; A's status and members stay as they are.
    let status_a = cluster.api.state().status_in("team-a", name_a);
    let members_a: Vec<_> = (0..2)
        .map(|i| member_addresses(&cluster.domains(i).domains[0]))
        .collect();
    let params_a = cluster.template_parameters("team-a", template_a);
    let refused = refused_on(&cluster, 2, 90, ("team-b", "intruder"), &params_a);
    assert!(
        refused.contains("team-a") && refused.contains("team-b") && refused.contains(uid_a),
        "{refused}"
    );
    // The same on a node that is in no domain yet.
    cluster.api.mutate(|s| s.delete_domain("team-b", name_b));
    for i in 2..4 {
        cluster.unprepare(i, &claim_uid(20 + i));
    }
    let refused = refused_on(&cluster, 3, 91, ("team-b", "intruder-2"), &params_a);
    assert!(
        refused.contains("is in namespace team-a, not in the claim's namespace team-b"),
        "{refused}"
    );
    assert!(
        cluster.domains(3).domains.is_empty(),
        "no daemon started for it"
    );
    cluster.api.wait_for(Duration::from_secs(2), |_| false);
    assert_eq!(cluster.api.state().status_in("team-a", name_a), status_a);
    let now: Vec<_> = (0..2)
        .map(|i| member_addresses(&cluster.domains(i).domains[0]))
        .collect();
    assert_eq!(now, members_a);

    // No such domain; a domain being deleted; another node's channel.
    let mut ghost = params_a.clone();
    ghost["domainID"] = json!("d0000000-0000-4000-8000-0000000000ff");
    let refused = refused_on(&cluster, 3, 92, ("team-a", "ghost"), &ghost);
    assert!(
        refused.contains("does not exist in the claim's namespace team-a"),
        "{refused}"
    );
    cluster.put_claim(1, &claim_uid(93), "team-a", "elsewhere", &params_a);
    let refused = cluster
        .prepare_claim(0, &claim_uid(93), "team-a", "elsewhere")
        .expect_err("refused");
    assert!(refused.contains("not to this node node-1"), "{refused}");
    cluster.api.mutate(|s| {
        let mut deleting = s
            .object(Kind::Domain, "team-a", name_a)
            .cloned()
            .expect("A");
        deleting["metadata"]["deletionTimestamp"] = json!("2026-12-05T00:00:00Z");
        s.put_domain(deleting, uid_a);
    });
    cluster.put_claim(3, &claim_uid(94), "team-a", "late", &params_a);
    let deadline = Instant::now() + BOUND;
    let refused = loop {
        // The cache sees the deletion a moment later.
        let answer = cluster.prepare_claim(3, &claim_uid(94), "team-a", "late");
        match answer {
            Err(e) if e.contains("is being deleted") => break e,
            Ok(_) => cluster.unprepare(3, &claim_uid(94)),
            Err(_) => {}
        }
        assert!(Instant::now() < deadline, "never refused as being deleted");
        cluster.api.wait_for(Duration::from_millis(100), |_| false);
    };
    assert!(refused.contains(&format!("team-a/{name_a}")), "{refused}");
    for i in 0..2 {
        cluster.unprepare(i, &claim_uid(10 + i));
    }
    let state = cluster.api.state();
    assert!(state.refused.is_empty(), "{:?}", state.refused);
}
