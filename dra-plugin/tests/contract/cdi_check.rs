//! What the prepared claims' CDI specs hand out must not overlap: a MIG
//! device's capability nodes (its GPU and compute instance) belong to one
//! claim; a GPU's `/dev/nvidiaN` given whole (no capability node beside it)
//! belongs to one claim, or to several that all share it under MPS, and never
//! beside a MIG device of the same GPU in another claim.
//!
//! A container gets the CDI devices of whole requests (a pod's container
//! names a claim, or one request of it), so a device is under MPS when its
//! request's CDI devices carry the MPS client edits: gpusliced puts them on
//! the first device of each MPS daemon, once per container. Every spec in
//! the folder must belong to a claim the scheduler still has allocated, with
//! exactly its allocated devices.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use gpuslice::cdi_build::claim_uid_of_spec_file;

use k8s_openapi::api::resource::v1::DeviceRequestAllocationResult as Allocated;

/// One CDI device of a claim's spec, reduced to what may not overlap.
#[derive(Debug)]
struct Entry {
    claim: String,
    request: String,
    gpu_nodes: BTreeSet<String>,
    caps: BTreeSet<String>,
    mps: bool,
}

/// The request of each allocated device: (claim uid, device) → request.
fn requests_of(live: &[(String, Vec<Allocated>)]) -> BTreeMap<(&str, &str), &str> {
    live.iter()
        .flat_map(|(uid, results)| {
            results
                .iter()
                .map(move |r| ((uid.as_str(), r.device.as_str()), r.request.as_str()))
        })
        .collect()
}

fn entries(cdi_dir: &Path, live: &[(String, Vec<Allocated>)]) -> Vec<Entry> {
    let requests = requests_of(live);
    let mut out = Vec::new();
    let mut specs = BTreeSet::new();
    for file in std::fs::read_dir(cdi_dir).expect("read CDI folder") {
        let path = file.expect("CDI folder entry").path();
        let text = std::fs::read_to_string(&path).expect("read spec");
        let spec: serde_json::Value = serde_json::from_str(&text).expect("spec is JSON");
        let claim = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let file_name = path
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let uid = claim_uid_of_spec_file(&file_name)
            .unwrap_or_else(|| panic!("{} is not a claim spec", path.display()))
            .to_owned();
        let uid = uid.as_str();
        specs.insert(uid.to_owned());
        let mut named = BTreeSet::new();
        for device in spec["devices"].as_array().into_iter().flatten() {
            let name = device["name"].as_str().unwrap_or_default();
            let allocated = name
                .strip_prefix(uid)
                .and_then(|n| n.strip_prefix('-'))
                .unwrap_or_else(|| panic!("CDI device {name} of {claim} is not named after it"));
            let request = requests.get(&(uid, allocated)).unwrap_or_else(|| {
                panic!("{claim} has CDI device {name}, which the scheduler did not allocate to it")
            });
            named.insert(allocated);
            let nodes: Vec<String> = device["containerEdits"]["deviceNodes"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|n| n["path"].as_str().map(str::to_owned))
                .collect();
            let is_gpu = |p: &str| {
                p.strip_prefix("/dev/nvidia")
                    .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
            };
            out.push(Entry {
                claim: claim.clone(),
                request: (*request).to_owned(),
                gpu_nodes: nodes.iter().filter(|p| is_gpu(p)).cloned().collect(),
                caps: nodes
                    .iter()
                    .filter(|p| p.starts_with("/dev/nvidia-caps/"))
                    .cloned()
                    .collect(),
                mps: device.to_string().contains("CUDA_MPS_PIPE_DIRECTORY")
                    || spec["containerEdits"]
                        .to_string()
                        .contains("CUDA_MPS_PIPE_DIRECTORY"),
            });
        }
        let allocated: BTreeSet<&str> = requests
            .keys()
            .filter(|(u, _)| *u == uid)
            .map(|(_, d)| *d)
            .collect();
        assert_eq!(
            named, allocated,
            "{claim}'s CDI devices against its allocation"
        );
    }
    let allocated: BTreeSet<String> = live.iter().map(|(uid, _)| uid.clone()).collect();
    assert_eq!(
        specs, allocated,
        "claims with a CDI spec against claims allocated"
    );
    out
}

/// The (claim, request) pairs whose CDI devices carry the MPS client edits.
fn mps_requests(entries: &[Entry]) -> BTreeSet<(&str, &str)> {
    entries
        .iter()
        .filter(|e| e.mps)
        .map(|e| (e.claim.as_str(), e.request.as_str()))
        .collect()
}

/// Panics, naming both claims, when two claims' specs overlap, or when a
/// spec is not what `live` (each claim still allocated, with its
/// allocation) says.
pub fn assert_no_overlap(cdi_dir: &Path, live: &[(String, Vec<Allocated>)]) {
    let entries = entries(cdi_dir, live);
    let under_mps = mps_requests(&entries);
    let mut cap_owner: BTreeMap<&str, &str> = BTreeMap::new();
    let mut whole: BTreeMap<&str, Vec<&Entry>> = BTreeMap::new();
    let mut sliced: BTreeMap<&str, &str> = BTreeMap::new();
    for e in &entries {
        for cap in &e.caps {
            if let Some(other) = cap_owner.insert(cap, &e.claim) {
                assert_eq!(
                    other, e.claim,
                    "{cap} is in the specs of {other} and {}",
                    e.claim
                );
            }
        }
        for node in &e.gpu_nodes {
            if e.caps.is_empty() {
                whole.entry(node).or_default().push(e);
            } else {
                sliced.insert(node, &e.claim);
            }
        }
    }
    for (node, holders) in &whole {
        let claims: BTreeSet<&str> = holders.iter().map(|e| e.claim.as_str()).collect();
        assert!(
            claims.len() == 1
                || holders
                    .iter()
                    .all(|e| under_mps.contains(&(e.claim.as_str(), e.request.as_str()))),
            "{node} is given whole to {claims:?}, not all of them under MPS"
        );
        if let Some(slice_claim) = sliced.get(node) {
            assert!(
                claims.iter().all(|c| c == slice_claim),
                "{node} is given whole to {claims:?} while {slice_claim} holds a MIG device of it"
            );
        }
    }
}
