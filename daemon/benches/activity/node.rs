//! The bench node: a claim engine on 9 simulated H100s, 64 time-sliced claims
//! on GPUs 0..8 with 4 real `sleep` processes each (their claim's marker in
//! their environment, registered as GPU processes in the simulator), and
//! GPU 8 free for timed prepares. Dropping it kills the children.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::fake_root::{DRIVER_VERSION, fake_root};
use gpuslice::activity::{ActivitySnapshot, Sampler, SamplerSettings};
use gpuslice::cdi_build::marker::claim_env;
use gpuslice::claims::SharingTools;
use gpuslice::claims::{ConfigRequest, DeviceRequest, Engine, EngineSettings, PrepareRequest};
use gpuslice::config::MigConfig;
use gpuslice::driver::{DriverFiles, Roots};
use gpuslice::gpu::GpuBackend;
use gpuslice::gpu::sim::{SimBackend, SimModel, SimProcess};
use gpuslice::inventory::Inventory;
use gpuslice::mps::{ChildSupervisor, MpsManager, MpsSettings, NoShmMount};
use gpuslice::sharing::ConfigSource;
use gpuslice::state::Store;
use gpuslice::timeslice::NvidiaSmi;

/// GPUs that carry the claims.
pub const LOADED_GPUS: usize = 8;
/// Claims per loaded GPU.
const CLAIMS_PER_GPU: usize = 8;
/// Processes per claim.
const PROCESSES_PER_CLAIM: usize = 4;
/// Memory of each process: 2 GiB, so 8 claims × 4 × 2 GiB = 64 GiB of 80.
const PROCESS_MEMORY: u64 = 2 << 30;

pub struct BenchNode {
    dir: tempfile::TempDir,
    engine: Arc<Engine>,
    sampler: Mutex<Sampler>,
    children: Vec<Child>,
    pub gpus: usize,
    pub claims: usize,
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn timeslicing() -> String {
    r#"{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"TimeSlicing","timeSlicingConfig":{"interval":"Default"}}}"#.to_owned()
}

fn uid(group: usize, index: usize) -> String {
    format!("{group:08x}-0000-4000-8000-{index:012x}")
}

fn request(uid: String, gpu: usize, shared: bool) -> PrepareRequest {
    PrepareRequest {
        uid,
        namespace: "bench".to_owned(),
        name: "claim".to_owned(),
        devices: vec![DeviceRequest {
            device: format!("gpu-{gpu}"),
            request_names: vec!["gpu".to_owned()],
            pool: "node".to_owned(),
            consumed_memory: None,
            share_id: String::new(),
        }],
        configs: if shared {
            vec![ConfigRequest {
                source: ConfigSource::Claim,
                requests: vec![],
                parameters_json: timeslicing(),
            }]
        } else {
            vec![]
        },
    }
}

impl BenchNode {
    pub fn build() -> BenchNode {
        let dir = work_dir();
        let d = dir.path();
        let gpus = LOADED_GPUS + 1;
        let sim = Arc::new(SimBackend::new(vec![SimModel::H100_80GB; gpus], "bench"));
        let backend: Arc<dyn GpuBackend> = sim.clone();
        let inventory =
            Inventory::from_backend(backend.as_ref(), &MigConfig::default(), &|_, _| {
                gpuslice::mig::Ownership::Foreign
            })
            .expect("sim inventory");
        let root = d.join("root");
        fake_root(&root, gpus);
        let roots = Roots {
            driver_root: &root,
            dev_root: &root,
        };
        let tools = SharingTools {
            mps: Arc::new(MpsManager::new(
                MpsSettings {
                    control_program: repo().join("tests/tools/fake-mps-control"),
                    mps_dir: d.join("mps"),
                    ready_bound: Duration::from_secs(10),
                    bind_shm: false,
                },
                Arc::new(ChildSupervisor::default()),
                Arc::new(NoShmMount),
            )),
            nvidia_smi: NvidiaSmi::new(&repo().join("tests/tools/fake-nvidia-smi")),
        };
        let engine = Engine::new(
            backend.clone(),
            inventory,
            DriverFiles::discover(roots, DRIVER_VERSION),
            Store::open(&d.join("state")).expect("records folder"),
            EngineSettings {
                cdi_dir: d.join("cdi"),
                dev_root: root.clone(),
                cdi_hook: None,
                boot_id: "bench-boot".to_owned(),
            },
        )
        .with_sharing(tools);
        engine.reconcile().expect("reconcile of an empty state");
        let engine = Arc::new(engine);
        let mut children = Vec::new();
        for (gpu, index) in (0..LOADED_GPUS).zip(0u32..) {
            let gpu_uuid = backend.device_info(index).expect("sim GPU").uuid;
            for c in 0..CLAIMS_PER_GPU {
                let claim = uid(1, gpu * CLAIMS_PER_GPU + c);
                engine
                    .prepare(&request(claim.clone(), gpu, true))
                    .expect("time-sliced prepare");
                for p in 0..PROCESSES_PER_CLAIM {
                    let child = spawn_marked(&claim);
                    sim.start_process(SimProcess {
                        pid: child.id(),
                        device: gpu_uuid.clone(),
                        memory_bytes: PROCESS_MEMORY,
                        sm_percent: u32::try_from(5 + 3 * p).unwrap_or(5),
                        mps_client: false,
                    })
                    .expect("sim process");
                    children.push(child);
                }
            }
        }
        let sampler = Sampler::new(
            engine.clone(),
            SamplerSettings {
                interval: Duration::from_secs(5),
                max_claim_series: 1024,
                proc_root: PathBuf::from("/"),
                state_dir: Some(d.join("state")),
            },
        );
        BenchNode {
            dir,
            engine,
            sampler: Mutex::new(sampler),
            children,
            gpus: LOADED_GPUS,
            claims: LOADED_GPUS * CLAIMS_PER_GPU,
        }
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn processes(&self) -> usize {
        self.children.len()
    }

    /// One whole sample.
    pub fn sample(&self) -> ActivitySnapshot {
        let mut sampler = self
            .sampler
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        sampler.sample_once()
    }

    /// The floor: one `/proc/<pid>/stat` read per process.
    pub fn floor_pass(&self) {
        for child in &self.children {
            let stat = std::fs::read(format!("/proc/{}/stat", child.id())).expect("stat");
            std::hint::black_box(stat);
        }
    }

    /// Prepares of a fresh exclusive claim on the free GPU for `span` of
    /// wall time, each timed from the call to its return and then
    /// unprepared (untimed).
    pub fn prepares_for(&self, block: usize, span: Duration) -> Vec<Duration> {
        let until = Instant::now() + span;
        let mut times = Vec::new();
        while Instant::now() < until {
            let claim = uid(2 + block, times.len());
            let t0 = Instant::now();
            self.engine
                .prepare(&request(claim.clone(), LOADED_GPUS, false))
                .expect("exclusive prepare");
            times.push(t0.elapsed());
            self.engine.unprepare(&claim).expect("unprepare");
        }
        times
    }
}

impl Drop for BenchNode {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A `sleep` with `claim`'s marker in its environment, as its container's.
fn spawn_marked(claim: &str) -> Child {
    let marker = claim_env(claim);
    let (name, value) = marker.split_once('=').expect("NAME=VALUE");
    Command::new("sleep")
        .arg("3600")
        .env(name, value)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .expect("cannot spawn sleep")
}

fn work_dir() -> tempfile::TempDir {
    let parent = std::env::var_os("GPUSLICE_BENCH_DIR").map_or_else(
        || {
            std::env::current_exe()
                .ok()
                .and_then(|exe| exe.ancestors().nth(3).map(Path::to_path_buf))
                .unwrap_or_else(|| repo().join("target"))
        },
        PathBuf::from,
    );
    std::fs::create_dir_all(&parent).expect("bench folder parent");
    tempfile::Builder::new()
        .prefix("gpuslice-activity-bench-")
        .tempdir_in(&parent)
        .expect("bench folder")
}
