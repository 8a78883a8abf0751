//! The second driver, `compute-domain.nvidia.com`: on a GB200 node in an
//! NVLink clique (`[backend.sim] instance = "p6e-gb200.36xlarge"`, IMEX
//! served by the stand-ins tests/tools/fake-nvidia-imex and
//! fake-nvidia-imex-ctl bound to 127.0.0.61, an address no other test uses)
//! the plugin registers it on sockets of its own, publishes its 2048 IMEX
//! channels (16 slices of 128, each write checked by the fake API server's
//! rules and schema), prepares a channel claim through gpusliced's
//! PrepareChannel with the ComputeDomain it found in the claim's namespace
//! (its ComputeDomain identity, `[compute_domains] kubeconfig`, against the
//! ComputeDomain API server of [`crate::fake_compute_domains`]; its CDI spec holds
//! the channel's device node) and unprepares it; on a node of simulated
//! H100s, without a clique, it neither registers nor publishes it, and says
//! so once.

use std::collections::BTreeSet;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::fake_apiserver::{FakeApiServer, State};
use crate::gpusliced::Daemon;
use crate::peers::Shim;
use crate::slice_rules::check_slice;
use crate::{BOUND, NODE, NODE_UID, kubelet_claim, kubelet_in_temp_dir, start_node, uid};

const DRIVER: &str = "compute-domain.nvidia.com";
const DOMAIN: &str = "7d1e4f2a-3b5c-4d6e-8f70-9a1b2c3d4e5f";
const OTHER_DOMAIN: &str = "8e2f5a3b-4c6d-4e7f-9a81-0b2c3d4e5f60";
const CLUSTER: &str = "2c4e6a8b-1d3f-4a5b-9c7d-0e2f4a6b8c1d";
/// The IMEX daemon's address: its own, so its ports are free.
const BIND: &str = "127.0.0.61";
const CHANNELS: usize = 2048;

fn tool(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/tools")
        .join(name)
}

/// gpusliced on a simulated GB200 node (4 GPUs in clique 3) in `dir`,
/// with the IMEX stand-ins.
fn gb200_daemon(dir: &Path) -> Daemon {
    let root = dir.join("root/dev");
    std::fs::create_dir_all(&root).expect("fake dev root");
    let nodes = (0..4)
        .map(|i| format!("nvidia{i}"))
        .chain(["nvidiactl".to_owned(), "nvidia-uvm".to_owned()]);
    for node in nodes {
        symlink("/dev/null", root.join(node)).expect("link fake device node");
    }
    // The daemon's environment is cleared: a wrapper finds python3.
    let wrapper = format!(
        "#!/bin/sh\nexec {} {} \"$@\"\n",
        which_python(),
        tool("fake-nvidia-imex").display()
    );
    let program = dir.join("nvidia-imex");
    crate::peers::write(&program, &wrapper);
    std::fs::set_permissions(
        &program,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .expect("wrapper mode");
    let text = format!(
        "socket = \"gpusliced.sock\"\nstate_dir = \"state\"\ncdi_dir = \"cdi\"\n\
         driver_root = \"root\"\n\
         [imex]\nprogram = \"{}\"\nctl_program = \"{}\"\nrun_dir = \"run\"\n\
         bind_address = \"{BIND}\"\nrack_network = [\"127.0.0.0/8\"]\nsupervisor = \"child\"\n\
         [backend]\nkind = \"sim\"\n[backend.sim]\ninstance = \"p6e-gb200.36xlarge\"\n\
         [backend.sim.fabric]\ncluster_uuid = \"{CLUSTER}\"\nclique_id = 3\n",
        program.display(),
        tool("fake-nvidia-imex-ctl").display()
    );
    Daemon::start_with_config(dir, &text)
}

/// Waits until `done`, looking every 50 ms; false after `bound` (an upper
/// bound for a hung plugin, never a timing the test relies on).
fn until(bound: std::time::Duration, done: impl Fn() -> bool) -> bool {
    let deadline = std::time::Instant::now() + bound;
    let (_never, pause) = std::sync::mpsc::channel::<()>();
    while !done() {
        if std::time::Instant::now() >= deadline {
            return false;
        }
        let _ = pause.recv_timeout(std::time::Duration::from_millis(50));
    }
    true
}

/// The python3 the IMEX stand-in runs with (absolute: the daemon's
/// environment has no PATH).
fn which_python() -> String {
    let out = std::process::Command::new("sh")
        .args(["-c", "command -v python3"])
        .output()
        .expect("sh");
    let found = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if found.is_empty() {
        "/usr/bin/python3".to_owned()
    } else {
        found
    }
}

/// Kills the IMEX daemons a test's gpusliced started under `dir` (one a
/// failed test left), by their pid files.
struct Leftovers(PathBuf);

impl Drop for Leftovers {
    fn drop(&mut self) {
        crate::compute_domains_cluster::kill_daemons(&self.0);
    }
}

/// The ComputeDomain API server with the domains the claims name, in `ml`,
/// and node-1's Node; the kubeconfig of node-1's ComputeDomain identity,
/// written in `dir`.
fn domains_api(dir: &Path) -> crate::fake_compute_domains::FakeDomainsApi {
    let api = crate::fake_compute_domains::FakeDomainsApi::start(None);
    let token = api.mutate(|s| {
        for (name, uid) in [("workers", DOMAIN), ("others", OTHER_DOMAIN)] {
            let domain = json!({"apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomain",
                "metadata": {"name": name, "namespace": "ml"},
                "spec": {"numNodes": 1, "channel": {"resourceClaimTemplate": {"name": format!("{name}-channel")}}}});
            s.put_domain(domain, uid);
        }
        s.put_node(NODE)
    });
    let kubeconfig = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: domains\n  cluster:\n    server: {}\n\
         users:\n- name: node\n  user:\n    token: {token}\n\
         contexts:\n- name: domains\n  context:\n    cluster: domains\n    user: node\n\
         current-context: domains\n",
        api.url
    );
    std::fs::create_dir_all(dir).expect("shim dir");
    crate::peers::write(&dir.join("domains-kubeconfig"), &kubeconfig);
    api
}

fn registration_socket(shim: &Shim) -> PathBuf {
    shim.dir.join(format!("registry/{DRIVER}-reg.sock"))
}

fn dra_socket(shim: &Shim) -> PathBuf {
    shim.dir.join(format!("plugins/{DRIVER}/dra.sock"))
}

/// The channel pool, when it is whole: its generation and device names.
fn channel_pool(state: &State) -> Option<(i64, Vec<String>)> {
    let slices: Vec<&Value> = (state.slices.values())
        .filter(|s| s["spec"]["driver"] == DRIVER)
        .collect();
    let generations: BTreeSet<Option<i64>> = slices
        .iter()
        .map(|s| s["spec"]["pool"]["generation"].as_i64())
        .collect();
    let [Some(generation)] = generations.into_iter().collect::<Vec<_>>()[..] else {
        return None;
    };
    if !slices
        .iter()
        .all(|s| s["spec"]["pool"]["resourceSliceCount"] == json!(slices.len()))
    {
        return None;
    }
    let mut names: Vec<String> = slices
        .iter()
        .flat_map(|s| s["spec"]["devices"].as_array().cloned().unwrap_or_default())
        .filter_map(|d| d["name"].as_str().map(str::to_owned))
        .collect();
    names.sort();
    (names.len() == CHANNELS).then_some((generation, names))
}

fn channel_claim(name: &str, uid: &str, device: &str) -> Value {
    json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"namespace": "ml", "name": name, "uid": uid},
        "spec": {"devices": {"requests": [{"name": "channel",
            "exactly": {"deviceClassName": "compute-domain-default-channel.nvidia.com"}}]}},
        "status": {"allocation": {"devices": {
            "results": [{"request": "channel", "driver": DRIVER, "pool": NODE, "device": device}],
            "config": [{"source": "FromClaim", "requests": ["channel"], "opaque": {"driver": DRIVER,
                "parameters": {"apiVersion": "resource.nvidia.com/v1beta1",
                    "kind": "ComputeDomainChannelConfig", "domainID": DOMAIN}}}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [NODE]}]}]}}}})
}

/// The channel claim's CDI spec file in `cdi_dir`, if there is one.
fn channel_spec(cdi_dir: &Path, claim_uid: &str) -> Option<String> {
    std::fs::read_dir(cdi_dir)
        .into_iter()
        .flatten()
        .flatten()
        .find(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.contains("channel") && name.contains(claim_uid)
        })
        .map(|e| crate::peers::read(&e.path()))
}

#[test]
#[allow(clippy::too_many_lines, reason = "one scenario, read top to bottom")]
fn a_gb200_node_serves_compute_domain_channels() {
    let Some((dir, kubelet)) = kubelet_in_temp_dir() else {
        return;
    };
    let _leftovers = Leftovers(dir.path().join("daemon"));
    let api = FakeApiServer::start(NODE, NODE_UID);
    let daemon_dir = dir.path().join("daemon");
    let daemon = gb200_daemon(&daemon_dir);
    let shim_dir = dir.path().join("shim");
    let domains = domains_api(&shim_dir);
    let shim = Shim::start_with(
        &shim_dir,
        &api.url,
        &daemon.socket,
        &format!(
            "[compute_domains]\nkubeconfig = \"{}\"\n",
            shim_dir.join("domains-kubeconfig").display()
        ),
    );

    // Its own registration, as the kubelet's plugin watcher reads it (the
    // socket appears once gpusliced has answered the clique).
    assert!(
        until(BOUND, || registration_socket(&shim).exists()),
        "no registration socket for {DRIVER}; shim log:\n{}",
        shim.log()
    );
    let info = kubelet.call(&registration_socket(&shim), "getinfo", &json!({}));
    assert_eq!(info["type"], "DRAPlugin");
    assert_eq!(info["name"], DRIVER);
    assert_eq!(info["endpoint"], json!(dra_socket(&shim).to_string_lossy()));
    assert_eq!(
        info["supported_versions"],
        json!(["v1.DRAPlugin", "v1beta1.DRAPlugin"])
    );
    kubelet.call(
        &registration_socket(&shim),
        "notify",
        &json!({"registered": true}),
    );
    // The GPU driver is registered beside it, as before.
    let gpus = kubelet.call(&shim.registration_socket(), "getinfo", &json!({}));
    assert_eq!(gpus["name"], "gpu.nvidia.com");

    // The channel pool: 2048 channels in 16 slices of 128, every write
    // within the rules; the GPUs' pool beside it, apart.
    assert!(
        api.wait_for(BOUND, |s| channel_pool(s).is_some()),
        "no channel pool; violations {:?}; shim log:\n{}",
        api.state().violations,
        shim.log()
    );
    {
        let state = api.state();
        assert!(state.violations.is_empty(), "{:?}", state.violations);
        let (generation, names) = channel_pool(&state).expect("pool");
        assert!(generation >= 1);
        let want: BTreeSet<String> = (0..CHANNELS).map(|i| format!("channel-{i}")).collect();
        assert_eq!(names.iter().cloned().collect::<BTreeSet<_>>(), want);
        let slices: Vec<&Value> = (state.slices.values())
            .filter(|s| s["spec"]["driver"] == DRIVER)
            .collect();
        assert_eq!(slices.len(), 16);
        for slice in &slices {
            let name = slice["metadata"]["name"].as_str().expect("name");
            check_slice(slice, name, &(NODE.to_owned(), NODE_UID.to_owned())).expect("shape");
            assert_eq!(slice["spec"]["pool"]["name"], NODE);
            assert_eq!(slice["spec"]["nodeName"], NODE);
            let devices = slice["spec"]["devices"].as_array().expect("devices");
            assert_eq!(devices.len(), 128, "{name}");
            for device in devices {
                assert_eq!(device["attributes"]["type"], json!({"string": "channel"}));
                let id = device["attributes"]["id"]["int"].as_i64().expect("id");
                assert_eq!(device["name"], format!("channel-{id}"));
            }
        }
        assert!(
            (state.slices.values()).any(|s| s["spec"]["driver"] == "gpu.nvidia.com"),
            "the GPU pool too"
        );
        for selector in state.list_selectors.iter().chain(&state.watch_selectors) {
            assert!(
                selector.contains("spec.nodeName=node-1")
                    && (selector.contains(&format!("spec.driver={DRIVER}"))
                        || selector.contains("spec.driver=gpu.nvidia.com")),
                "the node authorizer's field selector, per driver: {selector}"
            );
        }
    }

    // A channel claim through the second driver: gpusliced's PrepareChannel
    // answers its CDI id; the spec holds the channel's device node.
    let a = uid(41);
    api.put_claim(channel_claim("workers", &a, "channel-0"));
    let prepared = kubelet.call(
        &dra_socket(&shim),
        "prepare-v1",
        &json!({"claims": [kubelet_claim("workers", &a)]}),
    );
    let entry = &prepared["claims"][&a];
    assert_eq!(entry["error"], "", "{prepared}; shim log:\n{}", shim.log());
    assert_eq!(entry["devices"][0]["device_name"], "channel-0");
    assert_eq!(entry["devices"][0]["pool_name"], NODE);
    assert_eq!(entry["devices"][0]["request_names"], json!(["channel"]));
    let ids = entry["devices"][0]["cdi_device_ids"].clone();
    assert_eq!(ids.as_array().map(Vec::len), Some(1), "{ids}");
    assert!(ids[0].as_str().is_some_and(|id| id.contains(&a)), "{ids}");
    let spec = channel_spec(&daemon.cdi_dir, &a).expect("the channel claim's CDI spec");
    assert!(
        spec.contains("/dev/nvidia-caps-imex-channels/channel0"),
        "{spec}"
    );
    // The same through v1beta1: the same id.
    let again = kubelet.call(
        &dra_socket(&shim),
        "prepare-v1beta1",
        &json!({"claims": [kubelet_claim("workers", &a)]}),
    );
    assert_eq!(again["claims"][&a]["devices"][0]["cdi_device_ids"], ids);

    // The plugin's ComputeDomain side: the domain's template made, the
    // node's Lease and its entry of the domain's status.
    assert!(
        domains.wait_for(BOUND, |s| s.templates().len() == 2
            && s.status_in("ml", "workers")["nodes"][0]["name"] == NODE
            && s.leases().len() == 1),
        "templates, entry and Lease; refused {:?}; shim log:\n{}",
        domains.state().refused,
        shim.log()
    );

    // A claim of the GPU driver sent to the channel driver has none of its
    // devices: refused for that claim alone, beside one that fails in
    // gpusliced (a second domain's claim is refused naming the first).
    let (b, c) = (uid(42), uid(43));
    api.put_claim(crate::claim("gpu-claim", &b, &["gpu-0"], &json!([])));
    let mut other = channel_claim("other-domain", &c, "channel-1");
    other["status"]["allocation"]["devices"]["config"][0]["opaque"]["parameters"]["domainID"] =
        json!(OTHER_DOMAIN);
    api.put_claim(other);
    let batch = kubelet.call(
        &dra_socket(&shim),
        "prepare-v1",
        &json!({"claims": [kubelet_claim("gpu-claim", &b), kubelet_claim("other-domain", &c)]}),
    );
    let error = |u: &str| {
        batch["claims"][u]["error"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    assert!(
        error(&b).contains(&format!("no device allocated by driver {DRIVER}")),
        "{batch}"
    );
    assert!(
        error(&c).contains("gpusliced refused") && error(&c).contains(DOMAIN),
        "{batch}"
    );
    assert!(channel_spec(&daemon.cdi_dir, &c).is_none());
    // One naming a domain the namespace does not have: refused by the
    // plugin, naming the namespace.
    let d = uid(45);
    let mut ghost = channel_claim("ghost", &d, "channel-2");
    ghost["status"]["allocation"]["devices"]["config"][0]["opaque"]["parameters"]["domainID"] =
        json!("9f3a6b4c-5d7e-4f80-8b92-1c3d4e5f6071");
    api.put_claim(ghost);
    let answer = kubelet.call(
        &dra_socket(&shim),
        "prepare-v1",
        &json!({"claims": [kubelet_claim("ghost", &d)]}),
    );
    let said = answer["claims"][&d]["error"].as_str().unwrap_or_default();
    assert!(
        said.contains("does not exist in the claim's namespace ml"),
        "{answer}"
    );

    // Unprepare: the spec goes; again, and an unknown claim, succeed.
    for op in ["unprepare-v1", "unprepare-v1beta1"] {
        let gone = kubelet.call(
            &dra_socket(&shim),
            op,
            &json!({"claims": [kubelet_claim("workers", &a), kubelet_claim("never", &uid(44))]}),
        );
        for u in [&a, &uid(44)] {
            assert_eq!(gone["claims"][u.as_str()]["error"], "", "{op}: {gone}");
        }
        assert!(channel_spec(&daemon.cdi_dir, &a).is_none(), "{op}");
    }
    // Its last channel gone, the node leaves: its entry, then its Lease.
    let left = domains.wait_for(BOUND, |s| {
        s.leases().is_empty()
            && s.status_in("ml", "workers")["nodes"]
                .as_array()
                .is_none_or(Vec::is_empty)
    });
    let (status, leases) = {
        let state = domains.state();
        (state.status_in("ml", "workers"), state.leases().clone())
    };
    assert!(
        left,
        "the node left: {status} {leases:?}; shim log:\n{}",
        shim.log()
    );

    // SIGTERM: both drivers' sockets removed.
    let mut shim = shim;
    shim.terminate();
    let status = shim.wait_exit(BOUND);
    assert!(status.success(), "exit {status:?}; log:\n{}", shim.log());
    for socket in [registration_socket(&shim), dra_socket(&shim)] {
        assert!(!socket.exists(), "{} left behind", socket.display());
    }
}

#[test]
fn a_node_without_a_clique_does_not_serve_compute_domains() {
    let Some((dir, kubelet)) = kubelet_in_temp_dir() else {
        return;
    };
    let (api, _daemon, mut shim) = start_node(dir.path(), 2);
    let said = "gpusliced reports no multi-node NVLink clique";
    assert!(
        until(BOUND, || shim.log().contains(said)
            && (api.state().slices.values())
                .any(|s| s["spec"]["driver"] == "gpu.nvidia.com")),
        "no word of the missing clique, or no GPU pool; shim log:\n{}",
        shim.log()
    );
    assert_eq!(shim.log().matches(said).count(), 1, "said once");
    // The GPU driver serves; the channel driver has no socket and no slice.
    let info = kubelet.call(&shim.registration_socket(), "getinfo", &json!({}));
    assert_eq!(info["name"], "gpu.nvidia.com");
    assert!(!registration_socket(&shim).exists());
    assert!(!dra_socket(&shim).exists());
    {
        let state = api.state();
        assert!(
            !(state.slices.values()).any(|s| s["spec"]["driver"] == DRIVER),
            "no channel slices"
        );
        assert!(
            !(state.list_selectors.iter().chain(&state.watch_selectors))
                .any(|s| s.contains(DRIVER)),
            "the channel driver's slices are not even listed"
        );
    }
    shim.terminate();
    let status = shim.wait_exit(BOUND);
    assert!(status.success(), "exit {status:?}; log:\n{}", shim.log());
}
