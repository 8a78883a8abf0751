//! The advice of every prepared claim on the node: for each device of each
//! claim, its current form (from the claim's record), its GPU's model and
//! what the node offers on it ([`super::offer`]), its history, and the
//! rule's answer ([`super::rule::advise`]). What the API, the metrics and
//! gpuslicectl show. Pure: the caller hands the records, the inventory, the
//! history and the offer.

use std::collections::BTreeMap;

use super::history::History;
use super::offer::NodeOffer;
use super::rule::{Advice, CurrentForm, Form, RuleSettings, advise};
use crate::inventory::Inventory;
use crate::state::{ClaimRecord, DeviceSharing, RecordDevice};

/// The packaged DeviceClass a claim of this form asks for (see
/// `packaging/deviceclasses/`); `None` for no new form.
pub fn device_class(form: &Form) -> Option<&'static str> {
    match form {
        Form::Mig { .. } => Some("mig.nvidia.com"),
        Form::Mps { .. } => Some("gpu.nvidia.com"),
        Form::TimeSlicing { .. } => Some("shared-gpu.gpuslice.dev"),
        Form::Abstain | Form::Keep | Form::GiveBack => None,
    }
}

/// One device of a claim and its advice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceAdvice {
    /// The inventory name.
    pub device: String,
    /// The (parent) GPU's inventory name; the device's when the GPU is gone.
    pub gpu: String,
    /// The form the claim holds it in.
    pub current: CurrentForm,
    /// What to do.
    pub advice: Advice,
}

/// One prepared claim's advice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimAdvice {
    /// The claim uid.
    pub uid: String,
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// Per device, in record order.
    pub devices: Vec<DeviceAdvice>,
}

/// The advice of every claim of `records`, sorted by uid.
pub fn node_advice(
    records: &[ClaimRecord],
    inventory: &Inventory,
    history: &History,
    offer: &NodeOffer,
    settings: RuleSettings,
) -> Vec<ClaimAdvice> {
    let sharers = sharers(records);
    let mut claims: Vec<ClaimAdvice> = records
        .iter()
        .map(|r| ClaimAdvice {
            uid: r.uid.clone(),
            namespace: r.namespace.clone(),
            name: r.name.clone(),
            devices: r
                .devices
                .iter()
                .map(|d| {
                    let current = current_form(d, &sharers);
                    let gpu = inventory.gpu_by_uuid(&d.uuid);
                    let model = gpu.and_then(|g| offer.models.get(&g.info.product_name));
                    let advice = match (history.device(&r.uid, &d.device), model) {
                        (_, None) => abstain("its GPU is not in the inventory"),
                        (None, _) => abstain("not observed yet"),
                        (Some(h), Some(m)) => {
                            advise(h, &current, &m.gpu_model(), m.offer, settings)
                        }
                    };
                    DeviceAdvice {
                        device: d.device.clone(),
                        gpu: gpu.map_or_else(|| d.device.clone(), |g| g.name.clone()),
                        current,
                        advice,
                    }
                })
                .collect(),
        })
        .collect();
    claims.sort_by(|a, b| a.uid.cmp(&b.uid));
    claims
}

fn abstain(reason: &str) -> Advice {
    Advice {
        form: Form::Abstain,
        observed_s: 0,
        memory_peak: None,
        sm_p95: None,
        smallest_mig_fit: None,
        reason: reason.to_owned(),
    }
}

/// GPU uuid → claims holding it time-sliced.
fn sharers(records: &[ClaimRecord]) -> BTreeMap<&str, u32> {
    let mut out: BTreeMap<&str, u32> = BTreeMap::new();
    for r in records {
        let mut uuids: Vec<&str> = r
            .devices
            .iter()
            .filter(|d| matches!(d.sharing, Some(DeviceSharing::TimeSlicing { .. })))
            .map(|d| d.uuid.as_str())
            .collect();
        uuids.sort_unstable();
        uuids.dedup();
        for uuid in uuids {
            *out.entry(uuid).or_default() += 1;
        }
    }
    out
}

/// The form a record's device is held in.
pub fn current_form(device: &RecordDevice, sharers: &BTreeMap<&str, u32>) -> CurrentForm {
    if let Some(slice) = &device.mig {
        return CurrentForm::Mig {
            profile: slice.profile.clone(),
        };
    }
    match &device.sharing {
        Some(DeviceSharing::Mps(mps)) => CurrentForm::Mps {
            memory_bytes: mps
                .memory_share
                .or_else(|| mps.pinned_memory_limits.get(&device.device).copied())
                .or(device.consumed_memory),
            thread_percentage: mps.active_thread_percentage.map(u32::from),
        },
        Some(DeviceSharing::TimeSlicing { .. }) => CurrentForm::TimeSlicing {
            sharers: sharers
                .get(device.uuid.as_str())
                .copied()
                .unwrap_or(1)
                .max(1),
        },
        None => CurrentForm::Whole,
    }
}

#[cfg(test)]
mod tests;
