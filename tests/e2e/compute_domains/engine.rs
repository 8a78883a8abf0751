//! Prepare and unprepare of channel claims, the refusals, and start-up.

use std::os::unix::fs::PermissionsExt;

use gpuslice::compute_domains::record::{ChannelRecord, open_records};
use gpuslice::compute_domains::{DomainError, PreparedChannel};
use gpuslice::supervise::process::pid_alive;

use super::node::{
    CLIQUE, DOMAIN, Node, OTHER_DOMAIN, UID_A, UID_B, claim, claim_vouched, tools, wait_until,
};

#[test]
fn sim_a_channel_claim_starts_its_domains_daemon_and_its_spec_holds_the_channel() {
    let Some(tools) = tools("sim_a_channel_claim_starts_its_domains_daemon") else {
        return;
    };
    let node = Node::new(&tools, "127.0.31.1", Some(CLIQUE), "");
    let domains = node.engine();
    let prepared = domains.prepare(&claim(UID_A, 0, DOMAIN)).expect("prepared");
    assert!(matches!(prepared, PreparedChannel::Created(_)));
    let spec = node.spec(UID_A).expect("spec written");
    assert!(
        spec.contains("/dev/nvidia-caps-imex-channels/channel0"),
        "{spec}"
    );
    assert!(
        spec.contains("\"fileMode\": 438"),
        "0666 in the container: {spec}"
    );
    let host_node = node
        .settings
        .nodes
        .dev_root
        .join("dev/nvidia-caps-imex-channels/channel0");
    let mode = std::fs::metadata(&host_node)
        .expect("the channel's node")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "root's alone on the host");
    assert_eq!(
        prepared.cdi_device_id(),
        format!("k8s.gpuslice.dev/channel={UID_A}-channel")
    );
    let folder = node.folder(DOMAIN);
    let folder_mode = std::fs::metadata(&folder)
        .expect("folder")
        .permissions()
        .mode();
    assert_eq!(
        folder_mode & 0o777,
        0o700,
        "the domain's folder is root's alone"
    );
    let log_mode = std::fs::metadata(folder.join("imexd.log"))
        .expect("log")
        .permissions()
        .mode();
    assert_eq!(log_mode & 0o777, 0o600);
    let nodes = std::fs::read_to_string(folder.join("nodes_config.cfg")).expect("nodes config");
    assert_eq!(
        nodes.lines().count(),
        18,
        "every index's name, once: {nodes}"
    );
    assert!(nodes.starts_with("compute-domain-daemon-0000\n"), "{nodes}");

    let listed = domains.list();
    assert_eq!(listed.len(), 1);
    assert!(listed[0].ready(), "{:?}", listed[0].seen);
    assert_eq!(listed[0].claims, ["train/job-0"]);
    assert_eq!(
        (listed[0].namespace.as_str(), listed[0].name.as_str()),
        ("train", "imex-channel-injection")
    );
    assert!(
        listed[0].seen.mapping.is_empty(),
        "no member until the plugin says"
    );
    assert!(
        node.record().starts_with("start bind=127.0.31.1 "),
        "{}",
        node.record()
    );
    let again = domains.prepare(&claim(UID_A, 0, DOMAIN)).expect("again");
    assert!(matches!(again, PreparedChannel::AlreadyPrepared(_)));
    let other = domains
        .prepare(&claim(UID_B, 1, OTHER_DOMAIN))
        .expect_err("one domain per node");
    assert!(matches!(other, DomainError::OtherDomain { .. }), "{other}");
    assert!(other.to_string().contains(DOMAIN), "{other}");
    assert!(node.spec(UID_B).is_none(), "nothing left of the refusal");

    assert!(domains.unprepare(UID_A).expect("unprepared"));
    assert!(node.spec(UID_A).is_none());
    assert!(!node.folder(DOMAIN).exists(), "the daemon's folder goes");
    assert!(domains.list().is_empty());
    assert!(!domains.unprepare(UID_A).expect("again"), "idempotent");
}

#[test]
fn sim_a_claim_naming_another_namespace_s_domain_is_refused_and_starts_nothing() {
    let Some(tools) = tools("sim_a_claim_naming_another_namespace_s_domain") else {
        return;
    };
    let node = Node::new(&tools, "127.0.31.6", Some(CLIQUE), "");
    let domains = node.engine();
    let foreign = claim_vouched(UID_A, 0, DOMAIN, Some(("tenant-a", "their-domain")));
    let err = domains
        .prepare(&foreign)
        .expect_err("another tenant's domain");
    assert!(matches!(err, DomainError::OtherTenant { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("namespace train") && text.contains("namespace tenant-a"),
        "{text}"
    );
    // A claim of the domain's own namespace prepares; another namespace's
    // claim naming the same uid, vouched as its own, is still refused.
    domains
        .prepare(&claim(UID_B, 1, DOMAIN))
        .expect("the domain's own claim");
    let mut squatter = claim_vouched(
        UID_A,
        0,
        DOMAIN,
        Some(("tenant-b", "imex-channel-injection")),
    );
    squatter.namespace = "tenant-b".to_owned();
    let err = domains
        .prepare(&squatter)
        .expect_err("the same uid in another namespace");
    assert!(matches!(err, DomainError::OtherTenant { .. }), "{err}");
    assert!(err.to_string().contains("namespace tenant-b"), "{err}");
    assert!(node.spec(UID_A).is_none());
    assert_eq!(
        domains.list()[0].claims,
        ["train/job-1"],
        "the domain unchanged"
    );
    assert!(domains.unprepare(UID_B).expect("unprepared"));
    let unvouched = claim_vouched(UID_A, 0, DOMAIN, None);
    let err = domains.prepare(&unvouched).expect_err("no vouch");
    assert!(matches!(err, DomainError::NotVouched { .. }), "{err}");
    let mut other_uid = claim(UID_A, 0, DOMAIN);
    if let Some(vouched) = other_uid.vouched.as_mut() {
        vouched.uid = OTHER_DOMAIN.to_owned();
    }
    let err = domains
        .prepare(&other_uid)
        .expect_err("vouched for another domain");
    assert!(matches!(err, DomainError::NotVouched { .. }), "{err}");
    assert!(node.spec(UID_A).is_none());
    assert!(!node.folder(DOMAIN).exists());
}

#[test]
fn sim_a_node_without_a_fabric_or_a_rack_network_refuses_saying_so_and_keeps_nothing() {
    let Some(tools) = tools("sim_a_node_without_a_fabric_or_a_rack_network") else {
        return;
    };
    let node = Node::new(&tools, "127.0.31.2", None, "");
    let err = node
        .engine()
        .prepare(&claim(UID_A, 0, DOMAIN))
        .expect_err("no fabric");
    let text = err.to_string();
    assert!(text.contains("no multi-node NVLink fabric"), "{text}");
    assert!(text.contains("gpu-0 NVIDIA H100"), "{text}");

    let mut unbound = Node::new(&tools, "127.0.31.2", Some(CLIQUE), "");
    unbound.settings.bind_address = None;
    let err = unbound
        .engine()
        .prepare(&claim(UID_A, 0, DOMAIN))
        .expect_err("no bind address");
    assert!(matches!(err, DomainError::NoBindAddress), "{err}");
    let mut no_rack = Node::new(&tools, "127.0.31.2", Some(CLIQUE), "");
    no_rack.settings.rack = gpuslice_imex::network::RackNetwork::default();
    let err = no_rack
        .engine()
        .prepare(&claim(UID_A, 0, DOMAIN))
        .expect_err("no rack network");
    assert!(matches!(err, DomainError::NoRackNetwork), "{err}");
    for refused in [&node, &unbound, &no_rack] {
        assert!(refused.spec(UID_A).is_none());
        assert!(!refused.folder(DOMAIN).exists());
        assert!(refused.record().is_empty(), "no daemon started");
    }
}

#[test]
fn sim_a_daemon_that_never_gets_ready_fails_the_prepare_retryably_and_leaves_nothing() {
    let Some(tools) = tools("sim_a_daemon_that_never_gets_ready") else {
        return;
    };
    let mut node = Node::new(&tools, "127.0.31.3", Some(CLIQUE), "FAKE_IMEX_NOT_READY=1");
    node.settings.ready_bound = std::time::Duration::from_secs(1);
    let domains = node.engine();
    let err = domains
        .prepare(&claim(UID_A, 0, DOMAIN))
        .expect_err("not ready");
    assert!(matches!(err, DomainError::NotReady { .. }), "{err}");
    assert!(err.to_string().contains("WAITING_FOR_PEERS"), "{err}");
    assert!(node.spec(UID_A).is_none());
    assert!(
        !node.folder(DOMAIN).exists(),
        "the daemon it started is stopped"
    );
    assert!(domains.list().is_empty());
    let records = open_records(&node.settings.state_dir)
        .expect("store")
        .load_all()
        .expect("records")
        .records;
    assert!(records.is_empty(), "no record left: {records:?}");
}

#[test]
fn sim_a_prepare_cut_short_by_a_crash_is_rolled_back_at_the_next_start() {
    let Some(tools) = tools("sim_a_prepare_cut_short_by_a_crash") else {
        return;
    };
    let node = Node::new(&tools, "127.0.31.4", Some(CLIQUE), "");
    // What a crash after the record and the spec leaves: a `preparing`
    // record, its spec, and no daemon.
    let ask = claim(UID_A, 0, DOMAIN).validate().expect("valid");
    let store = open_records(&node.settings.state_dir).expect("store");
    store.save(&ChannelRecord::preparing(&ask)).expect("record");
    gpuslice_cdi::atomic::write_atomic(
        &node.settings.cdi_dir,
        &gpuslice::compute_domains::cdi::spec_file_name(UID_A),
        b"{}",
        0o644,
    )
    .expect("spec");
    let domains = node.engine();
    assert!(node.spec(UID_A).is_none(), "the spec is removed");
    assert!(
        store.load_all().expect("records").records.is_empty(),
        "and the record"
    );
    assert!(domains.list().is_empty(), "no daemon is started for it");
    assert!(node.record().is_empty());
    // The claim prepares afresh when the kubelet asks again.
    domains.prepare(&claim(UID_A, 0, DOMAIN)).expect("prepared");
    assert!(domains.unprepare(UID_A).expect("unprepared"));
}

#[test]
fn sim_a_daemon_whose_claims_are_gone_is_stopped_at_the_next_start() {
    let Some(tools) = tools("sim_a_daemon_whose_claims_are_gone") else {
        return;
    };
    let node = Node::new(&tools, "127.0.31.5", Some(CLIQUE), "");
    let domains = node.engine();
    domains.prepare(&claim(UID_A, 0, DOMAIN)).expect("prepared");
    let pid = domains
        .running(DOMAIN)
        .and_then(|r| r.daemon().status().pid)
        .expect("pid");
    // What a crash after an unprepare's record removal leaves: the daemon
    // runs on, nothing names it.
    drop(domains);
    open_records(&node.settings.state_dir)
        .expect("store")
        .remove(UID_A)
        .expect("record removed");
    assert!(pid_alive(pid), "it outlived the engine");
    let domains = node.engine();
    assert!(!pid_alive(pid), "stopped at start-up");
    assert!(!node.folder(DOMAIN).exists(), "its folder removed");
    assert!(node.spec(UID_A).is_none(), "the claim's spec removed");
    assert!(domains.list().is_empty());
}

#[test]
fn sim_a_forged_pid_file_is_not_taken_for_the_daemon() {
    let Some(tools) = tools("sim_a_forged_pid_file") else {
        return;
    };
    let node = Node::new(&tools, "127.0.31.7", Some(CLIQUE), "");
    let domains = node.engine();
    domains.prepare(&claim(UID_A, 0, DOMAIN)).expect("prepared");
    let running = domains.running(DOMAIN).expect("running");
    let pid = running.daemon().status().pid.expect("pid");
    drop(running);
    drop(domains);
    gpuslice::supervise::process::kill_pid(pid);
    // Another process's pid, with a start time that is not its own.
    let me = std::process::id();
    let forged = format!(r#"{{"pid":{me},"start_ticks":1}}"#);
    gpuslice_cdi::atomic::write_atomic(
        &node.folder(DOMAIN),
        "daemon.pid",
        forged.as_bytes(),
        0o600,
    )
    .expect("forged");
    let starts = node.record().matches("start ").count();
    let domains = node.engine();
    let running = domains.running(DOMAIN).expect("a daemon again");
    assert_ne!(
        running.daemon().status().pid,
        Some(me),
        "not this test process"
    );
    wait_until("a new daemon started", || {
        node.record().matches("start ").count() == starts + 1
    });
    assert!(domains.unprepare(UID_A).expect("unprepared"));
}

#[test]
fn sim_a_daemon_that_cannot_start_fails_the_prepare_quoting_its_log_and_leaves_nothing() {
    let Some(tools) = tools("sim_a_daemon_that_cannot_start") else {
        return;
    };
    // Two nodes on one address: the second daemon cannot bind.
    let first = Node::new(&tools, "127.0.31.8", Some(CLIQUE), "");
    let second = Node::new(&tools, "127.0.31.8", Some(CLIQUE), "");
    let (d1, d2) = (first.engine(), second.engine());
    d1.prepare(&claim(UID_A, 0, DOMAIN))
        .expect("the first binds");
    let err = d2
        .prepare(&claim(UID_B, 0, DOMAIN))
        .expect_err("the second cannot bind");
    assert!(matches!(err, DomainError::DaemonDown { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains("exited within a second"), "{text}");
    assert!(
        text.contains("cannot bind 127.0.31.8:50000"),
        "the log's last words: {text}"
    );
    assert!(second.spec(UID_B).is_none());
    assert!(!second.folder(DOMAIN).exists(), "nothing left");
    assert!(d1.unprepare(UID_A).expect("unprepared"));
}
