//! What the prepared claims' CDI specs hand out must not overlap: a MIG
//! device's capability nodes (its GPU and compute instance) belong to one
//! claim; a GPU's `/dev/nvidiaN` given whole (no capability node beside it)
//! belongs to one claim, or to several that all share it under MPS, and never
//! beside a MIG device of the same GPU in another claim.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// One CDI device of a claim's spec, reduced to what may not overlap.
#[derive(Debug)]
struct Entry {
    claim: String,
    gpu_nodes: BTreeSet<String>,
    caps: BTreeSet<String>,
    mps: bool,
}

fn entries(cdi_dir: &Path) -> Vec<Entry> {
    let mut out = Vec::new();
    for file in std::fs::read_dir(cdi_dir).expect("read CDI folder") {
        let path = file.expect("CDI folder entry").path();
        let text = std::fs::read_to_string(&path).expect("read spec");
        let spec: serde_json::Value = serde_json::from_str(&text).expect("spec is JSON");
        let claim = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        for device in spec["devices"].as_array().into_iter().flatten() {
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
    }
    out
}

/// Panics, naming both claims, when two claims' specs overlap.
pub fn assert_no_overlap(cdi_dir: &Path) {
    let entries = entries(cdi_dir);
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
            claims.len() == 1 || holders.iter().all(|e| e.mps),
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
