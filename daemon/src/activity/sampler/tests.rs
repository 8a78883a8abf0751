//! The sampler on the simulated backend, with a real engine and real
//! prepared claims in temp folders.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::{Sampler, SamplerSettings};
use crate::activity::fixtures::{A, B};
use crate::activity::persist::{Persister, load};
use crate::claims::tests::sim_engine;
use crate::claims::{ConfigRequest, DeviceRequest, Engine, PrepareRequest, SharingTools};
use crate::config::{ActivityConfig, MigConfig};
use crate::gpu::GpuBackend;
use crate::gpu::sim::{SimBackend, SimModel};
use crate::mps::{ChildSupervisor, MpsManager, MpsSettings, NoShmMount};
use crate::sharing::ConfigSource;
use crate::timeslice::NvidiaSmi;

/// A simulated node: the backend (to start fake processes on), an engine
/// with the stand-in nvidia-smi (time-slicing), its state in `dir`.
struct Node {
    dir: tempfile::TempDir,
    #[expect(
        dead_code,
        reason = "fake processes start on it once the simulator knows them"
    )]
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
        let engine = sim_engine(dir.path(), dyn_backend, &MigConfig::default()).with_sharing(tools);
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
