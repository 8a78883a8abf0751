//! The sampler on the simulated backend, with a real engine and real
//! prepared claims: the test kit's node, with the fake nvidia-smi and MPS
//! control daemons.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::{Sampler, SamplerSettings};
use crate::activity::WarningKind;
use crate::activity::fixtures::{A, B, GIB};
use crate::cdi_build::marker::claim_var_name;
use crate::claims::mps_daemon::supervisor::DAEMON_MARKER;
use crate::claims::{Engine, NodeReads, PrepareRequest};
use crate::config::{MigConfig, MigGpuConfig, MigOffering};
use crate::gpu::sim::{SimBackend, SimProcess};
use crate::testkit::{SimNode, SimNodeBuilder, requests};

mod actions;
mod at_once;
mod episodes;
mod history;
mod processes;
mod samples;
mod summary;

/// The engine's reads, with `daemons` among gpusliced's own daemons.
#[derive(Debug)]
struct WithDaemons {
    engine: Arc<Engine>,
    daemons: Vec<u32>,
}

impl NodeReads for WithDaemons {
    fn inventory(&self) -> Arc<crate::inventory::Inventory> {
        self.engine.inventory()
    }

    fn claims(&self) -> Vec<crate::state::ClaimRecord> {
        self.engine.claims()
    }

    fn usage_reads(&self) -> crate::gpu::UsageReads<'_> {
        NodeReads::usage_reads(self.engine.as_ref())
    }

    fn own_daemon_pids(&self) -> Vec<u32> {
        let mut pids = self.engine.own_daemon_pids();
        pids.extend(&self.daemons);
        pids
    }
}

/// A simulated node: the backend (to start fake processes on), an engine
/// with the fake tools, its state in the node's folder.
struct Node {
    node: SimNode,
    backend: Arc<SimBackend>,
    engine: Arc<Engine>,
}

impl Node {
    fn new(gpus: usize) -> Self {
        Self::with_mig(gpus, &MigConfig::default())
    }

    /// One GPU, held whole by claim A.
    fn held_by_a() -> Self {
        let node = Self::new(1);
        node.engine.prepare(&request(A, &["gpu-0"])).unwrap();
        node
    }

    /// One GPU in MIG mode, offering every legal slice (`advertise =
    /// "partitionable"`).
    fn partitionable() -> Self {
        let mig = MigConfig {
            advertise: Some(MigOffering::Partitionable),
            gpu: vec![MigGpuConfig::default()],
            ..MigConfig::default()
        };
        Self::with_mig(1, &mig)
    }

    /// A node whose GPUs `mig` selects run in MIG mode.
    fn with_mig(gpus: usize, mig: &MigConfig) -> Self {
        let node = SimNodeBuilder::h100s(gpus)
            .mig(mig.clone())
            .fake_tools()
            .start();
        Self {
            backend: Arc::clone(&node.sim),
            engine: Arc::clone(node.engine()),
            node,
        }
    }

    fn state_dir(&self) -> PathBuf {
        self.node.state_dir()
    }

    /// Starts the sampling task on the node as `[activity] interval_s =
    /// interval_s` (0: off) and the default `[advice]`, keeping its files in
    /// the node's state dir.
    fn start_sampling(
        &self,
        interval_s: u64,
    ) -> (
        crate::activity::ActivityHandle,
        Option<crate::activity::ActivityTask>,
    ) {
        let config = crate::config::ActivityConfig {
            interval_s,
            ..crate::config::ActivityConfig::default()
        };
        crate::activity::start(
            self.engine.clone(),
            &config,
            &crate::config::AdviceConfig::default(),
            &self.state_dir(),
            Vec::new(),
        )
    }

    fn sampler(&self) -> Sampler {
        self.sampler_with_daemons(&[])
    }

    /// A sampler that also takes `daemons` for gpusliced's own (the fake
    /// MPS starts no process to stand for them).
    fn sampler_with_daemons(&self, daemons: &[u32]) -> Sampler {
        Sampler::new(
            Arc::new(WithDaemons {
                engine: self.engine.clone(),
                daemons: daemons.to_vec(),
            }),
            SamplerSettings {
                interval: Duration::from_secs(5),
                max_claim_series: 1024,
                proc_root: "/".into(),
                state_dir: Some(self.state_dir()),
                idle_after: Duration::from_secs(1800),
                summary_window: Duration::from_secs(300),
            },
        )
    }
}

/// A request of claim `ns/claim-<uid>` for `devices` with these configs
/// (the engine tests' request, named after the claim so rows tell apart).
fn request_with(uid: &str, devices: &[&str], configs: &[String]) -> PrepareRequest {
    PrepareRequest {
        name: format!("claim-{}", &uid[..1]),
        ..requests::request_with(uid, devices, configs)
    }
}

fn request(uid: &str, devices: &[&str]) -> PrepareRequest {
    request_with(uid, devices, &[])
}

fn timeslicing() -> String {
    requests::timeslicing("Default")
}

/// A time in the past: the simulator samples utilization only up to now.
const T0: Duration = Duration::from_secs(1_700_000_000);

/// A real process standing for a GPU process, its environment carrying
/// `env`: a shell that says "ready" once it runs (so its exec is complete
/// and `/proc` shows its own environment) and waits on its stdin; killed
/// when dropped.
struct Sleeper(std::process::Child);

impl Sleeper {
    fn new(env: &[(String, &str)]) -> Self {
        use std::io::BufRead;
        use std::process::{Command, Stdio};
        let mut command = Command::new("sh");
        command
            .args(["-c", "echo ready; read line"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        for (name, value) in env {
            command.env(name, value);
        }
        let mut child = command.spawn().expect("spawn sh");
        let mut ready = String::new();
        std::io::BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut ready)
            .expect("ready line");
        assert_eq!(ready, "ready\n");
        Self(child)
    }

    fn in_claim(uid: &str) -> Self {
        Self::new(&[(claim_var_name(uid), uid)])
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Node {
    /// Makes the backend fail to list GPU `gpu`'s processes until
    /// [`Node::heal_listing`].
    fn fail_listing(&self, gpu: u32) {
        use crate::gpu::GpuError;
        use crate::gpu::sim::op;
        self.backend.faults().fail_gpu(
            op::PROCESSES,
            gpu,
            GpuError::Injected {
                call: op::PROCESSES,
            },
        );
    }

    /// Claims A and B, prepared time-sliced on gpu-0.
    fn time_slice_gpu_0_between_a_and_b(&self) {
        for uid in [A, B] {
            self.engine
                .prepare(&request_with(uid, &["gpu-0"], &[timeslicing()]))
                .unwrap();
        }
    }

    fn heal_listing(&self, gpu: u32) {
        self.backend
            .faults()
            .heal_gpu(crate::gpu::sim::op::PROCESSES, gpu);
    }

    fn uuid(&self, gpu: usize) -> String {
        self.engine.inventory().gpus[gpu].info.uuid.clone()
    }

    /// Prepares claim `uid` on MIG slice `slice`: what the engine answers,
    /// and the slice's MIG UUID (the device its processes run on).
    fn prepare_slice(&self, uid: &str, slice: &str) -> (crate::claims::Prepared, String) {
        let prepared = self.engine.prepare(&request(uid, &[slice])).unwrap();
        let mig_uuid = prepared.record().devices[0]
            .mig
            .as_ref()
            .and_then(|m| m.mig_uuid.clone())
            .expect("the slice's MIG UUID");
        (prepared, mig_uuid)
    }

    /// Registers `process` as a GPU process on MIG device `mig_uuid`, using
    /// `memory_bytes` (and 50% SM, which MIG mode does not sample).
    fn run_on_slice(&self, process: &Sleeper, mig_uuid: &str, memory_bytes: u64) {
        self.backend
            .start_process(SimProcess {
                pid: process.pid(),
                device: mig_uuid.to_owned(),
                memory_bytes,
                sm_percent: 50,
                mps_client: false,
            })
            .unwrap();
    }

    /// Registers `process` as a GPU process on GPU `gpu`.
    fn run(
        &self,
        process: &Sleeper,
        gpu: usize,
        memory_bytes: u64,
        sm_percent: u32,
        mps_client: bool,
    ) {
        self.backend
            .start_process(SimProcess {
                pid: process.pid(),
                device: self.uuid(gpu),
                memory_bytes,
                sm_percent,
                mps_client,
            })
            .unwrap();
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        // MPS control daemons are children: unprepare stops them.
        for claim in self.engine.claims() {
            let _ = self.engine.unprepare(&claim.uid);
        }
    }
}
