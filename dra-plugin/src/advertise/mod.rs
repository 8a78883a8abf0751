//! Which form of MIG slices the API server takes: partitionable devices
//! (shared counters) or the layout. Only the plugin can see the API server,
//! so it finds out and tells gpusliced (`SetMigAdvertise`); under
//! `[mig] advertise = "auto"` gpusliced offers that form, and an explicit
//! form in gpusliced's config wins.
//!
//! The API server drops the fields of a disabled feature gate silently: with
//! DRAPartitionableDevices off, `dropDisabledFields` of its ResourceSlice
//! strategy clears `spec.sharedCounters` and every device's
//! `consumesCounters` on create (and on update unless the stored slice
//! already uses them), and answers success. So the gate is never assumed
//! from a version: the probe ([`crate::probe::MigFormProbe`]) asks
//! discovery whether resource.k8s.io/v1 ResourceSlices are served, then
//! dry-run creates the two slices a partitionable pool is made of, for this
//! node: one with a counter set, one with a device that consumes from it.
//! Kept in both answers: the gate is on. [`decide`] is the pure rule from
//! those findings to a form and a reason. [`dropped`] checks every real
//! write's answer the same way, so a gate switched off later is noticed at
//! the next write.
//!
//! A probe the API server refuses for good (400, 401, 403, 404, 422:
//! [`crate::probe::answer`]) decides too: the layout, with the refusal as
//! the reason. A probe answered 408, 409, 429, 5xx or not at all decides
//! nothing (the sync fails and is retried with backoff, keeping what the
//! probe found so far).

use k8s_openapi::api::resource::v1::ResourceSliceSpec;

use crate::probe::Finding;
use crate::probe::answer::first_line;

/// A form of MIG slices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// The concrete slices of each GPU's layout: any cluster.
    Layout,
    /// Every (profile, placement) with shared counters.
    Partitionable,
}

/// Everything the probe found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Findings {
    /// Discovery lists `resourceslices` in resource.k8s.io/v1.
    pub v1_served: bool,
    /// The counter-set slice's `spec.sharedCounters`.
    pub shared_counters: Finding,
    /// The device slice's `devices[0].consumesCounters`.
    pub consumes_counters: Finding,
}

/// The form to ask gpusliced for, and why (one line, logged and shown by
/// `gpuslicectl status`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// The form.
    pub form: Form,
    /// Why.
    pub reason: String,
}

/// The field names as the API spells them.
pub const SHARED: &str = "sharedCounters";
/// See [`SHARED`].
pub const CONSUMES: &str = "consumesCounters";

/// From the findings to a form: partitionable only when v1 is served and
/// both fields came back; otherwise the layout, saying why.
pub fn decide(findings: &Findings) -> Decision {
    let layout = |reason: String| Decision {
        form: Form::Layout,
        reason,
    };
    if !findings.v1_served {
        return layout(
            "the API server does not serve resource.k8s.io/v1 ResourceSlices".to_owned(),
        );
    }
    let probes = [
        (SHARED, &findings.shared_counters),
        (CONSUMES, &findings.consumes_counters),
    ];
    if let Some((field, Finding::Refused(refusal))) = probes
        .iter()
        .find(|(_, p)| matches!(p, Finding::Refused(_)))
    {
        return layout(format!(
            "the API server refused the dry-run create of a ResourceSlice with {field} \
             ({}: {})",
            refusal.code,
            first_line(&refusal.message, 200)
        ));
    }
    let dropped: Vec<&str> = probes
        .iter()
        .filter(|(_, p)| **p == Finding::Dropped)
        .map(|(field, _)| *field)
        .collect();
    if dropped.is_empty() {
        Decision {
            form: Form::Partitionable,
            reason: format!("the API server keeps {SHARED} and {CONSUMES}"),
        }
    } else {
        layout(format!(
            "the API server drops {} (DRAPartitionableDevices off)",
            dropped.join(" and ")
        ))
    }
}

/// The counter field the API server dropped from a write (`sent` → its
/// answer `kept`), if any.
pub fn dropped(sent: &ResourceSliceSpec, kept: &ResourceSliceSpec) -> Option<&'static str> {
    if has_shared(sent) && !has_shared(kept) {
        return Some(SHARED);
    }
    if consumes(sent) > consumes(kept) {
        return Some(CONSUMES);
    }
    None
}

/// Whether a slice has a counter set.
pub fn has_shared(spec: &ResourceSliceSpec) -> bool {
    spec.shared_counters.as_ref().is_some_and(|s| !s.is_empty())
}

/// How many devices consume counters.
pub fn consumes(spec: &ResourceSliceSpec) -> usize {
    spec.devices
        .iter()
        .flatten()
        .filter(|d| d.consumes_counters.as_ref().is_some_and(|c| !c.is_empty()))
        .count()
}

#[cfg(test)]
mod tests;
