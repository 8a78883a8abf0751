//! The sampler on the simulated backend, with a real engine and real
//! prepared claims in temp folders.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::{Sampler, SamplerSettings};
use crate::activity::WarningKind;
use crate::activity::fixtures::{A, B, GIB};
use crate::activity::marker::claim_var_name;
use crate::activity::persist::{Persister, load};
use crate::claims::tests::sim_engine;
use crate::claims::{ConfigRequest, DeviceRequest, Engine, PrepareRequest, SharingTools};
use crate::config::{ActivityConfig, MigAdvertise, MigConfig, MigGpuConfig};
use crate::gpu::GpuBackend;
use crate::gpu::sim::{SimBackend, SimModel, SimProcess};
use crate::mps::supervisor::DAEMON_MARKER;
use crate::mps::{ChildSupervisor, MpsManager, MpsSettings, NoShmMount};
use crate::sharing::ConfigSource;
use crate::timeslice::NvidiaSmi;

/// A simulated node: the backend (to start fake processes on), an engine
/// with the stand-in nvidia-smi (time-slicing), its state in `dir`.
struct Node {
    dir: tempfile::TempDir,
    backend: Arc<SimBackend>,
    engine: Arc<Engine>,
}

fn tool(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/tools")
        .join(name)
}

impl Node {
    fn new(gpus: usize) -> Self {
        Self::with_mig(gpus, &MigConfig::default())
    }

    /// A node whose GPUs `mig` selects run in MIG mode.
    fn with_mig(gpus: usize, mig: &MigConfig) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let backend = Arc::new(SimBackend::new(vec![SimModel::H100_80GB; gpus], "test"));
        let dyn_backend: Arc<dyn GpuBackend> = backend.clone();
        let tools = SharingTools {
            mps: Arc::new(MpsManager::new(
                MpsSettings {
                    control_program: tool("fake-mps-control"),
                    mps_dir: dir.path().join("run/mps"),
                    ready_bound: Duration::from_secs(30),
                    bind_shm: false,
                },
                Arc::new(ChildSupervisor::default()),
                Arc::new(NoShmMount),
            )),
            nvidia_smi: NvidiaSmi::new(&tool("fake-nvidia-smi")),
        };
        let engine = sim_engine(dir.path(), dyn_backend, mig).with_sharing(tools);
        engine.setup_mig(mig).unwrap();
        Self {
            dir,
            backend,
            engine: Arc::new(engine),
        }
    }

    fn state_dir(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    fn sampler(&self) -> Sampler {
        Sampler::new(
            self.engine.clone(),
            SamplerSettings {
                interval: Duration::from_secs(5),
                max_claim_series: 1024,
                proc_root: "/".into(),
                state_dir: Some(self.state_dir()),
            },
        )
    }
}

/// A request of claim `ns/claim-<uid>` for `devices` with these configs.
fn request_with(uid: &str, devices: &[&str], configs: &[String]) -> PrepareRequest {
    PrepareRequest {
        uid: uid.to_owned(),
        namespace: "ns".to_owned(),
        name: format!("claim-{}", &uid[..1]),
        devices: devices
            .iter()
            .map(|d| DeviceRequest {
                device: (*d).to_owned(),
                request_names: vec!["gpu".to_owned()],
                pool: "node".to_owned(),
                consumed_memory: None,
                share_id: String::new(),
            })
            .collect(),
        configs: configs
            .iter()
            .map(|json| ConfigRequest {
                source: ConfigSource::Claim,
                requests: vec![],
                parameters_json: json.clone(),
            })
            .collect(),
    }
}

fn request(uid: &str, devices: &[&str]) -> PrepareRequest {
    request_with(uid, devices, &[])
}

fn timeslicing() -> String {
    r#"{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"TimeSlicing","timeSlicingConfig":{"interval":"Default"}}}"#.to_owned()
}

/// A time in the past: the simulator samples utilization only up to now.
const T0: Duration = Duration::from_secs(1_700_000_000);

#[test]
fn sim_every_claim_is_listed_with_its_devices_and_idle_until_it_runs() {
    let node = Node::new(3);
    node.engine
        .prepare(&request(B, &["gpu-1", "gpu-2"]))
        .unwrap();
    node.engine.prepare(&request(A, &["gpu-0"])).unwrap();
    let snapshot = node.sampler().sample_at(T0);
    assert!(snapshot.enabled);
    assert_eq!(snapshot.interval_ms, 5_000);
    assert_eq!(snapshot.sampled_at_ms, 1_700_000_000_000);
    let uids: Vec<&str> = snapshot.claims.iter().map(|c| c.uid.as_str()).collect();
    assert_eq!(uids, vec![A, B]);
    let b = &snapshot.claims[1];
    let devices: Vec<&str> = b.devices.iter().map(|d| d.device.as_str()).collect();
    assert_eq!(devices, vec!["gpu-1", "gpu-2"]);
    let gpu1 = &node.engine.inventory().gpus[1];
    assert_eq!(b.devices[0].uuid, gpu1.info.uuid);
    assert_eq!(b.devices[0].memory_total, gpu1.info.memory_bytes);
    assert_eq!(b.devices[0].sharing, "exclusive");
    assert!(
        b.devices[0].device_memory_used.is_some(),
        "read for held devices"
    );
    assert_eq!(b.last_active, None);
    assert_eq!(
        b.idle_for(b.prepared_at + 100),
        100,
        "idle since the prepare"
    );
    assert!(snapshot.unclaimed.is_empty() && snapshot.warnings.is_empty());
    assert_eq!(snapshot.series_dropped, 0);
}

#[test]
fn sim_series_past_the_cap_are_counted() {
    let node = Node::new(3);
    node.engine
        .prepare(&request(A, &["gpu-0", "gpu-1", "gpu-2"]))
        .unwrap();
    let mut sampler = Sampler::new(
        node.engine.clone(),
        SamplerSettings {
            interval: Duration::from_secs(5),
            max_claim_series: 1,
            proc_root: "/".into(),
            state_dir: None,
        },
    );
    assert_eq!(sampler.sample_at(T0).series_dropped, 2);
}

#[test]
fn sim_a_time_sliced_claim_gets_an_even_share() {
    let node = Node::new(1);
    node.engine
        .prepare(&request_with(A, &["gpu-0"], &[timeslicing()]))
        .unwrap();
    node.engine
        .prepare(&request_with(B, &["gpu-0"], &[timeslicing()]))
        .unwrap();
    let snapshot = node.sampler().sample_at(T0);
    let total = node.engine.inventory().gpus[0].info.memory_bytes;
    for claim in &snapshot.claims {
        assert_eq!(claim.devices[0].sharing, "timeslicing");
        assert_eq!(claim.devices[0].memory_share, Some(total / 2));
    }
}

#[test]
fn sim_last_active_times_come_back_after_a_restart_and_gone_claims_are_dropped() {
    let node = Node::new(1);
    node.engine.prepare(&request(A, &["gpu-0"])).unwrap();
    let before: BTreeMap<String, i64> =
        BTreeMap::from([(A.to_owned(), 1_234), ("gone".to_owned(), 99)]);
    Persister::new(&node.state_dir(), BTreeMap::new())
        .save(0, &before, true)
        .unwrap();
    let mut sampler = node.sampler();
    let snapshot = sampler.sample_at(T0);
    assert_eq!(snapshot.claims[0].last_active, Some(1_234));
    assert_eq!(
        load(&node.state_dir()),
        BTreeMap::from([(A.to_owned(), 1_234)]),
        "the claim set changed: written at once, without the gone claim"
    );
}

#[test]
fn sim_sampling_off_publishes_one_disabled_snapshot_and_runs_nothing() {
    let node = Node::new(1);
    let config = ActivityConfig {
        interval_s: 0,
        ..ActivityConfig::default()
    };
    let (handle, task) = crate::activity::start(node.engine.clone(), &config, &node.state_dir());
    assert!(task.is_none());
    let latest = handle.latest();
    assert!(!latest.enabled);
    assert_eq!(latest.sampled_at_ms, 0);
}

#[test]
fn sim_the_task_samples_at_once_and_stops_when_told() {
    let node = Node::new(1);
    node.engine.prepare(&request(A, &["gpu-0"])).unwrap();
    let config = ActivityConfig {
        interval_s: 3600,
        ..ActivityConfig::default()
    };
    let (handle, task) = crate::activity::start(node.engine.clone(), &config, &node.state_dir());
    // The loop publishes a first sample before it looks for the stop.
    task.unwrap().stop();
    let latest = handle.latest();
    assert!(latest.enabled);
    assert!(latest.sampled_at_ms > 0);
    assert_eq!(latest.interval_ms, 3_600_000);
    assert_eq!(latest.claims.len(), 1);
}

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
    fn uuid(&self, gpu: usize) -> String {
        self.engine.inventory().gpus[gpu].info.uuid.clone()
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

fn pids(device: &crate::activity::DeviceActivity) -> Vec<u32> {
    device.processes.iter().map(|p| p.pid).collect()
}

#[test]
fn sim_processes_go_to_the_claims_their_environment_names_and_the_rest_are_unclaimed() {
    let node = Node::new(2);
    node.engine.prepare(&request(A, &["gpu-0"])).unwrap();
    node.engine.prepare(&request(B, &["gpu-1"])).unwrap();
    let (a, b) = (Sleeper::in_claim(A), Sleeper::in_claim(B));
    let stray = Sleeper::new(&[]);
    let elsewhere = Sleeper::in_claim(B);
    let daemon = Sleeper::new(&[(DAEMON_MARKER.to_owned(), "/run/gpuslice/mps/x")]);
    node.run(&a, 0, 4 * GIB, 30, false);
    node.run(&stray, 0, GIB, 5, false);
    node.run(&elsewhere, 0, GIB, 0, false);
    node.run(&b, 1, 2 * GIB, 0, false);
    node.run(&daemon, 1, GIB, 0, false);
    let mut sampler = node.sampler();
    let first = sampler.sample_once();
    let now = first.sampled_at_ms / 1000;
    let (ca, cb) = (&first.claims[0], &first.claims[1]);
    assert_eq!(pids(&ca.devices[0]), vec![a.pid()]);
    let pa = &ca.devices[0].processes[0];
    assert_eq!(pa.name, "sh");
    assert_eq!((pa.memory_used, pa.sm_percent), (Some(4 * GIB), Some(30)));
    assert_eq!(ca.devices[0].memory_used, 4 * GIB);
    assert_eq!(
        ca.devices[0].device_memory_used,
        Some(6 * GIB),
        "every process on gpu-0"
    );
    assert_eq!(ca.last_active, Some(now));
    assert_eq!(
        pids(&cb.devices[0]),
        vec![b.pid()],
        "the MPS daemon is not the claim's"
    );
    assert_eq!(cb.last_active, None, "no SM use: idle");
    let mut unclaimed: Vec<(u32, String)> = first
        .unclaimed
        .iter()
        .map(|u| (u.process.pid, u.reason.clone()))
        .collect();
    unclaimed.sort();
    let mut want = vec![
        (
            stray.pid(),
            "no gpuslice claim in its environment".to_owned(),
        ),
        (
            elsewhere.pid(),
            format!("its environment names claim {B}, which does not hold gpu-0"),
        ),
    ];
    want.sort();
    assert_eq!(unclaimed, want);
    assert_eq!(first.warnings.len(), 2);
    assert!(
        first
            .warnings
            .iter()
            .all(|w| w.kind == WarningKind::Unclaimed)
    );
    assert_eq!(first.episodes.unclaimed, 2);
    // The same processes again: the same episodes, none new.
    assert_eq!(sampler.sample_once().episodes.unclaimed, 2);
    assert!(node.backend.stop_process(stray.pid()));
    let third = sampler.sample_once();
    assert_eq!(third.warnings.len(), 1);
    assert_eq!(third.warnings[0].pid, elsewhere.pid());
    assert_eq!(third.episodes.unclaimed, 2, "openings, not open ones");
}

#[test]
fn sim_a_time_sliced_claim_over_its_share_raises_one_warning_per_episode() {
    let node = Node::new(1);
    node.engine
        .prepare(&request_with(A, &["gpu-0"], &[timeslicing()]))
        .unwrap();
    node.engine
        .prepare(&request_with(B, &["gpu-0"], &[timeslicing()]))
        .unwrap();
    let a = Sleeper::in_claim(A);
    node.run(&a, 0, 50 * GIB, 10, false);
    let mut sampler = node.sampler();
    let mut last = sampler.sample_once();
    for _ in 0..3 {
        last = sampler.sample_once();
    }
    assert_eq!(last.warnings.len(), 1, "{:?}", last.unclaimed);
    let w = &last.warnings[0];
    assert_eq!(
        (w.kind, w.claim_uid.as_str(), w.device.as_str()),
        (WarningKind::OverShare, A, "gpu-0"),
        "{:?}",
        last.unclaimed
    );
    assert!(
        w.message.contains("over its timeslicing share of 39.8 GiB"),
        "{}",
        w.message
    );
    assert_eq!(last.episodes.overshare_timeslicing, 1);
    assert_eq!(last.episodes.overshare_mps, 0);
    // Back under its share: the episode ends; over again: a second one.
    node.run(&a, 0, 10 * GIB, 10, false);
    assert!(sampler.sample_once().warnings.is_empty());
    node.run(&a, 0, 41 * GIB, 10, false);
    assert_eq!(sampler.sample_once().episodes.overshare_timeslicing, 2);
}

#[test]
fn sim_an_mps_client_over_its_memory_share_raises_one_warning() {
    if std::process::Command::new("python3")
        .arg("-c")
        .arg("pass")
        .status()
        .is_err()
    {
        eprintln!("skipping: python3 (the stand-in MPS control program's interpreter) is missing");
        return;
    }
    let node = Node::new(1);
    let mps = r#"{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"MPS","mpsConfig":{"defaultActiveThreadPercentage":50}}}"#;
    let memory =
        r#"{"apiVersion":"gpuslice.dev/v1alpha1","kind":"MpsMemoryConfig","memory":"4Gi"}"#;
    node.engine
        .prepare(&request_with(
            A,
            &["gpu-0"],
            &[mps.to_owned(), memory.to_owned()],
        ))
        .unwrap();
    let a = Sleeper::in_claim(A);
    node.run(&a, 0, 6 * GIB, 20, true);
    let mut sampler = node.sampler();
    let first = sampler.sample_once();
    let d = &first.claims[0].devices[0];
    assert_eq!((d.sharing, d.memory_share), ("mps", Some(4 * GIB)));
    assert!(d.processes[0].mps_client);
    sampler.sample_once();
    let last = sampler.sample_once();
    assert_eq!(last.warnings.len(), 1);
    assert_eq!(last.episodes.overshare_mps, 1);
    assert!(
        last.unclaimed.is_empty(),
        "the MPS daemon is gpuslice's own"
    );
}

#[test]
fn sim_last_active_survives_a_restart() {
    let node = Node::new(1);
    node.engine.prepare(&request(A, &["gpu-0"])).unwrap();
    let a = Sleeper::in_claim(A);
    node.run(&a, 0, GIB, 40, false);
    let active_at = {
        let mut before = node.sampler();
        let s = before.sample_once();
        s.claims[0].last_active.expect("active")
    };
    assert!(node.backend.stop_process(a.pid()));
    // A new sampler (the daemon restarted), later, with nothing running.
    let later = Duration::from_secs(u64::try_from(active_at).unwrap() + 600);
    let after = node.sampler().sample_at(later);
    assert_eq!(after.claims[0].last_active, Some(active_at));
    assert_eq!(after.claims[0].idle_for(active_at + 600), 600);
}

#[test]
fn sim_a_slice_claim_gets_its_processes_by_gpu_instance_and_is_active_without_sm_samples() {
    let mig = MigConfig {
        advertise: MigAdvertise::Partitionable,
        gpu: vec![MigGpuConfig::default()],
        ..MigConfig::default()
    };
    let node = Node::with_mig(1, &mig);
    let slice = node
        .engine
        .inventory()
        .mig
        .iter()
        .find(|m| m.profile.name == "3g.40gb")
        .expect("a 3g.40gb slice")
        .name
        .clone();
    let prepared = node.engine.prepare(&request(A, &[&slice])).unwrap();
    let mig_uuid = prepared.record().devices[0]
        .mig
        .as_ref()
        .and_then(|m| m.mig_uuid.clone())
        .expect("the slice's MIG UUID");
    let (a, stray) = (Sleeper::in_claim(A), Sleeper::new(&[]));
    for (process, memory) in [(&a, 2 * GIB), (&stray, GIB)] {
        node.backend
            .start_process(SimProcess {
                pid: process.pid(),
                device: mig_uuid.clone(),
                memory_bytes: memory,
                sm_percent: 50,
                mps_client: false,
            })
            .unwrap();
    }
    let snapshot = node.sampler().sample_once();
    let d = &snapshot.claims[0].devices[0];
    assert_eq!(
        (d.device.as_str(), d.uuid.as_str(), d.sharing),
        (slice.as_str(), mig_uuid.as_str(), "mig")
    );
    assert_eq!(pids(d), vec![a.pid()]);
    assert_eq!(d.sm_percent, None, "no per-process SM in MIG mode");
    assert_eq!(
        d.device_memory_used,
        Some(3 * GIB),
        "the slice's own handle"
    );
    assert!(
        d.memory_total > 0 && d.memory_total < node.engine.inventory().gpus[0].info.memory_bytes
    );
    assert!(
        snapshot.claims[0].last_active.is_some(),
        "any process counts as active"
    );
    assert_eq!(snapshot.unclaimed.len(), 1);
    assert_eq!(
        snapshot.unclaimed[0].device, slice,
        "named by the slice it runs on"
    );
}

#[test]
fn sim_a_gpu_the_backend_cannot_list_is_left_out_and_the_others_sampled() {
    use crate::gpu::GpuError;
    use crate::gpu::sim::op;
    let node = Node::new(2);
    node.engine.prepare(&request(A, &["gpu-0"])).unwrap();
    node.engine.prepare(&request(B, &["gpu-1"])).unwrap();
    let (a, stray) = (Sleeper::in_claim(A), Sleeper::new(&[]));
    node.run(&a, 0, GIB, 0, false);
    node.run(&stray, 1, GIB, 0, false);
    let faults = node.backend.faults();
    faults.fail_gpu(
        op::PROCESSES,
        1,
        GpuError::Injected {
            call: op::PROCESSES,
        },
    );
    faults.fail_next(
        op::PROCESS_UTILIZATION,
        GpuError::Injected {
            call: op::PROCESS_UTILIZATION,
        },
    );
    let mut sampler = node.sampler();
    let first = sampler.sample_once();
    assert_eq!(pids(&first.claims[0].devices[0]), vec![a.pid()]);
    assert_eq!(first.claims[0].devices[0].sm_percent, None, "not read");
    assert!(
        first.claims[0].last_active.is_some(),
        "utilization unknown: a process counts as activity, never as idle"
    );
    assert_eq!(first.claims[1].process_count(), 0);
    assert!(first.unclaimed.is_empty(), "GPU 1 left out of this sample");
    faults.heal_gpu(op::PROCESSES, 1);
    let second = sampler.sample_once();
    assert_eq!(
        second.claims[0].devices[0].sm_percent,
        Some(0),
        "read again"
    );
    assert_eq!(second.unclaimed.len(), 1);
    assert_eq!(second.unclaimed[0].process.pid, stray.pid());
}
