//! The channel engine against the stand-ins for `nvidia-imex` and
//! `nvidia-imex-ctl` (tests/tools, Python): real processes, real TCP
//! between two nodes' daemons on their own loopback addresses, real
//! signals. Each test binds addresses of its own (127.0.31.x) so they run
//! side by side.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use gpuslice_imex::imex::Query;

use super::engine::{ChannelNodes, DomainSettings, Domains};
use super::request::ChannelConfigEntry;
use super::{ChannelDevice, ChannelRequest, DomainError, PreparedChannel};
use crate::mps::DaemonState;

const DOMAIN: &str = "5b9c2d0e-7a41-4f3b-9c8d-2e6f1a0b3c4d";
const OTHER_DOMAIN: &str = "6c0d3e1f-8b52-4a4c-8d9e-3f7a2b1c4d5e";
const CLIQUE: &str = "4f3c2b1a-5d6e-4f70-8a9b-0c1d2e3f4a5b.0";
const BOUND: Duration = Duration::from_secs(20);

fn tools() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/tools");
    if std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        Some(dir)
    } else {
        assert!(
            std::env::var_os("GPUSLICE_REQUIRE_TOOLS").is_none(),
            "python3 is required for the IMEX stand-ins"
        );
        eprintln!("skipped: no python3 for the IMEX stand-ins");
        None
    }
}

/// A node: its folders, its engine, the stand-in's record file.
struct Node {
    dir: tempfile::TempDir,
    settings: DomainSettings,
}

impl Node {
    fn new(tools: &Path, address: &str, clique: Option<&str>, env: &str) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path();
        let program = root.join("nvidia-imex");
        // The daemon's environment is cleared; the wrapper puts back what
        // the stand-in reads.
        let wrapper = format!(
            "#!/bin/sh\nFAKE_IMEX_RECORD={} {env} exec {} \"$@\"\n",
            root.join("record").display(),
            tools.join("fake-nvidia-imex").display()
        );
        gpuslice_cdi::atomic::write_atomic(root, "nvidia-imex", wrapper.as_bytes(), 0o755)
            .expect("wrapper");
        let settings = DomainSettings {
            state_dir: root.join("state"),
            cdi_dir: root.join("cdi"),
            driver_root: root.join("sim-root"),
            dev_root: root.join("sim-root"),
            imex_dir: root.join("run/imex"),
            program,
            ctl_program: tools.join("fake-nvidia-imex-ctl"),
            bind_address: Some(address.parse::<IpAddr>().expect("address")),
            ready_bound: Duration::from_secs(10),
            channel_nodes: ChannelNodes::Simulated,
            clique: clique.map(str::to_owned),
            fabric_summary: "gpu-0 NVIDIA H100 80GB HBM3: no NVLink fabric".to_owned(),
        };
        std::fs::create_dir_all(&settings.cdi_dir).expect("cdi dir");
        Self { dir, settings }
    }

    fn engine(&self) -> Domains {
        let domains = Domains::new(self.settings.clone()).expect("engine");
        let problems = domains.start_up().expect("start-up");
        assert!(problems.is_empty(), "{problems:?}");
        domains
    }

    fn record(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("record")).unwrap_or_default()
    }

    fn spec(&self, uid: &str) -> Option<String> {
        std::fs::read_to_string(self.settings.cdi_dir.join(super::cdi::spec_file_name(uid))).ok()
    }

    fn folder(&self, domain: &str) -> PathBuf {
        self.settings.imex_dir.join(domain)
    }
}

/// Waits until `done`, asking every 50 ms; panics after `bound` (an upper
/// bound for a hung stand-in, never a timing the test relies on).
fn wait_until(bound: Duration, done: impl Fn() -> bool) {
    let gate = std::sync::Mutex::new(());
    let pause = std::sync::Condvar::new();
    let deadline = std::time::Instant::now() + bound;
    let mut guard = gate.lock().expect("gate");
    while !done() {
        assert!(std::time::Instant::now() < deadline, "not within {bound:?}");
        guard = pause
            .wait_timeout(guard, Duration::from_millis(50))
            .expect("gate")
            .0;
    }
}

fn channel_claim(uid: &str, channel: u32, domain: &str) -> ChannelRequest {
    ChannelRequest {
        uid: uid.to_owned(),
        namespace: "train".to_owned(),
        name: format!("job-{channel}"),
        devices: vec![ChannelDevice {
            device: format!("channel-{channel}"),
            request_names: vec!["channel".to_owned()],
            pool: "node-1".to_owned(),
        }],
        configs: vec![ChannelConfigEntry {
            requests: vec![],
            parameters_json: format!(
                r#"{{"apiVersion":"resource.nvidia.com/v1beta1","kind":"ComputeDomainChannelConfig","domainID":"{domain}"}}"#
            ),
        }],
    }
}

const UID_A: &str = "0a000000-0000-4000-8000-00000000000a";
const UID_B: &str = "0b000000-0000-4000-8000-00000000000b";

#[test]
fn sim_a_channel_claim_starts_its_domains_daemon_and_its_spec_holds_the_channel() {
    let Some(tools) = tools() else { return };
    let node = Node::new(&tools, "127.0.31.1", Some(CLIQUE), "");
    let domains = node.engine();
    let prepared = domains
        .prepare(&channel_claim(UID_A, 0, DOMAIN))
        .expect("prepared");
    assert!(matches!(prepared, PreparedChannel::Created(_)));
    let spec = node.spec(UID_A).expect("spec written");
    assert!(
        spec.contains("/dev/nvidia-caps-imex-channels/channel0"),
        "{spec}"
    );
    assert!(
        node.settings
            .dev_root
            .join("dev/nvidia-caps-imex-channels/channel0")
            .exists(),
        "the simulator made the channel's node"
    );
    assert_eq!(
        prepared.cdi_device_id(),
        format!("k8s.gpuslice.dev/channel={UID_A}-channel")
    );
    let listed = domains.list();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].ready, Query::Ready);
    assert_eq!(listed[0].claims, ["train/job-0"]);
    assert_eq!(listed[0].peers, ["127.0.31.1"], "the node alone until told");
    assert!(
        node.record()
            .starts_with("start bind=127.0.31.1 peers=127.0.31.1\n")
    );
    let again = domains
        .prepare(&channel_claim(UID_A, 0, DOMAIN))
        .expect("again");
    assert!(matches!(again, PreparedChannel::AlreadyPrepared(_)));
    let other = domains
        .prepare(&channel_claim(UID_B, 1, OTHER_DOMAIN))
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
fn sim_a_node_without_a_fabric_refuses_saying_so_and_keeps_nothing() {
    let Some(tools) = tools() else { return };
    let node = Node::new(&tools, "127.0.31.2", None, "");
    let domains = node.engine();
    let err = domains
        .prepare(&channel_claim(UID_A, 0, DOMAIN))
        .expect_err("no fabric");
    let text = err.to_string();
    assert!(text.contains("no multi-node NVLink fabric"), "{text}");
    assert!(text.contains("gpu-0 NVIDIA H100"), "{text}");
    assert!(node.spec(UID_A).is_none());
    assert!(!node.folder(DOMAIN).exists());
    assert!(node.record().is_empty(), "no daemon started");
}

#[test]
fn sim_a_daemon_that_never_gets_ready_fails_the_prepare_retryably_and_leaves_nothing() {
    let Some(tools) = tools() else { return };
    let mut node = Node::new(&tools, "127.0.31.3", Some(CLIQUE), "FAKE_IMEX_NOT_READY=1");
    node.settings.ready_bound = Duration::from_secs(1);
    let domains = node.engine();
    let err = domains
        .prepare(&channel_claim(UID_A, 0, DOMAIN))
        .expect_err("not ready");
    assert!(matches!(err, DomainError::NotReady { .. }), "{err}");
    assert!(err.to_string().contains("WAITING_FOR_PEERS"), "{err}");
    assert!(node.spec(UID_A).is_none());
    assert!(
        !node.folder(DOMAIN).exists(),
        "the daemon it started is stopped"
    );
    assert!(domains.list().is_empty());
    let (records, _) = super::record::RecordStore::open(&node.settings.state_dir)
        .expect("store")
        .load_all()
        .expect("records");
    assert!(records.is_empty(), "no record left: {records:?}");
}

#[test]
fn sim_two_nodes_connect_a_killed_daemon_comes_back_and_a_restart_takes_it_over() {
    let Some(tools) = tools() else { return };
    let one = Node::new(&tools, "127.0.31.11", Some(CLIQUE), "");
    let two = Node::new(&tools, "127.0.31.12", Some(CLIQUE), "");
    let (d1, d2) = (one.engine(), two.engine());
    d1.prepare(&channel_claim(UID_A, 0, DOMAIN))
        .expect("node 1");
    d2.prepare(&channel_claim(UID_B, 0, DOMAIN))
        .expect("node 2");
    let peers = ["127.0.31.11".to_owned(), "127.0.31.12".to_owned()];
    assert!(d1.set_peers(DOMAIN, &peers).expect("peers 1"));
    assert!(d2.set_peers(DOMAIN, &peers).expect("peers 2"));
    assert!(!d1.set_peers(DOMAIN, &peers).expect("same"), "unchanged");
    wait_until(BOUND, || {
        one.record().contains("connected 127.0.31.12")
            && two.record().contains("connected 127.0.31.11")
    });
    assert_eq!(d1.list()[0].peers, peers);

    // Killed: restarted, ready again.
    let daemon = d1.daemon(DOMAIN).expect("daemon");
    let pid = daemon.status().pid.expect("pid");
    crate::mps::child::kill_pid(pid);
    let back = daemon.wait_for_restarts(1, BOUND);
    assert_eq!(back.state, DaemonState::Running);
    assert_ne!(back.pid, Some(pid));
    wait_until(BOUND, || d1.list()[0].ready == Query::Ready);

    // gpusliced restarts: the running daemon is taken over, not started again.
    let pid = back.pid.expect("pid");
    let starts = one.record().matches("start ").count();
    drop(d1);
    let d1 = one.engine();
    assert_eq!(d1.daemon(DOMAIN).expect("adopted").status().pid, Some(pid));
    assert_eq!(one.record().matches("start ").count(), starts);
    assert!(one.spec(UID_A).is_some());

    // Unprepared on both: the daemons stop, nothing is left.
    assert!(d1.unprepare(UID_A).expect("node 1 off"));
    assert!(d2.unprepare(UID_B).expect("node 2 off"));
    assert!(!crate::mps::child::pid_alive(pid));
    assert!(!one.folder(DOMAIN).exists() && !two.folder(DOMAIN).exists());
    let err = d1.set_peers(DOMAIN, &peers).expect_err("not a member");
    assert!(matches!(err, DomainError::NotMember { .. }), "{err}");
}

#[test]
fn sim_a_prepare_cut_short_by_a_crash_is_rolled_back_at_the_next_start() {
    let Some(tools) = tools() else { return };
    let node = Node::new(&tools, "127.0.31.4", Some(CLIQUE), "");
    // What a crash after the record and the spec leaves: a `preparing`
    // record, its spec, and no daemon.
    let ask = channel_claim(UID_A, 0, DOMAIN).validate().expect("valid");
    let store = super::record::RecordStore::open(&node.settings.state_dir).expect("store");
    store
        .save(&super::record::ChannelRecord::preparing(&ask))
        .expect("record");
    gpuslice_cdi::atomic::write_atomic(
        &node.settings.cdi_dir,
        &super::cdi::spec_file_name(UID_A),
        b"{}",
        0o644,
    )
    .expect("spec");
    let domains = node.engine();
    assert!(node.spec(UID_A).is_none(), "the spec is removed");
    assert!(
        store.load_all().expect("records").0.is_empty(),
        "and the record"
    );
    assert!(domains.list().is_empty(), "no daemon is started for it");
    assert!(node.record().is_empty());
    // The claim prepares afresh when the kubelet asks again.
    domains
        .prepare(&channel_claim(UID_A, 0, DOMAIN))
        .expect("prepared");
    assert!(domains.unprepare(UID_A).expect("unprepared"));
}

#[test]
fn sim_a_daemon_whose_claims_are_gone_is_stopped_at_the_next_start() {
    let Some(tools) = tools() else { return };
    let node = Node::new(&tools, "127.0.31.5", Some(CLIQUE), "");
    let domains = node.engine();
    domains
        .prepare(&channel_claim(UID_A, 0, DOMAIN))
        .expect("prepared");
    let pid = domains
        .daemon(DOMAIN)
        .and_then(|d| d.status().pid)
        .expect("pid");
    // What a crash after an unprepare's record removal leaves: the daemon
    // runs on, nothing names it.
    drop(domains);
    super::record::RecordStore::open(&node.settings.state_dir)
        .expect("store")
        .remove(UID_A)
        .expect("record removed");
    assert!(crate::mps::child::pid_alive(pid), "it outlived the engine");
    let domains = node.engine();
    assert!(!crate::mps::child::pid_alive(pid), "stopped at start-up");
    assert!(!node.folder(DOMAIN).exists(), "its folder removed");
    assert!(node.spec(UID_A).is_none(), "the claim's spec removed");
    assert!(domains.list().is_empty());
}
