//! The right-sizing rule, per claim and device: from the device's history,
//! the claim's current form and what the node offers for the GPU's model,
//! the smallest form the observed use fits with headroom.
//!
//! 1. **Abstain** while observed for less than `min_observed_s`, while
//!    sampled time covers less than half the time since first seen, or when
//!    no memory figure was ever reported.
//! 2. **Give it back** when never active over the observed time.
//! 3. **MIG**, when the node runs MIG on a GPU of this model: the smallest
//!    profile (memory slices, then compute slices; `+me` only when the claim
//!    holds one) whose memory is at least the peak plus headroom and whose
//!    share of compute slices covers the SM p95 plus headroom. With SM
//!    unknown (a MIG slice today), only profiles with at least the current
//!    compute slices.
//! 4. **MPS share**, when MPS is offered and SM is known: the need rounded up
//!    to whole GiB and 5% threads.
//! 5. **Time-slice**, when offered and SM is known: k sharers, as many as
//!    memory and SM both allow, at least 2.
//! 6. The first of 3–5 that exists and costs less than the current form (the
//!    larger of its memory and compute fraction of the GPU) wins; else
//!    **keep**.
//!
//! Invariant: an advised form's memory is never below the exact memory peak
//! plus headroom. [`smallest_mig_fit`] names the fitting profile even where
//! the node offers no MIG. Pure.

mod forms;
mod reason;

use super::history::DeviceHistory;
use crate::gpu::MigProfile;

pub use forms::smallest_mig_fit;

/// The SM quantile the rule sizes compute for.
pub const SM_QUANTILE: f64 = 0.95;

/// `[advice]` as the rule reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RuleSettings {
    /// Seconds a claim must be observed first.
    pub min_observed_s: u64,
    /// Percent added to the peaks.
    pub headroom_percent: u32,
}

/// The GPU model a claim's device is on, as the inventory describes it.
#[derive(Debug, Clone, Copy)]
pub struct GpuModel<'a> {
    /// NVML's product name, e.g. "NVIDIA H100 80GB HBM3".
    pub product_name: &'a str,
    /// Memory of the whole GPU, bytes.
    pub memory_bytes: u64,
    /// Its MIG profile table; empty when the inventory has none.
    pub mig_profiles: &'a [MigProfile],
}

/// What the node offers on GPUs of the claim's model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Offer {
    /// A GPU of this model runs MIG (layout or partitionable).
    pub mig: bool,
    /// MPS is usable.
    pub mps: bool,
    /// Time-slicing is usable.
    pub timeslice: bool,
}

/// The form a claim holds its device in now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CurrentForm {
    /// A whole GPU.
    Whole,
    /// A MIG slice of this profile.
    Mig {
        /// Profile name, e.g. "3g.40gb".
        profile: String,
    },
    /// An MPS share.
    Mps {
        /// Memory limit, bytes; `None`: none.
        memory_bytes: Option<u64>,
        /// Active thread percentage; `None`: 100.
        thread_percentage: Option<u32>,
    },
    /// A time-sliced GPU shared by this many claims.
    TimeSlicing {
        /// Claims on the GPU, this one included.
        sharers: u32,
    },
}

/// What to do with one device of a claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Form {
    /// Too little seen to say.
    Abstain,
    /// Already the smallest fitting form.
    Keep,
    /// Never active: give the device back.
    GiveBack,
    /// A MIG slice.
    Mig {
        /// Profile name.
        profile: String,
        /// Its memory, bytes.
        memory_bytes: u64,
    },
    /// An MPS share.
    Mps {
        /// Memory limit, bytes.
        memory_bytes: u64,
        /// Active thread percentage.
        thread_percentage: u32,
    },
    /// A time-sliced GPU shared with up to `sharers − 1` others.
    TimeSlicing {
        /// Claims on the GPU, this one included.
        sharers: u32,
        /// Memory share, bytes.
        memory_bytes: u64,
    },
}

impl Form {
    /// The memory the form gives, where it names one.
    pub fn memory_bytes(&self) -> Option<u64> {
        match self {
            Form::Mig { memory_bytes, .. }
            | Form::Mps { memory_bytes, .. }
            | Form::TimeSlicing { memory_bytes, .. } => Some(*memory_bytes),
            Form::Abstain | Form::Keep | Form::GiveBack => None,
        }
    }
}

/// The advice for one device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Advice {
    /// What to do.
    pub form: Form,
    /// Seconds observed.
    pub observed_s: u64,
    /// The exact memory peak, bytes.
    pub memory_peak: Option<u64>,
    /// SM p95 in percent (a bucket's end), where known.
    pub sm_p95: Option<u32>,
    /// The smallest profile of the model's table the use fits, offered or
    /// not.
    pub smallest_mig_fit: Option<String>,
    /// Why, in words.
    pub reason: String,
}

/// The needs, headroom included.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Need {
    /// Memory, bytes.
    pub memory: u64,
    /// SM percent of the whole GPU, where known.
    pub sm: Option<f64>,
    /// The memory peak without headroom.
    pub peak: u64,
    /// SM p95 without headroom.
    pub sm_p95: Option<u32>,
}

/// The advice for one device of a claim.
pub fn advise(
    history: &DeviceHistory,
    current: &CurrentForm,
    model: &GpuModel<'_>,
    offer: Offer,
    settings: RuleSettings,
) -> Advice {
    let observed_s = history.observed_s;
    let abstain = |reason: String, peak, sm_p95| Advice {
        form: Form::Abstain,
        observed_s,
        memory_peak: peak,
        sm_p95,
        smallest_mig_fit: None,
        reason,
    };
    let sm_p95 = sm_p95(history, current);
    if let Some(reason) = reason::too_little(history, settings.min_observed_s) {
        return abstain(reason, history.memory_peak, sm_p95);
    }
    let Some(peak) = history.memory_peak else {
        return abstain(
            "no memory figure was reported for this device".to_owned(),
            None,
            sm_p95,
        );
    };
    let need = need(peak, sm_p95, settings.headroom_percent);
    let smallest = smallest_mig_fit(model.mig_profiles, &need, current);
    let (form, reason) = if history.active_samples == 0 {
        (Form::GiveBack, reason::give_back(observed_s))
    } else {
        forms::choose(&need, current, model, offer, smallest)
    };
    Advice {
        form,
        observed_s,
        memory_peak: Some(peak),
        sm_p95,
        smallest_mig_fit: smallest.map(|p| p.name.clone()),
        reason,
    }
}

/// SM p95 of the history, unless the device is a MIG slice (no per-process
/// SM figures there).
fn sm_p95(history: &DeviceHistory, current: &CurrentForm) -> Option<u32> {
    if matches!(current, CurrentForm::Mig { .. }) {
        return None;
    }
    let p = history.sm.percentile(SM_QUANTILE)?;
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "a bucket end of 0..=100"
    )]
    Some(p.clamp(0.0, 100.0).round() as u32)
}

/// The peak and p95 with headroom.
pub fn need(peak: u64, sm_p95: Option<u32>, headroom_percent: u32) -> Need {
    let scaled = u128::from(peak) * u128::from(100 + headroom_percent);
    let memory = u64::try_from(scaled.div_ceil(100)).unwrap_or(u64::MAX);
    let sm = sm_p95.map(|p| f64::from(p) * f64::from(100 + headroom_percent) / 100.0);
    Need {
        memory,
        sm,
        peak,
        sm_p95,
    }
}

#[cfg(test)]
mod tests;
