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
//! from a version: [`probe`] asks discovery whether resource.k8s.io/v1
//! ResourceSlices are served, then dry-run creates (`dryRun=All`: strategy,
//! validation and admission run, nothing is stored) the two slices a
//! partitionable pool is made of, for this node: one with a counter set,
//! one with a device that consumes from it. Kept in both answers: the gate
//! is on. [`decide`] is the pure rule from those findings to a form and a
//! reason. [`dropped`] checks every real write's answer the same way, so a
//! gate switched off later is noticed at the next write.
//!
//! A probe the API server refuses (403, 422) decides too: the layout, with
//! the refusal as the reason. A probe that cannot reach it decides nothing
//! (the sync fails and is retried, as a failed list is).

mod probe;

use k8s_openapi::api::resource::v1::ResourceSliceSpec;

pub use probe::{ProbeError, is_verdict, probe};

/// A form of MIG slices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// The concrete slices of each GPU's layout: any cluster.
    Layout,
    /// Every (profile, placement) with shared counters.
    Partitionable,
}

/// What one dry-run create answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// The answer still has the field.
    Kept,
    /// The answer lacks it: the API server dropped it.
    Dropped,
    /// The API server refused the create (HTTP code, its message).
    Refused(u16, String),
}

/// Everything the probe found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Findings {
    /// Discovery lists `resourceslices` in resource.k8s.io/v1.
    pub v1_served: bool,
    /// The counter-set slice's `spec.sharedCounters`.
    pub shared_counters: Probe,
    /// The device slice's `devices[0].consumesCounters`.
    pub consumes_counters: Probe,
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
const SHARED: &str = "sharedCounters";
const CONSUMES: &str = "consumesCounters";

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
    if let Some((field, Probe::Refused(code, message))) =
        probes.iter().find(|(_, p)| matches!(p, Probe::Refused(..)))
    {
        return layout(format!(
            "the API server refused the dry-run create of a ResourceSlice with {field} \
             ({code}: {})",
            first_line(message)
        ));
    }
    let dropped: Vec<&str> = probes
        .iter()
        .filter(|(_, p)| **p == Probe::Dropped)
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

/// The first line of an API message, at most 200 characters.
fn first_line(message: &str) -> String {
    let line = message.lines().next().unwrap_or_default();
    line.chars().take(200).collect()
}

#[cfg(test)]
mod tests;
