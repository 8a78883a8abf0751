//! ComputeDomains end to end on simulated GB200 nodes, each its own real
//! gpusliced (`[backend.sim] instance = "p6e-gb200.36xlarge"`, the IMEX
//! stand-ins of tests/tools, bound to a loopback address of its own) and
//! its plugin's domain rounds (`domain_status`, the library the plugin runs,
//! over a real kube client) against [`crate::fake_domains`]. NVIDIA's
//! ComputeDomain manifest goes in unchanged; the test plays the scheduler
//! and kubelet: each pod's claim, made from the template the plugins made,
//! gets channel 0 on its node and is prepared through gpusliced's
//! PrepareChannel with the template's config. Then the faults.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use gpuslice_dra_plugin::domain_status::{kube_api::KubeDomains, node::GpuslicedDomains, task};
use gpuslice_dra_plugin::gpusliced::{GpuSlice, connect_lazy};
use gpuslice_proto::gpuslice::v1 as pb;
use serde_json::{Value, json};
use tokio::sync::{Notify, watch};

use crate::fake_domains::FakeDomainsApi;
use crate::gpusliced::Daemon;
use crate::peers::write;

const BOUND: Duration = Duration::from_secs(60);
const CLIQUE: &str = "4f3c2b1a-5d6e-4f70-8a9b-0c1d2e3f4a5b.1";

fn tools() -> Option<PathBuf> {
    let ok = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("GPUSLICE_REQUIRE_TOOLS").is_none(),
            "python3 is required for the IMEX stand-ins"
        );
        eprintln!("skipped: no python3 for the IMEX stand-ins");
        return None;
    }
    Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/tools"))
}

/// NVIDIA's ComputeDomain of `file` (third_party/dra-driver-nvidia-gpu), as
/// written.
pub fn nvidia_domain(file: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../third_party/dra-driver-nvidia-gpu")
        .join(file);
    let text = std::fs::read_to_string(&path).expect("vendored example");
    let first = serde_norway::Deserializer::from_str(&text)
        .next()
        .expect("a document");
    let domain: Value = serde::Deserialize::deserialize(first).expect("YAML");
    assert_eq!(domain["kind"], "ComputeDomain");
    domain
}

/// One node: its gpusliced, its rounds, its folder.
pub struct Node {
    pub name: String,
    pub address: String,
    pub dir: PathBuf,
    pub daemon: Option<Daemon>,
    pub stop: watch::Sender<bool>,
}

/// The nodes and the API server, with a runtime for the rounds (also the
/// bench's, dra-plugin/benches/compute_domains.rs).
pub struct Cluster {
    runtime: tokio::runtime::Runtime,
    pub api: FakeDomainsApi,
    pub nodes: Vec<Node>,
    dir: tempfile::TempDir,
}

/// `count` loopback addresses from `<network>.<first>` up.
pub fn addresses(network: &str, first: usize, count: usize) -> Vec<String> {
    (first..first + count)
        .map(|host| format!("{network}.{host}"))
        .collect()
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for node in &mut self.nodes {
            let _ = node.stop.send(true);
            // gpusliced first: it would start a killed IMEX daemon again.
            drop(node.daemon.take());
        }
        // IMEX daemons outlive gpusliced by design: end the test's own.
        let marker = format!("GPUSLICE_IMEX_DOMAIN={}", self.dir.path().display());
        crate::gpusliced::kill_processes_with_env(&marker);
    }
}

impl Cluster {
    /// One GB200 node on each of `addresses` (node-1, node-2, ...), their
    /// gpusliceds started at once; the rounds start once every node is up.
    pub fn start(tools: &Path, addresses: &[String]) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let nodes: Vec<Node> = std::thread::scope(|scope| {
            let started: Vec<_> = addresses
                .iter()
                .enumerate()
                .map(|(i, address)| {
                    let name = format!("node-{}", i + 1);
                    let node_dir = dir.path().join(&name);
                    scope.spawn(move || {
                        std::fs::create_dir_all(&node_dir).expect("node dir");
                        let config = node_config(tools, &node_dir, address, &name);
                        let daemon = Daemon::start_with_config(&node_dir, &config);
                        Node {
                            name,
                            address: address.clone(),
                            dir: node_dir,
                            daemon: Some(daemon),
                            stop: watch::channel(false).0,
                        }
                    })
                })
                .collect();
            started
                .into_iter()
                .map(|h| h.join().expect("gpusliced started"))
                .collect()
        });
        let cluster = Self {
            runtime,
            api: FakeDomainsApi::start(),
            nodes,
            dir,
        };
        for (i, node) in cluster.nodes.iter().enumerate() {
            cluster.api.mutate(|s| s.nodes.insert(node.name.clone()));
            cluster.start_rounds(i);
        }
        cluster
    }

    fn client(&self, i: usize) -> GpuSlice {
        let _guard = self.runtime.enter();
        connect_lazy(self.nodes[i].dir.join("gpusliced.sock"))
    }

    /// The node's plugin's domain rounds, as its plugin runs them.
    fn start_rounds(&self, i: usize) {
        let node = &self.nodes[i];
        let _guard = self.runtime.enter();
        let config = kube::Config::new(self.api.url.parse().expect("url"));
        let client = kube::Client::try_from(config).expect("kube client");
        let stop = node.stop.subscribe();
        self.runtime.spawn(task::run(
            KubeDomains::new(client),
            GpuslicedDomains::new(self.client(i)),
            node.name.clone(),
            Arc::new(Notify::new()),
            stop,
        ));
    }

    /// The pod's claim on node `i`: channel 0, with the config of the
    /// template the plugins made for `domain`.
    pub fn prepare(
        &self,
        i: usize,
        claim_uid: &str,
        template: &str,
    ) -> Result<pb::PrepareResponse, tonic::Status> {
        let parameters = self.api.state().templates[&("default".to_owned(), template.to_owned())]
            ["spec"]["spec"]["devices"]["config"][0]["opaque"]["parameters"]
            .clone();
        let request = pb::PrepareRequest {
            claim: Some(pb::ClaimRef {
                uid: claim_uid.to_owned(),
                namespace: "default".to_owned(),
                name: format!("{template}-{i}"),
            }),
            devices: vec![pb::AllocatedDevice {
                device: "channel-0".to_owned(),
                request_names: vec!["channel".to_owned()],
                pool: self.nodes[i].name.clone(),
                ..pb::AllocatedDevice::default()
            }],
            configs: vec![pb::OpaqueConfig {
                source: pb::ConfigSource::Claim as i32,
                requests: vec!["channel".to_owned()],
                parameters_json: parameters.to_string(),
            }],
        };
        let mut client = self.client(i);
        self.runtime
            .block_on(client.prepare_channel(pb::PrepareChannelRequest {
                claim: Some(request),
                domain: None,
            }))
            .map(tonic::Response::into_inner)
    }

    pub fn unprepare(&self, i: usize, claim_uid: &str) {
        let mut client = self.client(i);
        let request = pb::UnprepareRequest {
            claim: Some(pb::ClaimRef {
                uid: claim_uid.to_owned(),
                ..pb::ClaimRef::default()
            }),
        };
        let reply = self
            .runtime
            .block_on(client.unprepare_channel(request))
            .expect("unprepared");
        assert!(reply.into_inner().was_prepared);
    }

    pub fn domains(&self, i: usize) -> pb::ListDomainsResponse {
        let mut client = self.client(i);
        self.runtime
            .block_on(client.list_domains(pb::ListDomainsRequest {}))
            .expect("ListDomains")
            .into_inner()
    }

    /// Waits until node `i`'s gpusliced answers `done`.
    fn wait_node(&self, i: usize, what: &str, done: impl Fn(&pb::ListDomainsResponse) -> bool) {
        // The API server's waits wake on its changes; a node's answer is
        // asked again on each of them and at most every BOUND / 600.
        let asked = || done(&self.domains(i));
        let ok = (0..600).any(|_| {
            asked() || {
                self.api.wait_for(BOUND / 600, |_| false);
                false
            }
        });
        assert!(
            ok || asked(),
            "node {}: {what}: {:?}",
            i + 1,
            self.domains(i)
        );
    }

    fn wait_status(&self, name: &str, what: &str, done: impl Fn(&Value) -> bool) {
        let ok = self.api.wait_for(BOUND, |s| done(&s.status(name)));
        if !ok {
            let nodes: Vec<String> = (0..self.nodes.len())
                .filter(|i| self.nodes[*i].daemon.is_some())
                .map(|i| {
                    let log = self.nodes[i].dir.join("run/imex");
                    let logs: Vec<String> = std::fs::read_dir(&log)
                        .into_iter()
                        .flatten()
                        .flatten()
                        .map(|e| crate::peers::read(&e.path().join("imexd.log")))
                        .collect();
                    format!("node {}: {:?} imexd.log {logs:?}", i + 1, self.domains(i))
                })
                .collect();
            panic!(
                "{what}: {}\n{}",
                self.api.state().status(name),
                nodes.join("\n")
            );
        }
    }
}

pub fn node_config(tools: &Path, dir: &Path, address: &str, seed: &str) -> String {
    // The daemon's environment is cleared: a wrapper gives the stand-in the
    // file that makes it answer not ready while it exists.
    let wrapper = dir.join("nvidia-imex");
    write(
        &wrapper,
        &format!(
            "#!/bin/sh\nFAKE_IMEX_NOT_READY_FILE={} exec {} \"$@\"\n",
            dir.join("not-ready").display(),
            tools.join("fake-nvidia-imex").display()
        ),
    );
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .expect("chmod");
    format!(
        "socket = \"gpusliced.sock\"\nstate_dir = \"state\"\ncdi_dir = \"cdi\"\n\
         driver_root = \"root\"\n[backend]\nkind = \"sim\"\n[backend.sim]\n\
         instance = \"p6e-gb200.36xlarge\"\nseed = \"{seed}\"\n\
         hardware_state = \"run/sim-hardware.json\"\n[imex]\nprogram = \"{}\"\n\
         ctl_program = \"{}\"\nrun_dir = \"run\"\nbind_address = \"{address}\"\n",
        wrapper.display(),
        tools.join("fake-nvidia-imex-ctl").display()
    )
}

pub fn members(status: &Value) -> Vec<(String, String, String)> {
    status["nodes"]
        .as_array()
        .map(|nodes| {
            nodes
                .iter()
                .map(|n| {
                    let text = |k: &str| n[k].as_str().unwrap_or_default().to_owned();
                    (text("name"), text("cliqueID"), text("status"))
                })
                .collect()
        })
        .unwrap_or_default()
}

pub fn ready_members(count: usize) -> impl Fn(&Value) -> bool {
    move |status: &Value| {
        status["status"] == "Ready"
            && members(status).len() == count
            && members(status)
                .iter()
                .all(|(_, clique, ready)| clique == CLIQUE && ready == "Ready")
    }
}

/// The same addresses, in any order (peers come in index order, and the
/// indices in the order the nodes joined).
fn same(peers: &[String], addresses: &[String]) -> bool {
    let mut a = peers.to_vec();
    let mut b = addresses.to_vec();
    a.sort();
    b.sort();
    a == b
}

fn claim_uid(n: usize) -> String {
    format!("c0000000-0000-4000-8000-{n:012}")
}

#[test]
fn sim_nvidias_compute_domain_runs_on_four_gb200_nodes_through_its_faults() {
    let Some(tools) = tools() else { return };
    let mut cluster = Cluster::start(&tools, &addresses("127.0.0", 41, 4));
    let domain = nvidia_domain("nvbandwidth-test-job-1.yaml");
    let name = domain["metadata"]["name"]
        .as_str()
        .expect("name")
        .to_owned();
    let template = domain["spec"]["channel"]["resourceClaimTemplate"]["name"]
        .as_str()
        .expect("template")
        .to_owned();
    cluster
        .api
        .mutate(|s| s.put_domain(domain.clone(), "d0000000-0000-4000-8000-000000000001"));
    assert!(
        cluster.api.wait_for(BOUND, |s| s.templates.len() == 1),
        "the plugins make the workload template"
    );
    assert!(
        cluster.api.state().refused.is_empty(),
        "{:?}",
        cluster.api.state().refused
    );
    workers_join(&cluster, &name, &template);
    a_killed_daemon_goes_not_ready_then_ready(&cluster, &name);
    a_gpusliced_restart_holds(&mut cluster, &name);
    a_lost_node_leaves_its_peers(&mut cluster, &name);
    the_domain_deleted_leaves_nothing(&cluster);
}

/// Two workers first (numNodes 2: Ready with both), two more later.
fn workers_join(cluster: &Cluster, name: &str, template: &str) {
    for i in 0..2 {
        let reply = cluster
            .prepare(i, &claim_uid(i), template)
            .expect("prepared");
        let id = &reply.devices[0].cdi_device_ids[0];
        assert_eq!(
            id,
            &format!("k8s.gpuslice.dev/channel={}-channel", claim_uid(i))
        );
        let spec = std::fs::read_to_string(
            cluster.nodes[i]
                .dir
                .join("cdi")
                .join(format!("k8s.gpuslice.dev-channel_{}.json", claim_uid(i))),
        )
        .expect("spec");
        assert!(
            spec.contains("/dev/nvidia-caps-imex-channels/channel0"),
            "{spec}"
        );
    }
    cluster.wait_status(name, "two members Ready", ready_members(2));
    for i in 2..4 {
        cluster
            .prepare(i, &claim_uid(i), template)
            .expect("prepared");
    }
    cluster.wait_status(name, "four members Ready", ready_members(4));
    let all = cluster.nodes.to_vec_addresses();
    for i in 0..4 {
        cluster.wait_node(i, "told all four peers", |d| {
            d.domains
                .first()
                .is_some_and(|d| same(&member_addresses(d), &all))
        });
    }
}

/// A daemon killed, its restart not ready at first: NotReady, then Ready.
fn a_killed_daemon_goes_not_ready_then_ready(cluster: &Cluster, name: &str) {
    let pid = cluster.domains(1).domains[0].pid;
    write(&cluster.nodes[1].dir.join("not-ready"), "");
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(pid).expect("pid")),
        nix::sys::signal::Signal::SIGKILL,
    );
    cluster.wait_status(name, "node-2 NotReady", |s| {
        s["status"] == "NotReady"
            && members(s)
                .iter()
                .any(|(n, _, r)| n == "node-2" && r == "NotReady")
    });
    std::fs::remove_file(cluster.nodes[1].dir.join("not-ready")).expect("flag off");
    cluster.wait_status(name, "Ready again", ready_members(4));
    let restarted = &cluster.domains(1).domains[0];
    assert_ne!(restarted.pid, pid);
    assert_eq!(restarted.restarts, 1);
}

/// gpusliced restarts mid-domain: the daemon is taken over, the domain holds.
fn a_gpusliced_restart_holds(cluster: &mut Cluster, name: &str) {
    let pid = cluster.domains(2).domains[0].pid;
    cluster.nodes[2]
        .daemon
        .as_mut()
        .expect("daemon")
        .restart(BOUND);
    assert_eq!(
        cluster.domains(2).domains[0].pid,
        pid,
        "the same IMEX daemon"
    );
    cluster.wait_status(name, "still Ready", ready_members(4));
}

/// Node 4 lost (its plugin and gpusliced gone, its Node deleted): it leaves
/// its peers.
fn a_lost_node_leaves_its_peers(cluster: &mut Cluster, name: &str) {
    let _ = cluster.nodes[3].stop.send(true);
    drop(cluster.nodes[3].daemon.take());
    cluster.api.mutate(|s| s.nodes.remove("node-4"));
    cluster.wait_status(name, "three members", ready_members(3));
    let three = cluster.nodes[..3].to_vec_addresses();
    cluster.wait_node(0, "told three peers", |d| {
        d.domains
            .first()
            .is_some_and(|d| same(&member_addresses(d), &three))
    });
}

/// The pods go, then the domain: daemons stop, configs, channels and the
/// template go.
fn the_domain_deleted_leaves_nothing(cluster: &Cluster) {
    for i in 0..3 {
        cluster.unprepare(i, &claim_uid(i));
    }
    cluster.api.mutate(|s| s.domains.clear());
    assert!(
        cluster.api.wait_for(BOUND, |s| s.templates.is_empty()),
        "the template goes with its domain"
    );
    for i in 0..3 {
        assert!(cluster.domains(i).domains.is_empty());
        let imex = cluster.nodes[i].dir.join("run/imex");
        let left: Vec<_> = std::fs::read_dir(&imex)
            .into_iter()
            .flatten()
            .flatten()
            .collect();
        assert!(left.is_empty(), "node {}: {left:?}", i + 1);
        let specs: Vec<_> = std::fs::read_dir(cluster.nodes[i].dir.join("cdi"))
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().contains("-channel_"))
            .collect();
        assert!(specs.is_empty(), "node {}: {specs:?}", i + 1);
    }
    assert!(cluster.api.state().status_writes > 0);
}

#[test]
fn sim_two_compute_domains_on_one_clique_are_kept_apart() {
    let Some(tools) = tools() else { return };
    let cluster = Cluster::start(&tools, &addresses("127.0.0", 51, 4));
    let a = nvidia_domain("nvbandwidth-test-job-1.yaml");
    let mut b = nvidia_domain("channel-injection.yaml");
    b["metadata"]["namespace"] = json!("default");
    cluster.api.mutate(|s| {
        s.put_domain(a.clone(), "d0000000-0000-4000-8000-00000000000a");
        s.put_domain(b.clone(), "d0000000-0000-4000-8000-00000000000b");
    });
    assert!(cluster.api.wait_for(BOUND, |s| s.templates.len() == 2));
    let (template_a, template_b) = (
        "nvbandwidth-test-compute-domain-1-channel",
        "imex-channel-0",
    );
    for i in 0..2 {
        cluster
            .prepare(i, &claim_uid(10 + i), template_a)
            .expect("a");
    }
    for i in 2..4 {
        cluster
            .prepare(i, &claim_uid(20 + i), template_b)
            .expect("b");
    }
    let refused = cluster
        .prepare(0, &claim_uid(99), template_b)
        .expect_err("one domain a node");
    assert_eq!(
        refused.code(),
        tonic::Code::FailedPrecondition,
        "{refused:?}"
    );
    assert!(
        refused
            .message()
            .contains("d0000000-0000-4000-8000-00000000000a"),
        "{refused:?}"
    );
    cluster.wait_status(
        "nvbandwidth-test-compute-domain-1",
        "A on nodes 1 and 2",
        ready_members(2),
    );
    cluster.wait_status(
        "imex-channel-injection",
        "B on nodes 3 and 4",
        ready_members(2),
    );
    let names = |d: &str| -> Vec<String> {
        members(&cluster.api.state().status(d))
            .into_iter()
            .map(|(n, _, _)| n)
            .collect()
    };
    assert_eq!(
        names("nvbandwidth-test-compute-domain-1"),
        ["node-1", "node-2"]
    );
    assert_eq!(names("imex-channel-injection"), ["node-3", "node-4"]);
    let (first, second) = (
        cluster.nodes[..2].to_vec_addresses(),
        cluster.nodes[2..].to_vec_addresses(),
    );
    for i in 0..2 {
        cluster.wait_node(i, "peers of A only", |d| {
            d.domains
                .first()
                .is_some_and(|d| same(&member_addresses(d), &first))
        });
    }
    for i in 2..4 {
        cluster.wait_node(i, "peers of B only", |d| {
            d.domains
                .first()
                .is_some_and(|d| same(&member_addresses(d), &second))
        });
    }
}

/// The addresses of some nodes.
trait Addresses {
    fn to_vec_addresses(&self) -> Vec<String>;
}

impl Addresses for [Node] {
    fn to_vec_addresses(&self) -> Vec<String> {
        self.iter().map(|n| n.address.clone()).collect()
    }
}

/// The members' addresses of a domain as ListDomains shows it.
fn member_addresses(d: &pb::DomainInfo) -> Vec<String> {
    d.members.iter().map(|m| m.address.clone()).collect()
}
