//! The activity sampler in the real gpusliced on the simulated backend: a
//! fake GPU process (a file in the sim's process folder, standing for a real
//! child) carrying a claim's marker is attributed to the claim, and one
//! without is logged once as unclaimed. The sampler always takes a sample
//! before it stops, so a start and a stop make the test wait for nothing.

use std::io::BufRead;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use crate::common::claims::Claims;
use crate::harness::Daemon;

const A: &str = "5e1f0a2b-3c4d-4e5f-8a6b-7c8d9e0f1a2b";

/// A real process whose environment carries `env`; running once it said
/// "ready" (its exec done), killed when dropped.
struct Process(Child);

impl Process {
    fn start(env: &[(String, &str)]) -> Self {
        let mut command = Command::new("sh");
        command
            .args(["-c", "echo ready; read line"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        for (name, value) in env {
            command.env(name, value);
        }
        let mut child = command.spawn().expect("spawn sh");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("ready");
        Self(child)
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Registers `process` with the simulator as a GPU process on `uuid`.
fn on_gpu(dir: &Path, process: &Process, uuid: &str, memory_bytes: u64, sm_percent: u32) {
    let folder = dir.join("sim-processes");
    std::fs::create_dir_all(&folder).expect("process folder");
    let file = serde_json::json!({
        "pid": process.pid(),
        "device": uuid,
        "memory_bytes": memory_bytes,
        "sm_percent": sm_percent,
    });
    gpuslice_cdi::write_atomic(
        &folder,
        &format!("{}.json", process.pid()),
        file.to_string().as_bytes(),
        0o644,
    )
    .expect("process file");
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap_or_else(|e| {
        panic!("read {}: {e}", path.display());
    }))
    .expect("JSON")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_the_sampler_attributes_a_marked_process_and_logs_an_unclaimed_one_once() {
    let daemon = Daemon::start_with(2, "[activity]\ninterval_s = 3600\n");
    daemon.client().await.prepare_whole(A, &["gpu-0"]).await;
    let (_, dir) = daemon.stop();
    let record = json(&dir.path().join(format!("state/claims/{A}.json")));
    let gpu0 = record["devices"][0]["uuid"]
        .as_str()
        .expect("uuid")
        .to_owned();
    let spec = json(
        &dir.path()
            .join(format!("cdi/k8s.gpuslice.dev-claim_{A}.json")),
    );
    let marker = spec["containerEdits"]["env"]
        .as_array()
        .and_then(|env| {
            env.iter()
                .filter_map(|e| e.as_str())
                .find(|e| e.starts_with("GPUSLICE_CLAIM_"))
        })
        .expect("the claim marker in the spec")
        .to_owned();
    let (name, value) = marker.split_once('=').expect("NAME=VALUE");
    let in_claim = Process::start(&[(name.to_owned(), value)]);
    let stray = Process::start(&[]);
    on_gpu(dir.path(), &in_claim, &gpu0, 4 << 30, 30);
    on_gpu(dir.path(), &stray, &gpu0, 1 << 30, 0);

    let daemon = Daemon::start_in(dir);
    let (status, dir) = daemon.stop();
    assert!(status.success(), "{status}");
    let log = std::fs::read_to_string(dir.path().join("daemon.log")).unwrap_or_default();
    let unclaimed = format!(
        "process {} (sh) on gpu-0, using 1.0 GiB, belongs to no gpuslice claim",
        stray.pid()
    );
    assert_eq!(log.matches(&unclaimed).count(), 1, "one warning:\n{log}");
    assert!(
        !log.contains(&format!("process {} (sh)", in_claim.pid())),
        "{log}"
    );
    let activity = json(&dir.path().join("state/activity.json"));
    assert!(
        activity["last_active"][A].as_i64().is_some_and(|t| t > 0),
        "the claim was active: {activity}"
    );
}
