//! One node for the channel engine's tests: its folders, its engine (a
//! child runner whose launcher is the real gpusliced), the stand-in's
//! record, and the claims it is asked to prepare.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use gpuslice::compute_domains::members::Member;
use gpuslice::compute_domains::nodes::{ChannelNodes, NodeMaker};
use gpuslice::compute_domains::request::ChannelConfigEntry;
use gpuslice::compute_domains::runner::child::ChildRunner;
use gpuslice::compute_domains::{
    ChannelDevice, ChannelRequest, DomainRef, DomainSettings, Domains,
};
use gpuslice_imex::network::RackNetwork;

use crate::tools::skip;

pub const DOMAIN: &str = "5b9c2d0e-7a41-4f3b-9c8d-2e6f1a0b3c4d";
pub const OTHER_DOMAIN: &str = "6c0d3e1f-8b52-4a4c-8d9e-3f7a2b1c4d5e";
pub const CLIQUE: &str = "4f3c2b1a-5d6e-4f70-8a9b-0c1d2e3f4a5b.0";
/// An upper bound for a hung stand-in, never a timing a test relies on.
pub const BOUND: Duration = Duration::from_secs(30);

/// The stand-ins' folder, when python3 runs them.
pub fn tools(test: &str) -> Option<PathBuf> {
    let ok = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        skip(test, "no python3 for the IMEX stand-ins");
        return None;
    }
    Some(crate::tools::repo_root().join("tests/tools"))
}

/// A node: its folders and settings.
pub struct Node {
    pub dir: tempfile::TempDir,
    pub settings: DomainSettings,
}

impl Node {
    /// A node bound to `address`, in `clique`; `env` is put in the
    /// stand-in daemon's environment.
    pub fn new(tools: &Path, address: &str, clique: Option<&str>, env: &str) -> Self {
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
            nodes: NodeMaker {
                how: ChannelNodes::Simulated,
                dev_root: root.join("sim-root"),
                driver_root: root.join("sim-root"),
            },
            imex_dir: root.join("run/imex"),
            program,
            ctl_program: tools.join("fake-nvidia-imex-ctl"),
            bind_address: Some(address.parse::<IpAddr>().expect("address")),
            rack: RackNetwork::parse(&["127.0.31.0/24".to_owned()]).expect("rack"),
            ready_bound: Duration::from_secs(10),
            clique: clique.map(str::to_owned),
            fabric_summary: "gpu-0 NVIDIA H100 80GB HBM3: no NVLink fabric".to_owned(),
        };
        std::fs::create_dir_all(&settings.cdi_dir).expect("cdi dir");
        Self { dir, settings }
    }

    /// The engine, started up as gpusliced starts it.
    pub fn engine(&self) -> Domains {
        self.engine_with_problems().0
    }

    /// The engine and what its start-up could not do.
    pub fn engine_with_problems(&self) -> (Domains, Vec<String>) {
        let runner = Arc::new(ChildRunner::new(PathBuf::from(env!(
            "CARGO_BIN_EXE_gpusliced"
        ))));
        let domains = Domains::new(self.settings.clone(), runner).expect("engine");
        let problems = domains.start_up().expect("start-up");
        (domains, problems)
    }

    /// What the stand-in daemons of this node recorded.
    pub fn record(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("record")).unwrap_or_default()
    }

    /// Claim `uid`'s spec, when written.
    pub fn spec(&self, uid: &str) -> Option<String> {
        std::fs::read_to_string(
            self.settings
                .cdi_dir
                .join(gpuslice::compute_domains::cdi::spec_file_name(uid)),
        )
        .ok()
    }

    /// The domain's folder.
    pub fn folder(&self, domain: &str) -> PathBuf {
        self.settings.imex_dir.join(domain)
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        // Daemons outlive an engine by design: end the test's own.
        for entry in std::fs::read_dir(&self.settings.imex_dir)
            .into_iter()
            .flatten()
            .flatten()
        {
            let pid = std::fs::read_to_string(entry.path().join("daemon.pid"))
                .ok()
                .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
                .and_then(|v| v["pid"].as_u64())
                .and_then(|p| u32::try_from(p).ok());
            if let Some(pid) = pid {
                gpuslice::supervise::process::kill_pid(pid);
            }
        }
    }
}

/// Waits until `done`, asking every 50 ms; panics after [`BOUND`].
pub fn wait_until(what: &str, done: impl Fn() -> bool) {
    let gate = std::sync::Mutex::new(());
    let pause = std::sync::Condvar::new();
    let deadline = std::time::Instant::now() + BOUND;
    let mut guard = gate.lock().expect("gate");
    while !done() {
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: not within {BOUND:?}"
        );
        guard = pause
            .wait_timeout(guard, Duration::from_millis(50))
            .expect("gate")
            .0;
    }
}

/// A claim in namespace `train` for `channel` of `domain`, which the caller
/// vouches for as `vouched` (namespace, name).
pub fn claim_vouched(
    uid: &str,
    channel: u32,
    domain: &str,
    vouched: Option<(&str, &str)>,
) -> ChannelRequest {
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
        vouched: vouched.map(|(namespace, name)| DomainRef {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            uid: domain.to_owned(),
        }),
    }
}

/// A claim of namespace `train` for `channel` of `domain`, vouched for as
/// `train/imex-channel-injection`.
pub fn claim(uid: &str, channel: u32, domain: &str) -> ChannelRequest {
    claim_vouched(
        uid,
        channel,
        domain,
        Some(("train", "imex-channel-injection")),
    )
}

/// Members by index and address.
pub fn members(list: &[(u32, &str)]) -> Vec<Member> {
    list.iter()
        .map(|(index, address)| Member {
            index: *index,
            address: (*address).to_owned(),
        })
        .collect()
}

pub const UID_A: &str = "0a000000-0000-4000-8000-00000000000a";
pub const UID_B: &str = "0b000000-0000-4000-8000-00000000000b";
pub const UID_C: &str = "0c000000-0000-4000-8000-00000000000c";
