//! The claim status chain through the real binaries: gpusliced (simulated,
//! sampling every second, idle after 2 s) and gpuslice-dra-plugin with its
//! own status identity (`[claim_status] kubeconfig`, a Node-bound
//! ServiceAccount granted our driver), against the fake API server's status
//! rules. A claim the Python kubelet prepares and nothing uses shows Ready
//! and then `Idle` True in its `status.devices` entry (beside another
//! driver's entry, which stays), `gpuslicectl claims --cluster --idle` lists
//! it from the API server, and the unprepare removes our entry;
//! `gpuslicectl status` says `claim status: written`. With `[claim_status]
//! mode = "off"` it says so instead, again after gpusliced restarts.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::claim_status_rules::{ClaimStatusSwitches, Identity};
use crate::fake_apiserver::{FakeApiServer, State};
use crate::gpusliced::Daemon;
use crate::peers::{self, Shim};
use crate::{BOUND, NODE, NODE_UID, claim, kubelet_claim, kubelet_in_temp_dir, uid};

const DRIVER: &str = "gpu.nvidia.com";

/// Our entries of claim ml/`name`, as stored.
fn ours(state: &State, name: &str) -> Vec<Value> {
    state
        .claims
        .get(&("ml".to_owned(), name.to_owned()))
        .and_then(|c| c["status"]["devices"].as_array().cloned())
        .unwrap_or_default()
        .into_iter()
        .filter(|e| e["driver"] == DRIVER)
        .collect()
}

fn condition(entry: &Value, type_: &str) -> Option<Value> {
    entry["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
        .cloned()
}

fn idle(state: &State, name: &str) -> bool {
    ours(state, name)
        .first()
        .and_then(|e| condition(e, "Idle"))
        .is_some_and(|c| c["status"] == "True")
}

/// The fake API server, its caller a Node-bound ServiceAccount granted
/// our driver (`associated-node:patch`), as packaging/rbac/ sets it up.
pub(crate) fn bound_server() -> FakeApiServer {
    let api = FakeApiServer::start(NODE, NODE_UID);
    api.mutate(|state| {
        state.claim_status = ClaimStatusSwitches {
            identity: Identity::ServiceAccount {
                node: Some(NODE.to_owned()),
                drivers: vec![DRIVER.to_owned()],
            },
            ..ClaimStatusSwitches::default()
        };
    });
    api
}

/// The plugin in `dir/shim`, writing claim status with a kubeconfig of
/// its own (`[claim_status] kubeconfig`) and `settings` (more keys of
/// `[claim_status]`, one per line).
pub(crate) fn start_status_shim(
    dir: &Path,
    api: &FakeApiServer,
    daemon: &Daemon,
    settings: &str,
) -> Shim {
    let shim_dir = dir.join("shim");
    std::fs::create_dir_all(&shim_dir).expect("shim dir");
    peers::write(
        &shim_dir.join("status-kubeconfig"),
        &format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: {}\n\
             users:\n- name: sa\n  user:\n    token: node-bound-sa-token\n\
             contexts:\n- name: fake\n  context:\n    cluster: fake\n    user: sa\ncurrent-context: fake\n",
            api.url
        ),
    );
    Shim::start_with(
        &shim_dir,
        &api.url,
        &daemon.socket,
        &format!("[claim_status]\nkubeconfig = \"status-kubeconfig\"\n{settings}"),
    )
}

#[test]
#[allow(clippy::too_many_lines, reason = "one scenario, read top to bottom")]
fn an_idle_claim_shows_idle_in_its_status_and_in_claims_cluster() {
    let Some((dir, kubelet)) = kubelet_in_temp_dir() else {
        return;
    };
    let api = bound_server();
    let daemon_dir = dir.path().join("daemon");
    let daemon = Daemon::start_with(
        &daemon_dir,
        4,
        "[activity]\ninterval_s = 1\nidle_after_s = 2\n",
    );
    let shim = start_status_shim(dir.path(), &api, &daemon, "refresh_s = 10\n");
    let shim_dir = shim.dir.clone();
    kubelet.call(
        &shim.registration_socket(),
        "notify",
        &json!({"registered": true}),
    );

    let other = json!({"driver": "other.example.com", "pool": NODE, "device": "nic-0",
        "conditions": [{"type": "Ready", "status": "True", "reason": "Up", "message": "",
                        "lastTransitionTime": "2026-09-01T09:00:00Z"}]});
    let mut idle_claim = claim("notebook", &uid(41), &["gpu-2"], &json!([]));
    idle_claim["status"]["allocation"]["devices"]["results"]
        .as_array_mut()
        .expect("results")
        .push(json!({"request": "nic", "driver": "other.example.com", "pool": NODE, "device": "nic-0"}));
    idle_claim["status"]["devices"] = json!([other]);
    api.put_claim(idle_claim);
    api.mutate(|state| {
        let key = (
            "other.example.com".to_owned(),
            NODE.to_owned(),
            "nic-0".to_owned(),
            String::new(),
        );
        state.claim_status_log.owners.insert(
            ("ml".into(), "notebook".into()),
            BTreeMap::from([(key, "other-manager".to_owned())]),
        );
    });
    // The kubelet's `call` of ml/notebook, which must succeed.
    let notebook = |call: &str| {
        let claims = json!({"claims": [kubelet_claim("notebook", &uid(41))]});
        let answer = kubelet.call(&shim.dra_socket(), call, &claims);
        assert_eq!(answer["claims"][&uid(41)]["error"], "", "{call}: {answer}");
    };
    notebook("prepare-v1");

    assert!(
        api.wait_for(BOUND, |s| idle(s, "notebook")),
        "no Idle=True entry; log {:?}; shim log:\n{}",
        api.state().claim_status_log,
        shim.log()
    );
    {
        let state = api.state();
        let entries = ours(&state, "notebook");
        let [entry] = entries.as_slice() else {
            panic!("one entry of ours: {entries:?}")
        };
        assert_eq!(
            (entry["pool"].as_str(), entry["device"].as_str()),
            (Some(NODE), Some("gpu-2"))
        );
        let ready = condition(entry, "Ready").expect("Ready");
        assert_eq!(
            (ready["status"].as_str(), ready["reason"].as_str()),
            (Some("True"), Some("Prepared"))
        );
        let idle = condition(entry, "Idle").expect("Idle");
        assert_eq!(idle["reason"], "NoGpuActivity", "{idle}");
        assert_eq!(entry["data"]["kind"], "DeviceUsage", "{entry}");
        assert_eq!(entry["data"]["sharing"], "exclusive", "{entry}");
        assert_eq!(entry["data"]["node"], NODE, "{entry}");
        let devices = &state.claims[&("ml".to_owned(), "notebook".to_owned())]["status"]["devices"];
        assert!(
            devices
                .as_array()
                .is_some_and(|d| d.iter().any(|e| e["driver"] == "other.example.com")),
            "the other driver's entry stays: {devices}"
        );
        assert!(
            state.claim_status_log.refusals.is_empty(),
            "{:?}",
            state.claim_status_log.refusals
        );
    }

    // The writer tells gpusliced after its round; `gpuslicectl status` shows it.
    let said = daemon.claim_status_until(BOUND, |l| l == "claim status: written");
    assert!(said.is_ok(), "{said:?}; shim log:\n{}", shim.log());
    assert_eq!(
        daemon.status_json()["claim_status"],
        json!({"access": "written", "reason": ""})
    );

    let kubeconfig = shim_dir.join("kubeconfig");
    let out = Command::new(crate::binaries::gpuslicectl())
        .args(["claims", "--cluster", "--idle", "1s", "--kubeconfig"])
        .arg(&kubeconfig)
        .output()
        .expect("run gpuslicectl");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let row = stdout
        .lines()
        .find(|l| l.starts_with("ml/notebook"))
        .unwrap_or_else(|| panic!("no ml/notebook row:\n{stdout}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(&cells[1..4], [NODE, "gpu-2", "exclusive"], "{stdout}");

    notebook("unprepare-v1");
    assert!(
        api.wait_for(BOUND, |s| ours(s, "notebook").is_empty()),
        "our entry stays after the unprepare; shim log:\n{}",
        shim.log()
    );
    let state = api.state();
    let devices = &state.claims[&("ml".to_owned(), "notebook".to_owned())]["status"]["devices"];
    assert_eq!(devices.as_array().map(Vec::len), Some(1), "{devices}");
    drop(state);
    drop(daemon);
}

#[test]
fn with_the_mode_off_gpuslicectl_status_says_so_across_a_gpusliced_restart() {
    let dir = tempfile::tempdir().expect("temp dir");
    let api = FakeApiServer::start(NODE, NODE_UID);
    let daemon_dir = dir.path().join("daemon");
    let mut daemon = Daemon::start(&daemon_dir, 1);
    assert!(
        !daemon.status_text().contains("claim status"),
        "no line before a plugin says it"
    );
    let shim_dir = dir.path().join("shim");
    let shim = Shim::start_with(
        &shim_dir,
        &api.url,
        &daemon.socket,
        "[claim_status]\nmode = \"off\"\n",
    );
    let off = "claim status: off: [claim_status] mode = \"off\"";
    for when in ["at start", "after a restart of gpusliced"] {
        if when != "at start" {
            // gpusliced forgets it; the plugin says it again on reconnecting.
            daemon.restart(BOUND);
        }
        let said = daemon.claim_status_until(BOUND, |l| l == off);
        assert!(said.is_ok(), "{when}: {said:?}; shim log:\n{}", shim.log());
        assert_eq!(
            daemon.status_json()["claim_status"],
            json!({"access": "off", "reason": "[claim_status] mode = \"off\""}),
            "{when}"
        );
    }
}
