//! Node advice → the right-sizing families: per (claim, device) the advice
//! as an info-style gauge (`form`, `profile`), the seconds observed and the
//! memory peak; the GPUs the what-if frees; the history file's size. Pure
//! (the caller hands the advice), so a test feeds it hand-made advice.
//!
//! The per-claim families are cleared and rebuilt at every render (an
//! unprepared claim's series go), at most `max_series` (claim, device)
//! series each, claims in uid order, as the activity families.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::families::{DraClaimLabels, DraNames};
use crate::advice::Form;
use crate::advice::view::NodeAdvice;
use crate::state::AccessKind;

/// `{namespace, name, uid, device}` of the per-claim advice gauges, and the
/// same values under dcgm-exporter's DRA label names.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct AdviceDeviceLabels {
    /// The claim's namespace.
    pub namespace: String,
    /// The claim's name.
    pub name: String,
    /// The claim uid.
    pub uid: String,
    /// The device's inventory name.
    pub device: String,
    /// The same claim and device under the DRA label names.
    #[prometheus(flatten)]
    pub dra: DraClaimLabels,
}

/// `{namespace, name, uid, device, form, profile}` of `gpuslice_claim_advice`,
/// and the DRA label names.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct AdviceLabels {
    /// The claim's namespace.
    pub namespace: String,
    /// The claim's name.
    pub name: String,
    /// The claim uid.
    pub uid: String,
    /// The device's inventory name.
    pub device: String,
    /// abstain, keep, give_back, mig, mps, timeslicing.
    pub form: &'static str,
    /// The MIG profile advised; "" for other forms.
    pub profile: String,
    /// The same claim and device under the DRA label names.
    #[prometheus(flatten)]
    pub dra: DraClaimLabels,
}

/// The right-sizing families.
#[derive(Debug, Default)]
pub struct AdviceFamilies {
    /// Always 1, labelled with the advice.
    pub advice: Family<AdviceLabels, Gauge>,
    /// Seconds observed.
    pub observed: Family<AdviceDeviceLabels, Gauge>,
    /// The memory peak.
    pub memory_peak: Family<AdviceDeviceLabels, Gauge>,
    /// GPUs accepting every advice would free.
    pub gpus_freed: Gauge,
    /// Bytes of the history file at its last save.
    pub history_bytes: Gauge,
}

impl AdviceFamilies {
    /// Registers every family in `registry`.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "gpuslice_claim_advice",
            "Always 1, labelled with the right-sizing advice for the claim's device: form \
             (abstain, keep, give_back, mig, mps, timeslicing) and the MIG profile advised",
            Family::clone(&self.advice),
        );
        registry.register(
            "gpuslice_claim_observed_seconds",
            "Seconds the claim's device has been observed by the usage history",
            Family::clone(&self.observed),
        );
        registry.register(
            "gpuslice_claim_memory_peak_bytes",
            "The largest memory the claim's processes used on the device, in bytes",
            Family::clone(&self.memory_peak),
        );
        registry.register(
            "gpuslice_node_advice_gpus_freed",
            "Whole GPUs no claim would hold if every advice were accepted",
            self.gpus_freed.clone(),
        );
        registry.register(
            "gpuslice_activity_history_bytes",
            "Size of usage-history.json at its last save, in bytes",
            self.history_bytes.clone(),
        );
    }
}

fn gauge(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The form's label value.
pub fn form_label(form: &Form) -> &'static str {
    match form {
        Form::Abstain => "abstain",
        Form::Keep => "keep",
        Form::GiveBack => "give_back",
        Form::Mig { .. } => AccessKind::Mig.into(),
        Form::Mps { .. } => AccessKind::Mps.into(),
        Form::TimeSlicing { .. } => AccessKind::TimeSlicing.into(),
    }
}

/// Sets the families from `advice` (`None`: sampling off, nothing shown)
/// and the history's saved size; `dra` names the pool and driver of the DRA
/// labels.
pub fn apply(
    families: &AdviceFamilies,
    advice: Option<&NodeAdvice>,
    history_bytes: u64,
    max_series: usize,
    dra: &DraNames,
) {
    families.advice.clear();
    families.observed.clear();
    families.memory_peak.clear();
    families.history_bytes.set(gauge(history_bytes));
    let Some(advice) = advice else {
        families.gpus_freed.set(0);
        return;
    };
    families.gpus_freed.set(gauge(
        u64::try_from(advice.what_if.gpus_freed.len()).unwrap_or(u64::MAX),
    ));
    let pairs = advice
        .claims
        .iter()
        .flat_map(|c| c.devices.iter().map(move |d| (c, d)))
        .take(max_series);
    for (claim, device) in pairs {
        let labels = AdviceDeviceLabels {
            namespace: claim.namespace.clone(),
            name: claim.name.clone(),
            uid: claim.uid.clone(),
            device: device.device.clone(),
            dra: DraClaimLabels::new(dra, &claim.namespace, &claim.name, &device.device),
        };
        let profile = match &device.advice.form {
            Form::Mig { profile, .. } => profile.clone(),
            _ => String::new(),
        };
        families
            .advice
            .get_or_create(&AdviceLabels {
                namespace: labels.namespace.clone(),
                name: labels.name.clone(),
                uid: labels.uid.clone(),
                device: labels.device.clone(),
                form: form_label(&device.advice.form),
                profile,
                dra: labels.dra.clone(),
            })
            .set(1);
        families
            .observed
            .get_or_create(&labels)
            .set(gauge(device.advice.observed_s));
        if let Some(peak) = device.advice.memory_peak {
            families.memory_peak.get_or_create(&labels).set(gauge(peak));
        }
    }
}
