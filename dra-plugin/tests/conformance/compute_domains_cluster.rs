//! A cluster of simulated GB200 nodes for the ComputeDomain tests and the
//! bench: each node a real gpusliced (`p6e-gb200.36xlarge`, the IMEX
//! stand-ins of tests/tools bound to a loopback address of its own, `[imex]
//! rack_network = ["127.0.0.0/8"]`, the daemons as children in their own
//! mount namespaces) and its plugin's ComputeDomain side, in process: the
//! loop that keeps the domains (`compute_domains::status::task::start`, its own kube
//! client with its own Node-bound token) and the channel driver's DRA core
//! (`DraCore` with its `ChannelSide`), against one
//! [`crate::fake_compute_domains`] API server. The test plays the scheduler and
//! the kubelet: a claim put in the API server, allocated to the node, and
//! the core's prepare called as the kubelet would.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use gpuslice_dra_plugin::compute_domains::status::task;
use gpuslice_dra_plugin::dra::{ChannelSide, DraCore, Forward};
use gpuslice_dra_plugin::gpusliced::{GpuSlice, connect_lazy};
use gpuslice_dra_plugin::proto::dra_v1 as dra;
use gpuslice_proto::gpuslice::v1 as pb;
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::admission::{Admission, UserInfo};
use crate::fake_compute_domains::{FakeDomainsApi, Kind};
use crate::gpusliced::Daemon;
use crate::peers::write;

pub const BOUND: Duration = Duration::from_secs(60);
pub const CLIQUE: &str = "4f3c2b1a-5d6e-4f70-8a9b-0c1d2e3f4a5b.1";
pub const DRIVER: &str = "compute-domain.nvidia.com";
/// Where the membership Leases live.
pub const LEASES: &str = "gpuslice-system";

/// The IMEX stand-ins' folder, when python3 runs them.
pub fn tools() -> Option<PathBuf> {
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

/// The plugin side of a node, while it runs.
struct Plugin {
    stop: watch::Sender<bool>,
    core: Arc<DraCore>,
}

/// One node.
pub struct Node {
    pub name: String,
    pub address: String,
    pub dir: PathBuf,
    pub daemon: Option<Daemon>,
    plugin: Option<Plugin>,
}

/// The nodes and the API server, with a runtime for the plugins.
pub struct Cluster {
    runtime: tokio::runtime::Runtime,
    pub api: FakeDomainsApi,
    pub nodes: Vec<Node>,
    _dir: tempfile::TempDir,
}

/// `count` loopback addresses from `<network>.<first>` up.
pub fn addresses(network: &str, first: usize, count: usize) -> Vec<String> {
    (first..first + count)
        .map(|host| format!("{network}.{host}"))
        .collect()
}

/// Kills the IMEX daemons gpusliced left under `dir` (they outlive it by
/// design), by the pid files in their folders.
pub fn kill_daemons(dir: &Path) {
    let imex = dir.join("run/imex");
    for entry in std::fs::read_dir(&imex).into_iter().flatten().flatten() {
        let pid = std::fs::read_to_string(entry.path().join("daemon.pid"))
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .and_then(|v| v["pid"].as_i64())
            .and_then(|p| i32::try_from(p).ok());
        if let Some(pid) = pid {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for i in 0..self.nodes.len() {
            self.stop_plugin(i);
            // gpusliced first: it would start a killed IMEX daemon again.
            drop(self.nodes[i].daemon.take());
            kill_daemons(&self.nodes[i].dir);
        }
    }
}

/// gpusliced's config for a node bound to `address`.
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
         ctl_program = \"{}\"\nrun_dir = \"run\"\nbind_address = \"{address}\"\n\
         rack_network = [\"127.0.0.0/8\"]\nsupervisor = \"child\"\n",
        wrapper.display(),
        tools.join("fake-nvidia-imex-ctl").display()
    )
}

impl Cluster {
    /// One GB200 node on each of `addresses` (node-1, node-2, ...), their
    /// gpusliceds started at once, each with its Node and tokens in the API
    /// server (whose writes of the compute-domains identity `admission`
    /// judges, when given); then their plugins.
    pub fn start(
        tools: &Path,
        addresses: &[String],
        admission: Option<&'static Admission>,
    ) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let nodes: Vec<Node> = std::thread::scope(|scope| {
            let started: Vec<_> = (addresses.iter().enumerate())
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
                            plugin: None,
                        }
                    })
                })
                .collect();
            (started.into_iter())
                .map(|h| h.join().expect("gpusliced started"))
                .collect()
        });
        let mut cluster = Self {
            runtime,
            api: FakeDomainsApi::start(admission),
            nodes,
            _dir: dir,
        };
        for i in 0..cluster.nodes.len() {
            let name = cluster.nodes[i].name.clone();
            cluster.api.mutate(|s| {
                s.put_node(&name);
                s.put_token(&format!("kubelet-{name}"), kubelet_user(&name));
            });
            cluster.start_plugin(i);
        }
        cluster
    }

    /// gpusliced's client of node `i`.
    pub fn client(&self, i: usize) -> GpuSlice {
        let _guard = self.runtime.enter();
        connect_lazy(self.nodes[i].dir.join("gpusliced.sock"))
    }

    /// A kube client of the fake API server with `token`.
    pub fn kube(&self, token: &str) -> kube::Client {
        let _guard = self.runtime.enter();
        let mut config = kube::Config::new(self.api.url.parse().expect("url"));
        config.auth_info.token = Some(token.to_owned().into());
        kube::Client::try_from(config).expect("kube client")
    }

    /// Starts node `i`'s plugin side: its domain loop with its
    /// compute-domains token, its channel core with its kubelet's.
    pub fn start_plugin(&mut self, i: usize) {
        let name = self.nodes[i].name.clone();
        let domains_kube = self.kube(&format!("token-of-{name}"));
        let claims_kube = self.kube(&format!("kubelet-{name}"));
        let gpusliced = self.client(i);
        let (stop, stopped) = watch::channel(false);
        let _guard = self.runtime.enter();
        let (keeper, _tasks) = task::start(
            task::Setup {
                kube: domains_kube,
                gpusliced: gpusliced.clone(),
                node: name.clone(),
                lease_namespace: LEASES.to_owned(),
            },
            &stopped,
        );
        let core = DraCore::new(DRIVER.to_owned(), Forward::Channels, claims_kube, gpusliced)
            .with_channels(ChannelSide {
                node: name,
                lookup: keeper.lookup,
                wake: keeper.wake,
            });
        self.nodes[i].plugin = Some(Plugin {
            stop,
            core: Arc::new(core),
        });
    }

    /// Stops node `i`'s plugin side.
    pub fn stop_plugin(&mut self, i: usize) {
        if let Some(plugin) = self.nodes[i].plugin.take() {
            let _ = plugin.stop.send(true);
        }
    }

    fn core(&self, i: usize) -> Arc<DraCore> {
        let plugin = self.nodes[i]
            .plugin
            .as_ref()
            .expect("the node's plugin runs");
        Arc::clone(&plugin.core)
    }

    /// The channel claim `namespace/name` (uid `uid`) allocated channel 0 of
    /// node `on`, configured with `parameters`, put in the API server.
    pub fn put_claim(&self, on: usize, uid: &str, namespace: &str, name: &str, parameters: &Value) {
        let node = &self.nodes[on].name;
        let claim = json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"namespace": namespace, "name": name, "uid": uid},
            "spec": {"devices": {"requests": [{"name": "channel",
                "exactly": {"deviceClassName": "compute-domain-default-channel.nvidia.com"}}]}},
            "status": {"allocation": {"devices": {
                "results": [{"request": "channel", "driver": DRIVER, "pool": node, "device": "channel-0"}],
                "config": [{"source": "FromClaim", "requests": ["channel"],
                            "opaque": {"driver": DRIVER, "parameters": parameters}}]},
                "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}}});
        self.api.mutate(|s| s.put_claim(claim));
    }

    /// The config the template `namespace/template` gives its claims.
    pub fn template_parameters(&self, namespace: &str, template: &str) -> Value {
        let state = self.api.state();
        let made = state
            .object(Kind::Template, namespace, template)
            .unwrap_or_else(|| panic!("no template {namespace}/{template}"));
        made["spec"]["spec"]["devices"]["config"][0]["opaque"]["parameters"].clone()
    }

    /// The kubelet's prepare on node `i` of the claim `namespace/name`:
    /// its CDI ids, or the error the plugin answered.
    pub fn prepare_claim(
        &self,
        i: usize,
        uid: &str,
        namespace: &str,
        name: &str,
    ) -> Result<Vec<String>, String> {
        let core = self.core(i);
        let claim = dra::Claim {
            namespace: namespace.to_owned(),
            uid: uid.to_owned(),
            name: name.to_owned(),
        };
        let reply = self.runtime.block_on(core.prepare(vec![claim]));
        let entry = reply.claims.get(uid).cloned().unwrap_or_default();
        if entry.error.is_empty() {
            Ok(entry
                .devices
                .into_iter()
                .flat_map(|d| d.cdi_device_ids)
                .collect())
        } else {
            Err(entry.error)
        }
    }

    /// A pod's channel claim on node `i` made from the template
    /// `namespace/template`, prepared.
    pub fn prepare(
        &self,
        i: usize,
        uid: &str,
        namespace: &str,
        template: &str,
    ) -> Result<Vec<String>, String> {
        let parameters = self.template_parameters(namespace, template);
        let name = format!("{template}-{i}");
        self.put_claim(i, uid, namespace, &name, &parameters);
        self.prepare_claim(i, uid, namespace, &name)
    }

    /// The kubelet's unprepare on node `i`.
    pub fn unprepare(&self, i: usize, uid: &str) {
        let core = self.core(i);
        let claim = dra::Claim {
            namespace: String::new(),
            uid: uid.to_owned(),
            name: String::new(),
        };
        let reply = self.runtime.block_on(core.unprepare(vec![claim]));
        let error = reply
            .claims
            .get(uid)
            .map(|c| c.error.clone())
            .unwrap_or_default();
        assert!(error.is_empty(), "unprepare on node {}: {error}", i + 1);
    }

    pub fn domains(&self, i: usize) -> pb::ListDomainsResponse {
        let mut client = self.client(i);
        self.runtime
            .block_on(client.list_domains(pb::ListDomainsRequest {}))
            .expect("ListDomains")
            .into_inner()
    }

    /// Waits until node `i`'s gpusliced answers `done`.
    pub fn wait_node(&self, i: usize, what: &str, done: impl Fn(&pb::ListDomainsResponse) -> bool) {
        // Asked again on each change of the API server, and at most every
        // 100 ms (an upper bound, not a timing).
        let ok = (0..600).any(|_| {
            done(&self.domains(i)) || {
                self.api.wait_for(BOUND / 600, |_| false);
                false
            }
        });
        assert!(ok, "node {}: {what}: {:?}", i + 1, self.domains(i));
    }

    /// Waits until the status of `namespace/name` is `done`.
    pub fn wait_status(
        &self,
        namespace: &str,
        name: &str,
        what: &str,
        done: impl Fn(&Value) -> bool,
    ) {
        if self
            .api
            .wait_for(BOUND, |s| done(&s.status_in(namespace, name)))
        {
            return;
        }
        let nodes: Vec<String> = (0..self.nodes.len())
            .filter(|i| self.nodes[*i].daemon.is_some())
            .map(|i| format!("node {}: {:?}", i + 1, self.domains(i)))
            .collect();
        let (status, refused) = {
            let state = self.api.state();
            (state.status_in(namespace, name), state.refused.clone())
        };
        panic!(
            "{what}: {status}\nrefused: {refused:?}\n{}",
            nodes.join("\n")
        );
    }

    /// The IMEX daemon's config file of `domain` on node `i`.
    pub fn imex_config(&self, i: usize, domain: &str) -> PathBuf {
        self.nodes[i]
            .dir
            .join("run/imex")
            .join(domain)
            .join("imexd.cfg")
    }
}

/// The user the kubelet's identity on `node` is.
fn kubelet_user(node: &str) -> UserInfo {
    UserInfo {
        username: format!("system:node:{node}"),
        uid: String::new(),
        groups: vec!["system:nodes".to_owned(), "system:authenticated".to_owned()],
        extra: std::collections::BTreeMap::new(),
    }
}

/// The entries of a status: (name, cliqueID, status).
pub fn members(status: &Value) -> Vec<(String, String, String)> {
    (status["nodes"].as_array().into_iter().flatten())
        .map(|n| {
            let text = |k: &str| n[k].as_str().unwrap_or_default().to_owned();
            (text("name"), text("cliqueID"), text("status"))
        })
        .collect()
}

/// Ready with `count` entries, each Ready in the clique.
pub fn ready_members(count: usize) -> impl Fn(&Value) -> bool {
    move |status: &Value| {
        let members = members(status);
        status["status"] == "Ready"
            && members.len() == count
            && (members.iter()).all(|(_, clique, ready)| clique == CLIQUE && ready == "Ready")
    }
}

/// The members' addresses as ListDomains shows a domain's, sorted.
pub fn member_addresses(d: &pb::DomainInfo) -> Vec<String> {
    let mut all: Vec<String> = d.members.iter().map(|m| m.address.clone()).collect();
    all.sort();
    all
}

/// The addresses of some nodes, sorted.
pub fn addresses_of(nodes: &[Node]) -> Vec<String> {
    let mut all: Vec<String> = nodes.iter().map(|n| n.address.clone()).collect();
    all.sort();
    all
}

/// Whether a status history ever goes from Ready back to NotReady.
pub fn flaps(history: &[(std::time::Instant, Value)]) -> bool {
    let mut ready = false;
    for (_, status) in history {
        match status["status"].as_str() {
            Some("Ready") => ready = true,
            _ if ready => return true,
            _ => {}
        }
    }
    false
}
