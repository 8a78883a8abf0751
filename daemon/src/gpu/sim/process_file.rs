//! The simulated node's process folder (`[backend.sim] processes`): one JSON
//! file per fake GPU process, `<pid>.json`, written by `gpuslicectl sim exec`
//! (or a test) for a real process it started, and read by the simulator on
//! every process query. A file counts only while its process lives: `/proc/<pid>`
//! exists and, when the file names one, its start time (field 22 of
//! `/proc/<pid>/stat`, clock ticks since boot) matches, so a reused pid is not
//! mistaken for the fake GPU process.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// One fake GPU process, as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimProcessFile {
    /// The real process standing for the GPU process.
    pub pid: u32,
    /// Its start time (`/proc/<pid>/stat` field 22), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<u64>,
    /// The device it runs on: a GPU UUID ("GPU-…") or a MIG device UUID ("MIG-…").
    pub device: String,
    /// Framebuffer memory it uses, bytes.
    pub memory_bytes: u64,
    /// SM utilization it shows, percent (0..=100).
    pub sm_percent: u32,
    /// A client of an MPS server (listed by the MPS call, not the compute one).
    #[serde(default)]
    pub mps_client: bool,
}

/// The file of `pid` in `dir`.
pub fn process_file_path(dir: &Path, pid: u32) -> PathBuf {
    dir.join(format!("{pid}.json"))
}
