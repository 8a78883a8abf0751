//! A claim's `AllocationResult` as the scheduler writes it (upstream
//! incubating `Allocate`, after the search): one result per device with its
//! request (`request/subrequest` for an alternative), tolerations, admin
//! access and, on a device allowing multiple allocations, the capacity it
//! consumes; the configs of the classes used (once per class, naming the
//! requests) then the claim's own; and a node selector for the slices'
//! node. Share ids are left to the caller (upstream makes a fresh UID per
//! shared result). Pure.

use k8s_openapi::api::core::v1::{NodeSelector, NodeSelectorRequirement, NodeSelectorTerm};
use k8s_openapi::api::resource::v1::{
    AllocationResult, DeviceAllocationConfiguration, DeviceAllocationResult,
    DeviceRequestAllocationResult,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as K8sQuantity;

use super::requests::Prepared;
use super::search::{Picked, Search};

fn result(p: &Prepared<'_>, picked: &Picked) -> DeviceRequestAllocationResult {
    let r = &p.requests[picked.request];
    let consumed = picked.consumed.as_ref().filter(|c| !c.is_empty()).map(|c| {
        c.iter()
            .map(|(k, q)| (k.clone(), K8sQuantity(q.canonical())))
            .collect()
    });
    DeviceRequestAllocationResult {
        request: r.name(),
        driver: p.pool.driver.clone(),
        pool: p.pool.name.clone(),
        device: p.pool.devices[picked.device].raw.name.clone(),
        admin_access: r.admin.then_some(true),
        tolerations: (!r.tolerations.is_empty()).then(|| r.tolerations.to_vec()),
        consumed_capacity: consumed,
        ..DeviceRequestAllocationResult::default()
    }
}

/// The request data each request of `claim` ended with.
fn chosen(p: &Prepared<'_>, search: &Search<'_, '_>, claim: usize) -> Vec<usize> {
    p.claims[claim]
        .requests
        .iter()
        .enumerate()
        .map(|(r, ids)| {
            let sub = search.chosen.get(&(claim, r)).copied().unwrap_or(0);
            ids.get(sub).or(ids.first()).copied().unwrap_or_default()
        })
        .collect()
}

fn configs(
    p: &Prepared<'_>,
    search: &Search<'_, '_>,
    claim: usize,
) -> Vec<DeviceAllocationConfiguration> {
    let mut out: Vec<DeviceAllocationConfiguration> = Vec::new();
    let mut by_class: Vec<(usize, std::ops::Range<usize>)> = Vec::new();
    let chosen = chosen(p, search, claim);
    for &id in &chosen {
        let r = &p.requests[id];
        if let Some((_, range)) = by_class.iter().find(|(c, _)| *c == r.class_index) {
            for config in &mut out[range.clone()] {
                config.requests.get_or_insert_default().push(r.name());
            }
            continue;
        }
        let start = out.len();
        for c in p.classes[r.class_index].spec.config.iter().flatten() {
            out.push(DeviceAllocationConfiguration {
                source: "FromClass".to_owned(),
                requests: Some(vec![r.name()]),
                opaque: c.opaque.clone(),
            });
        }
        by_class.push((r.class_index, start..out.len()));
    }
    let spec = p.claims[claim].claim.spec.devices.as_ref();
    for config in spec.and_then(|d| d.config.as_ref()).into_iter().flatten() {
        let named = config.requests.as_deref().unwrap_or_default();
        let from_claim = || DeviceAllocationConfiguration {
            source: "FromClaim".to_owned(),
            requests: config.requests.clone(),
            opaque: config.opaque.clone(),
        };
        if named.is_empty() {
            out.push(from_claim());
            continue;
        }
        // Once per request it names, as upstream appends it.
        for &id in &chosen {
            let r = &p.requests[id];
            if named.iter().any(|n| n == r.base) || (r.sub.is_some() && named.contains(&r.name())) {
                out.push(from_claim());
            }
        }
    }
    for config in &mut out {
        if config
            .requests
            .as_ref()
            .is_some_and(|r| r.len() == chosen.len())
        {
            config.requests = None;
        }
    }
    out
}

fn node_selector(p: &Prepared<'_>) -> Option<NodeSelector> {
    let node = p.pool.node.clone()?;
    Some(NodeSelector {
        node_selector_terms: vec![NodeSelectorTerm {
            match_fields: Some(vec![NodeSelectorRequirement {
                key: "metadata.name".to_owned(),
                operator: "In".to_owned(),
                values: Some(vec![node]),
            }]),
            match_expressions: None,
        }],
    })
}

/// The allocation of `claim` the search found.
pub fn allocation(p: &Prepared<'_>, search: &Search<'_, '_>, claim: usize) -> AllocationResult {
    let results = search.results[claim].iter().map(|r| result(p, r)).collect();
    let config = configs(p, search, claim);
    AllocationResult {
        devices: Some(DeviceAllocationResult {
            results: Some(results),
            config: (!config.is_empty()).then_some(config),
        }),
        node_selector: node_selector(p),
        allocation_timestamp: None,
    }
}
