//! What the checks look at: the daemon's answers (ListClaims, GetInventory,
//! GetMigLayout, GetSharing, asked together), its files (CDI specs, claim
//! records), the simulated hardware as the sim backend persists it (MIG
//! instances and modes, compute modes: the ground truth the API reports on),
//! and the MPS control daemon processes found in /proc.

use std::collections::BTreeSet;
use std::path::Path;

use gpuslice_proto::gpuslice::v1 as pb;
use gpuslice_proto::gpuslice::v1::gpu_slice_client::GpuSliceClient;
use serde_json::Value;
use tonic::transport::Channel;

use crate::harness::list;

/// The daemon's answers, asked concurrently.
#[derive(Debug)]
pub struct Api {
    pub claims: pb::ListClaimsResponse,
    pub inventory: pb::GetInventoryResponse,
    pub mig: pb::GetMigLayoutResponse,
    pub sharing: pb::GetSharingResponse,
}

/// Asks the four questions at once, on clones of one connection.
pub async fn api(client: &GpuSliceClient<Channel>) -> Result<Api, String> {
    let (mut a, mut b, mut c, mut d) = (
        client.clone(),
        client.clone(),
        client.clone(),
        client.clone(),
    );
    let (claims, inventory, mig, sharing) = tokio::join!(
        a.list_claims(pb::ListClaimsRequest {}),
        b.get_inventory(pb::GetInventoryRequest {}),
        c.get_mig_layout(pb::GetMigLayoutRequest {}),
        d.get_sharing(pb::GetSharingRequest {}),
    );
    let fail = |what: &str, s: tonic::Status| format!("{what} failed: {s}");
    Ok(Api {
        claims: claims.map_err(|s| fail("ListClaims", s))?.into_inner(),
        inventory: inventory.map_err(|s| fail("GetInventory", s))?.into_inner(),
        mig: mig.map_err(|s| fail("GetMigLayout", s))?.into_inner(),
        sharing: sharing.map_err(|s| fail("GetSharing", s))?.into_inner(),
    })
}

/// The file name of a claim's CDI spec.
pub fn spec_name(uid: &str) -> String {
    format!("k8s.gpuslice.dev-claim_{uid}.json")
}

/// The claim uid a spec or record file is named after.
pub fn uid_of(name: &str) -> Option<&str> {
    let stem = name.strip_suffix(".json")?;
    Some(stem.strip_prefix("k8s.gpuslice.dev-claim_").unwrap_or(stem))
}

/// Names in a folder, without the atomic writer's hidden temp files.
pub fn durable_names(dir: &Path) -> Vec<String> {
    list(dir)
        .into_iter()
        .filter(|n| !gpuslice_cdi::atomic::is_temp_name(n))
        .collect()
}

/// A JSON file, if it can be read and parsed now.
pub fn read_json(path: &Path) -> Result<Value, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read: {e}"))?;
    serde_json::from_slice(&bytes).map_err(|e| format!("not JSON: {e}"))
}

/// The CDI ids a spec file gives: `<kind>=<device name>`, sorted.
pub fn spec_ids(spec: &Value) -> Vec<String> {
    let kind = spec["kind"].as_str().unwrap_or_default();
    let mut ids: Vec<String> = spec["devices"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|d| d["name"].as_str())
                .map(|n| format!("{kind}={n}"))
                .collect()
        })
        .unwrap_or_default();
    ids.sort();
    ids
}

/// One simulated GPU as the sim backend persists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimGpu {
    pub mig_enabled: bool,
    pub exclusive_process: bool,
    /// GPU instances by placement (start, size).
    pub instances: BTreeSet<(u32, u32)>,
}

/// The simulated hardware (`sim-hardware.json`, written atomically after
/// every change, so any read sees one whole state).
pub fn hardware(path: &Path) -> Result<Vec<SimGpu>, String> {
    let file = read_json(path)?;
    let gpus = file["state"].as_array().ok_or("no state array")?;
    Ok(gpus
        .iter()
        .map(|g| SimGpu {
            mig_enabled: g["mig_current"] == "Enabled",
            exclusive_process: g["compute_mode"] == "ExclusiveProcess",
            instances: g["gpu_instances"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|gi| {
                            let p = &gi["placement"];
                            Some((
                                u32::try_from(p["start"].as_u64()?).ok()?,
                                u32::try_from(p["size"].as_u64()?).ok()?,
                            ))
                        })
                        .collect()
                })
                .unwrap_or_default(),
        })
        .collect())
}

/// One running MPS control daemon (the stand-in, started with `-f`/`-d`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MpsProcess {
    pub pid: u32,
    pub ppid: u32,
    /// Its command line, for messages.
    pub args: String,
    pub pipe_dir: String,
    /// Its CUDA_VISIBLE_DEVICES, sorted.
    pub uuids: Vec<String>,
}

/// Every MPS control daemon whose pipe dir lies under `mps_dir`: a process
/// started with `-f`/`-d` whose environment names its devices (control
/// commands run with the same pipe dir, but no devices; zombies have no
/// environment left and are not counted).
pub fn mps_processes(mps_dir: &Path) -> Vec<MpsProcess> {
    let prefix = format!("{}/", mps_dir.display());
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse().ok()) else {
            continue;
        };
        let read = |what: &str| std::fs::read(entry.path().join(what)).unwrap_or_default();
        let cmdline = read("cmdline");
        let daemon = cmdline
            .split(|b| *b == 0)
            .any(|arg| arg == b"-f" || arg == b"-d");
        if !daemon {
            continue;
        }
        let environ = read("environ");
        let var = |name: &str| {
            environ.split(|b| *b == 0).find_map(|v| {
                v.strip_prefix(format!("{name}=").as_bytes())
                    .map(|v| String::from_utf8_lossy(v).into_owned())
            })
        };
        let Some(pipe_dir) = var("CUDA_MPS_PIPE_DIRECTORY").filter(|p| p.starts_with(&prefix))
        else {
            continue;
        };
        // The daemon's environment is exactly what gpusliced gave it; a
        // control command's helpers (a pyenv shim, say) have no devices.
        let Some(visible) = var("CUDA_VISIBLE_DEVICES") else {
            continue;
        };
        let mut uuids: Vec<String> = visible
            .split(',')
            .filter(|u| !u.is_empty())
            .map(str::to_owned)
            .collect();
        uuids.sort();
        let args = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        let stat = String::from_utf8_lossy(&read("stat")).into_owned();
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse().ok())
            .unwrap_or(0);
        out.push(MpsProcess {
            pid,
            ppid,
            args,
            pipe_dir,
            uuids,
        });
    }
    // A shell on the way to the daemon (the private mount namespace's
    // `sh -c "mount ...; exec ..."`) forks for `mount`: the fork is a copy
    // of its parent until it execs, and is not a second daemon.
    let pids: BTreeSet<u32> = out.iter().map(|p| p.pid).collect();
    out.retain(|p| !pids.contains(&p.ppid));
    out.sort_by_key(|p| p.pid);
    out
}
