//! The fixture's open warning episodes, and the fake GPU processes behind
//! them that were running before gpusliced stopped and still run when it
//! starts again: plain `sleep`s registered in the simulator's process folder
//! before the start (`gpuslicectl sim exec` needs a running gpusliced to ask
//! for the claim's environment, so the environment is taken from the
//! claim's CDI spec, as a container gets it). Killed when dropped.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use gpuslice::gpu::sim::{SimProcessFile, proc_start_time, write_process_file};

use super::fixture::Fixture;

use crate::tools::which;

/// One process to start.
pub struct Survivor<'a> {
    /// Its environment (a claim's container environment, or none).
    pub env: Vec<String>,
    /// The GPU UUID it runs on.
    pub device: &'a str,
    /// GPU memory it uses.
    pub memory_bytes: u64,
    /// SM utilization, percent.
    pub sm_percent: u32,
    /// A client of an MPS daemon.
    pub mps_client: bool,
}

/// The processes; killed on drop.
pub struct Survivors {
    dir: PathBuf,
    children: Vec<Child>,
}

impl Survivors {
    /// Processes registered in `dir` (`[backend.sim] processes`).
    pub fn new(dir: &Path) -> Self {
        Self {
            dir: dir.to_path_buf(),
            children: Vec::new(),
        }
    }

    /// Starts `sleep 600` as `process` describes; returns its pid.
    pub fn start(&mut self, process: &Survivor<'_>) -> u32 {
        let sleep = which("sleep").expect("sleep on PATH");
        let child = Command::new(sleep)
            .arg("600")
            .env_clear()
            .envs(process.env.iter().filter_map(|kv| kv.split_once('=')))
            .stdin(Stdio::null())
            .spawn()
            .expect("start sleep");
        let pid = child.id();
        self.children.push(child);
        let file = SimProcessFile {
            pid,
            start_time: proc_start_time(pid),
            device: process.device.to_owned(),
            memory_bytes: process.memory_bytes,
            sm_percent: process.sm_percent,
            mps_client: process.mps_client,
        };
        write_process_file(&self.dir, &file).expect("register the process");
        pid
    }
}

impl Drop for Survivors {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The fixture's open episodes, as activity.json keeps them.
pub struct Episode {
    pub claim_uid: String,
    pub pid: u32,
    pub since: i64,
}

/// The over-share episode, then the unclaimed one.
pub fn open_episodes(fixture: &Fixture) -> Vec<Episode> {
    let file: serde_json::Value =
        serde_json::from_slice(&fixture.bytes("state/activity.json")).expect("activity JSON");
    let episodes = file["open_episodes"].as_array().expect("open episodes");
    assert_eq!(episodes.len(), 2, "{episodes:?}");
    ["overshare", "unclaimed"]
        .iter()
        .map(|kind| {
            let e = episodes
                .iter()
                .find(|e| e["kind"] == *kind)
                .unwrap_or_else(|| panic!("no {kind} episode"));
            Episode {
                claim_uid: e["claim_uid"].as_str().expect("claim uid").to_owned(),
                pid: e["pid"]
                    .as_u64()
                    .and_then(|p| u32::try_from(p).ok())
                    .expect("pid"),
                since: e["since"].as_i64().expect("since"),
            }
        })
        .collect()
}

/// Gives the unclaimed episode in the installed activity.json the pid of
/// the process that stands for the fixture's (the only edit of the file).
pub fn give_pid(base: &Path, from: u32, to: u32) {
    let path = base.join("state/activity.json");
    let text = std::fs::read_to_string(&path).expect("read activity.json");
    let edited = text
        .replace(&format!("\"pid\": {from},"), &format!("\"pid\": {to},"))
        .replace(&format!("process {from} ("), &format!("process {to} ("));
    assert_ne!(text, edited, "the fixture's pid {from} is in activity.json");
    gpuslice_cdi::write_atomic(
        &base.join("state"),
        "activity.json",
        edited.as_bytes(),
        0o644,
    )
    .expect("write activity.json");
}

/// The environment a container of `uid` gets from its installed spec.
pub fn spec_env(base: &Path, uid: &str) -> Vec<String> {
    let path = base.join(format!("cdi/k8s.gpuslice.dev-claim_{uid}.json"));
    let spec: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).expect("read spec")).expect("spec JSON");
    let device = &spec["devices"][0]["containerEdits"]["env"];
    [&spec["containerEdits"]["env"], device]
        .into_iter()
        .filter_map(serde_json::Value::as_array)
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect()
}
