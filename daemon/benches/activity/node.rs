//! The bench node: a claim engine on 9 simulated H100s, 64 time-sliced claims
//! on GPUs 0..8 with 4 real `sleep` processes each (their claim's marker in
//! their environment, registered as GPU processes in the simulator), and
//! GPU 8 free for timed prepares. The engine is the test kit's simulated node
//! (`gpuslice::testkit`) with its fake nvidia-smi and a real-size driver
//! root. Dropping it kills the children.

use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use gpuslice::activity::{ActivitySnapshot, Sampler, SamplerSettings};
use gpuslice::claims::{Engine, PrepareRequest};
use gpuslice::gpu::GpuBackend;
use gpuslice::gpu::sim::SimProcess;
use gpuslice::testkit::requests::{request_with, timeslicing};
use gpuslice::testkit::{SimNode, SimNodeBuilder};

use crate::marked::spawn_marked;

/// GPUs that carry the claims.
pub const LOADED_GPUS: usize = 8;
/// Claims per loaded GPU.
const CLAIMS_PER_GPU: usize = 8;
/// Processes per claim.
const PROCESSES_PER_CLAIM: usize = 4;
/// Memory of each process: 2 GiB, so 8 claims × 4 × 2 GiB = 64 GiB of 80.
const PROCESS_MEMORY: u64 = 2 << 30;

pub struct BenchNode {
    node: SimNode,
    _dir: tempfile::TempDir,
    engine: Arc<Engine>,
    sampler: Mutex<Sampler>,
    children: Vec<Child>,
    pub gpus: usize,
    pub claims: usize,
}

fn uid(group: usize, index: usize) -> String {
    format!("{group:08x}-0000-4000-8000-{index:012x}")
}

fn request(uid: String, gpu: usize, shared: bool) -> PrepareRequest {
    let configs = if shared {
        vec![timeslicing("Default")]
    } else {
        vec![]
    };
    request_with(&uid, &[&format!("gpu-{gpu}")], &configs)
}

impl BenchNode {
    pub fn build() -> BenchNode {
        let dir = crate::folders::work_dir("gpuslice-activity-bench-");
        let node = SimNodeBuilder::h100s(LOADED_GPUS + 1)
            .seed("bench")
            .in_dir(dir.path())
            .real_size_root()
            .hardware_in_memory()
            .boot("bench-boot")
            .fake_tools()
            .start();
        let engine = Arc::clone(node.engine());
        let sim = &node.sim;
        let mut children = Vec::new();
        for (gpu, index) in (0..LOADED_GPUS).zip(0u32..) {
            let gpu_uuid = sim.device_info(index).expect("sim GPU").uuid;
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
                state_dir: Some(node.state_dir()),
                idle_after: Duration::from_secs(1800),
                summary_window: Duration::from_secs(300),
            },
        );
        BenchNode {
            node,
            _dir: dir,
            engine,
            sampler: Mutex::new(sampler),
            children,
            gpus: LOADED_GPUS,
            claims: LOADED_GPUS * CLAIMS_PER_GPU,
        }
    }

    pub fn dir(&self) -> &Path {
        self.node.dir.path()
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
