//! Which ResourceSlice writes bring the published pool to the desired one.
//! Pure: the publisher lists, calls [`plan`], and performs the writes.
//!
//! Rules: consumers use only a pool's highest generation, so the pool is
//! either left alone (every listed slice equals a desired slice, same count)
//! or rewritten whole at generation + 1: existing slices are updated in name
//! order, missing ones created, surplus ones deleted last. The generation
//! comes from what is listed, and never goes below `last_published` (what
//! this process wrote before), so slices deleted by someone else come back
//! newer than any copy a consumer may still cache; a restarted shim carries
//! on from what it lists.

use k8s_openapi::api::resource::v1::ResourceSliceSpec;

/// A slice as listed from the API server.
#[derive(Debug, Clone, PartialEq)]
pub struct Existing {
    /// metadata.name.
    pub name: String,
    /// metadata.uid (delete precondition).
    pub uid: Option<String>,
    /// metadata.resourceVersion (update and delete precondition).
    pub resource_version: Option<String>,
    /// The spec.
    pub spec: ResourceSliceSpec,
}

/// One API write.
#[derive(Debug, Clone, PartialEq)]
pub enum Write {
    /// Create a new slice (named by generateName).
    Create(ResourceSliceSpec),
    /// Replace the spec of a listed slice.
    Update {
        /// The slice.
        name: String,
        /// Its resourceVersion when listed.
        resource_version: Option<String>,
        /// The new spec.
        spec: ResourceSliceSpec,
    },
    /// Delete a listed slice.
    Delete {
        /// The slice.
        name: String,
        /// Its uid when listed.
        uid: Option<String>,
        /// Its resourceVersion when listed.
        resource_version: Option<String>,
    },
}

/// The writes, in order, and the generation they publish.
#[derive(Debug, Clone, PartialEq)]
pub struct SyncPlan {
    /// The pool generation after the writes.
    pub generation: i64,
    /// Updates and creates first, deletes last.
    pub writes: Vec<Write>,
}

/// Plans the writes from `existing` to the pool `build(generation)` returns;
/// `last_published` is the generation this process last wrote (0 if none).
pub fn plan(
    existing: &[Existing],
    last_published: i64,
    build: impl Fn(i64) -> Vec<ResourceSliceSpec>,
) -> SyncPlan {
    let current = existing
        .iter()
        .map(|e| e.spec.pool.generation)
        .max()
        .unwrap_or(0)
        .max(last_published);
    let at_current = build(current);
    if !existing.is_empty() && same_specs(existing, &at_current) {
        return SyncPlan {
            generation: current,
            writes: Vec::new(),
        };
    }
    let generation = current.saturating_add(1);
    let desired = build(generation);
    let mut listed: Vec<&Existing> = existing.iter().collect();
    listed.sort_by(|a, b| a.name.cmp(&b.name));
    let mut writes = Vec::with_capacity(desired.len().max(listed.len()));
    for (index, spec) in desired.into_iter().enumerate() {
        writes.push(match listed.get(index) {
            Some(slice) => Write::Update {
                name: slice.name.clone(),
                resource_version: slice.resource_version.clone(),
                spec,
            },
            None => Write::Create(spec),
        });
    }
    let kept = writes.len();
    writes.extend(listed.iter().skip(kept).map(|slice| Write::Delete {
        name: slice.name.clone(),
        uid: slice.uid.clone(),
        resource_version: slice.resource_version.clone(),
    }));
    SyncPlan { generation, writes }
}

/// Whether the listed specs are the desired ones, in any order.
fn same_specs(existing: &[Existing], desired: &[ResourceSliceSpec]) -> bool {
    if existing.len() != desired.len() {
        return false;
    }
    let key = |spec: &ResourceSliceSpec| {
        serde_json::to_string(&normalized(spec.clone())).unwrap_or_default()
    };
    let mut have: Vec<String> = existing.iter().map(|e| key(&e.spec)).collect();
    let mut want: Vec<String> = desired.iter().map(key).collect();
    have.sort();
    want.sort();
    have == want
}

/// The spec as it compares: empty lists and maps as absent (the API server
/// omits them), taint times cleared (the API server fills them in).
pub fn normalized(mut spec: ResourceSliceSpec) -> ResourceSliceSpec {
    spec.devices = spec.devices.filter(|d| !d.is_empty()).map(|devices| {
        devices
            .into_iter()
            .map(|mut device| {
                device.attributes = device.attributes.filter(|m| !m.is_empty());
                device.capacity = device.capacity.filter(|m| !m.is_empty());
                device.consumes_counters = device.consumes_counters.filter(|c| !c.is_empty());
                device.taints = device.taints.filter(|t| !t.is_empty()).map(|taints| {
                    taints
                        .into_iter()
                        .map(|mut taint| {
                            taint.time_added = None;
                            taint
                        })
                        .collect()
                });
                device
            })
            .collect()
    });
    spec.shared_counters = spec.shared_counters.filter(|s| !s.is_empty());
    spec
}

#[cfg(test)]
mod tests;
