//! `gpuslicectl match -f`: each claim of the file (each template's claim
//! spec) judged whole by gpuslice-selector's allocator, the scheduler's
//! rules: can it be allocated on this node now, with what other claims
//! hold, and on an empty node; and when not, what falls short. Each claim
//! is judged as the only claim of its pod.
//!
//! What other claims hold comes from gpusliced's inventory: a device with
//! holders is allocated; one published with `allowMultipleAllocations` is
//! shared, and its shares consume its memory less what is left
//! (`memory_available`) and, of any other capacity, what a request without
//! an amount takes, once per holder.

use std::collections::BTreeMap;

use gpuslice_proto::gpuslice::v1 as pb;
use gpuslice_publish::slices::MEMORY;
use gpuslice_publish::slices::quantity::quantity;
use gpuslice_selector::allocate::{Assigned, Fit, Held, Shortfall, judge};
use gpuslice_selector::inputs::ClaimDoc;
use gpuslice_selector::quantity::Quantity;
use k8s_openapi::api::resource::v1::{
    CELDeviceSelector, Device, DeviceClass, DeviceClassSpec, DeviceSelector, ResourceSliceSpec,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as K8sQuantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// A shortfall and the line that says it.
#[derive(Debug, serde::Serialize)]
pub struct ShortfallReport {
    /// What falls short.
    #[serde(flatten)]
    pub detail: Shortfall,
    /// In words.
    pub message: String,
}

/// One claim's verdict.
#[derive(Debug, serde::Serialize)]
pub struct ClaimVerdict {
    /// "claim train", "template mig-pair".
    #[serde(skip)]
    pub label: String,
    /// The claim's (or template's) name.
    pub claim: String,
    /// "ResourceClaim" or "ResourceClaimTemplate".
    pub kind: &'static str,
    /// Allocatable now.
    pub now: bool,
    /// Allocatable on an empty node.
    pub empty_node: bool,
    /// "now", "empty_node_only", "never" or "undecided".
    pub verdict: &'static str,
    /// What first fit gives it now, else on an empty node.
    pub devices: Vec<Assigned>,
    /// Why not now (when it fits on an empty node) or why not at all.
    pub shortfalls: Vec<ShortfallReport>,
    /// What was assumed or could not be judged.
    pub notes: Vec<String>,
}

/// What other claims hold, from the inventory's holders.
pub fn held(inventory: &pb::GetInventoryResponse, slices: &[ResourceSliceSpec]) -> Held {
    let published: BTreeMap<&str, &Device> = slices
        .iter()
        .flat_map(|s| s.devices.iter().flatten())
        .map(|d| (d.name.as_str(), d))
        .collect();
    let mut held = Held::default();
    for d in inventory.devices.iter().filter(|d| !d.holders.is_empty()) {
        let Some(device) = published.get(d.name.as_str()) else {
            continue;
        };
        if device.allow_multiple_allocations != Some(true) {
            held.devices.insert(d.name.clone());
            continue;
        }
        let mut consumed = BTreeMap::new();
        for (name, capacity) in device.capacity.iter().flatten() {
            let amount = if name == MEMORY {
                let total = d.capacity.get(MEMORY).copied().unwrap_or_default();
                quantity(total.saturating_sub(d.memory_available).max(0))
            } else {
                let each = capacity
                    .request_policy
                    .as_ref()
                    .and_then(|p| p.default.clone());
                times(
                    &each.unwrap_or_else(|| capacity.value.clone()),
                    d.holders.len(),
                )
            };
            consumed.insert(name.clone(), amount);
        }
        held.shared.insert(d.name.clone(), consumed);
    }
    held
}

fn times(each: &K8sQuantity, n: usize) -> K8sQuantity {
    let Ok(one) = Quantity::parse(&each.0) else {
        return each.clone();
    };
    let total = (1..n).try_fold(one, |sum, _| sum.checked_add(one));
    K8sQuantity(total.unwrap_or(one).canonical())
}

/// The DeviceClasses the claims name: those of the file and the packaged
/// ones by name; a class nobody gave is judged without selectors (a note
/// says so).
fn classes(
    doc: &ClaimDoc,
    known: &BTreeMap<String, Vec<String>>,
    notes: &mut Vec<String>,
) -> Vec<DeviceClass> {
    let mut names: Vec<&str> = Vec::new();
    let requests = doc
        .claim
        .spec
        .devices
        .iter()
        .flat_map(|d| d.requests.iter().flatten());
    for r in requests {
        names.extend(r.exactly.iter().map(|e| e.device_class_name.as_str()));
        names.extend(
            r.first_available
                .iter()
                .flatten()
                .map(|s| s.device_class_name.as_str()),
        );
    }
    names.sort_unstable();
    names.dedup();
    names
        .into_iter()
        .map(|name| {
            let expressions = known.get(name).cloned().unwrap_or_else(|| {
                notes.push(format!(
                    "class {name} is not in the file nor packaged with gpuslice: judged as if it had no selectors"
                ));
                Vec::new()
            });
            class(name, &expressions)
        })
        .collect()
}

fn class(name: &str, expressions: &[String]) -> DeviceClass {
    let selectors = expressions
        .iter()
        .map(|e| DeviceSelector {
            cel: Some(CELDeviceSelector {
                expression: e.clone(),
            }),
        })
        .collect();
    DeviceClass {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        spec: DeviceClassSpec {
            selectors: Some(selectors),
            ..DeviceClassSpec::default()
        },
    }
}

fn reports(shortfalls: Vec<Shortfall>) -> Vec<ShortfallReport> {
    shortfalls
        .into_iter()
        .map(|detail| ShortfallReport {
            message: detail.to_string(),
            detail,
        })
        .collect()
}

/// Judges `doc` on the pool of `slices`, `held` being held now; `known`
/// has every class's selectors (the file's and the packaged ones).
pub fn verdict(
    doc: &ClaimDoc,
    known: &BTreeMap<String, Vec<String>>,
    slices: &[ResourceSliceSpec],
    held: &Held,
) -> ClaimVerdict {
    let mut notes = Vec::new();
    let classes = classes(doc, known, &mut notes);
    let mut out = ClaimVerdict {
        label: doc.label.clone(),
        claim: doc.claim.metadata.name.clone().unwrap_or_default(),
        kind: doc.kind,
        now: false,
        empty_node: false,
        verdict: "undecided",
        devices: Vec::new(),
        shortfalls: Vec::new(),
        notes,
    };
    let judgement = match judge(slices, &classes, &doc.claim, held) {
        Ok(j) => j,
        Err(e) => {
            out.notes.push(format!("not judged: {e}"));
            return out;
        }
    };
    out.now = judgement.now.fits();
    out.empty_node = judgement.empty_node.fits();
    let (verdict, devices, shortfalls) = match (judgement.now, judgement.empty_node) {
        (Fit::Yes { devices }, _) => ("now", devices, Vec::new()),
        (Fit::No { shortfalls }, Fit::Yes { devices }) => ("empty_node_only", devices, shortfalls),
        (Fit::No { .. }, Fit::No { shortfalls }) => ("never", Vec::new(), shortfalls),
    };
    out.verdict = verdict;
    out.devices = devices;
    out.shortfalls = reports(shortfalls);
    out
}
