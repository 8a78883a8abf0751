//! The candidate forms of steps 3–6 and their cost: MIG profiles, MPS
//! shares and time-slices, each checked against the need. Pure.

use gpuslice_quantity::show::size;

use super::reason::percent;
use super::{CurrentForm, Form, GpuModel, Need, Offer};
use crate::gpu::MigProfile;

const GIB: u64 = 1 << 30;

/// Slice counts of a profile table: (memory slices, compute slices).
fn geometry(profiles: &[MigProfile]) -> (u32, u32) {
    let compute = profiles.iter().map(|p| p.compute_slices).max().unwrap_or(0);
    (crate::gpu::memory_slices(profiles), compute)
}

fn ratio(part: u32, whole: u32) -> f64 {
    if whole == 0 {
        1.0
    } else {
        f64::from(part) / f64::from(whole)
    }
}

fn fraction(part: u64, whole: u64) -> f64 {
    #[expect(clippy::cast_precision_loss, reason = "a cost, compared only")]
    let f = if whole == 0 {
        1.0
    } else {
        part as f64 / whole as f64
    };
    f
}

/// The smallest profile of `profiles` the need fits: memory at least the
/// need, compute slices covering the SM need (or, SM unknown, at least the
/// current profile's, all of them for a whole GPU); `+me` only when the
/// claim holds a `+me` profile now.
pub fn smallest_mig_fit<'a>(
    profiles: &'a [MigProfile],
    need: &Need,
    current: &CurrentForm,
) -> Option<&'a MigProfile> {
    let (_, compute_total) = geometry(profiles);
    let (current_compute, media) = match current {
        CurrentForm::Mig { profile } => (
            profiles
                .iter()
                .find(|p| &p.name == profile)
                .map_or(compute_total, |p| p.compute_slices),
            profile.ends_with("+me"),
        ),
        _ => (compute_total, false),
    };
    profiles
        .iter()
        .filter(|p| media || !p.media_extensions())
        .filter(|p| p.memory_bytes >= need.memory)
        .filter(|p| match need.sm {
            Some(sm) => ratio(p.compute_slices, compute_total) * 100.0 >= sm,
            None => p.compute_slices >= current_compute,
        })
        .min_by_key(|p| {
            (
                p.memory_slices,
                p.compute_slices,
                p.memory_bytes,
                p.name.clone(),
            )
        })
}

/// The cost of holding `profile`: the larger of its memory and compute
/// fraction.
fn mig_cost(profiles: &[MigProfile], profile: &MigProfile) -> f64 {
    let (memory, compute) = geometry(profiles);
    ratio(profile.memory_slices, memory).max(ratio(profile.compute_slices, compute))
}

/// The cost of the current form.
fn current_cost(current: &CurrentForm, model: &GpuModel<'_>) -> f64 {
    match current {
        CurrentForm::Whole => 1.0,
        CurrentForm::Mig { profile } => model
            .mig_profiles
            .iter()
            .find(|p| &p.name == profile)
            .map_or(1.0, |p| mig_cost(model.mig_profiles, p)),
        CurrentForm::Mps {
            memory_bytes,
            thread_percentage,
        } => {
            let memory = fraction(
                memory_bytes.unwrap_or(model.memory_bytes),
                model.memory_bytes,
            );
            memory.max(ratio(thread_percentage.unwrap_or(100), 100))
        }
        CurrentForm::TimeSlicing { sharers } => 1.0 / f64::from((*sharers).max(1)),
    }
}

/// The MPS share the need fits on this model, with its cost.
fn mps(need: &Need, model: &GpuModel<'_>) -> Option<(Form, f64)> {
    let sm = need.sm?;
    let memory_bytes = need.memory.div_ceil(GIB).max(1).checked_mul(GIB)?;
    if memory_bytes > model.memory_bytes {
        return None;
    }
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "clamped to 1..=20 first"
    )]
    let steps = (sm / 5.0).ceil().clamp(1.0, 20.0) as u32;
    let thread_percentage = steps * 5;
    let cost = fraction(memory_bytes, model.memory_bytes).max(ratio(thread_percentage, 100));
    Some((
        Form::Mps {
            memory_bytes,
            thread_percentage,
        },
        cost,
    ))
}

/// The time-slice the need fits on this model, with its cost.
fn timeslice(need: &Need, model: &GpuModel<'_>) -> Option<(Form, f64)> {
    let sm = need.sm?;
    let by_memory = model.memory_bytes / need.memory.max(1);
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "clamped to 0..=100 first"
    )]
    let by_sm = (100.0 / sm.max(1.0)).floor().clamp(0.0, 100.0) as u64;
    let sharers = u32::try_from(by_memory.min(by_sm)).ok()?;
    if sharers < 2 {
        return None;
    }
    let memory_bytes = model.memory_bytes / u64::from(sharers);
    Some((
        Form::TimeSlicing {
            sharers,
            memory_bytes,
        },
        1.0 / f64::from(sharers),
    ))
}

/// Steps 3–6: the first offered form that fits and costs less than now.
pub(super) fn choose(
    need: &Need,
    current: &CurrentForm,
    model: &GpuModel<'_>,
    offer: Offer,
    smallest: Option<&MigProfile>,
) -> (Form, String) {
    let now = current_cost(current, model);
    let fits = super::reason::fits(need);
    let mig = smallest.filter(|_| offer.mig).map(|p| {
        let form = Form::Mig {
            profile: p.name.clone(),
            memory_bytes: p.memory_bytes,
        };
        (form, mig_cost(model.mig_profiles, p))
    });
    let candidates = [
        mig,
        mps(need, model).filter(|_| offer.mps),
        timeslice(need, model).filter(|_| offer.timeslice),
    ];
    let chosen = candidates
        .into_iter()
        .flatten()
        .find(|(_, cost)| *cost < now);
    let mig_note = match (smallest, offer.mig) {
        (Some(p), false) => format!(
            "; would fit {}, but no {} runs MIG on this node",
            p.name, model.product_name
        ),
        _ => String::new(),
    };
    match chosen {
        Some((form, _)) => {
            let what = match &form {
                Form::Mig {
                    profile,
                    memory_bytes,
                } => {
                    format!("MIG {profile} ({})", size(*memory_bytes))
                }
                Form::Mps {
                    memory_bytes,
                    thread_percentage,
                } => format!(
                    "an MPS share of {} and {thread_percentage}% threads",
                    size(*memory_bytes)
                ),
                Form::TimeSlicing { sharers, .. } => {
                    format!("a time-sliced GPU shared with up to {} others", sharers - 1)
                }
                Form::Abstain | Form::Keep | Form::GiveBack => String::new(),
            };
            (form, format!("{fits} fit {what}{mig_note}"))
        }
        None => (
            Form::Keep,
            format!(
                "{fits}: already the smallest fitting form ({} of the GPU){mig_note}",
                percent(now * 100.0)
            ),
        ),
    }
}
