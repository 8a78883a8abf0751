//! Placement choice for one request: among the legal placements of the
//! profile, the one that leaves the largest [`Score`] (the most future
//! requests placeable, largest profiles first); ties go to the highest start,
//! so small instances pack down from the top end and keep slices 0..4, the
//! only home of a 4g and one of two homes of a 3g, whole for longest (the
//! driver's own choice for a lone 1g is 6:1 too). [`first_fit`] is here for
//! comparison only. Also [`choose_gpu`], for callers that pick the GPU too.
//! No I/O.

use crate::gpu::Placement;

use super::capacity::Score;
use super::error::MigPlanError;
use super::occupancy::MigLayout;

/// Where a new instance of `profile` should go on this GPU. Errors say why
/// none can: unknown profile, "+me" already used, max count reached, or no
/// free placement (naming what occupies the GPU).
pub fn choose_placement(layout: &MigLayout<'_>, profile: &str) -> Result<Placement, MigPlanError> {
    let scored = scored_candidates(layout, profile)?;
    scored
        .into_iter()
        .max_by_key(|&(placement, score)| (score, placement.start))
        .map(|(placement, _)| placement)
        .ok_or_else(|| no_room(layout, profile))
}

/// The lowest-start legal placement: what a naive allocator does. For
/// benchmarks and tests; the daemon uses [`choose_placement`].
pub fn first_fit(layout: &MigLayout<'_>, profile: &str) -> Result<Placement, MigPlanError> {
    legal_placements(layout, profile)?
        .into_iter()
        .min_by_key(|p| p.start)
        .ok_or_else(|| no_room(layout, profile))
}

/// Every placement where a new instance of `profile` could be created now,
/// ascending by start; empty when only occupied slices stand in the way.
/// Errors for an unknown profile, "+me" already used, max count reached, or
/// compute slices used up.
pub fn legal_placements(
    layout: &MigLayout<'_>,
    profile: &str,
) -> Result<Vec<Placement>, MigPlanError> {
    let geometry = layout.geometry();
    let position = geometry.position(profile)?;
    let usage = layout.usage();
    if let Some(refusal) = usage.refusal(geometry, position) {
        return Err(layout.refusal_error(position, refusal));
    }
    let mut free: Vec<Placement> = geometry
        .row(position)
        .masks
        .iter()
        .filter(|&&(_, mask)| usage.mask & mask == 0)
        .map(|&(placement, _)| placement)
        .collect();
    free.sort_by_key(|p| p.start);
    Ok(free)
}

/// The score the GPU would have after creating `profile` at each legal placement.
pub fn scored_candidates(
    layout: &MigLayout<'_>,
    profile: &str,
) -> Result<Vec<(Placement, Score)>, MigPlanError> {
    let geometry = layout.geometry();
    let position = geometry.position(profile)?;
    let usage = layout.usage();
    let mut scored = Vec::new();
    for placement in legal_placements(layout, profile)? {
        let mask = geometry.mask_of(position, placement)?;
        scored.push((
            placement,
            Score::of(geometry, &usage.with(geometry, position, mask)),
        ));
    }
    Ok(scored)
}

/// Which GPU (index into `layouts`) and placement a request should take when
/// the caller picks the GPU too: the GPU whose remaining capacity drops least,
/// compared largest profile first (so a 1g goes to a GPU already broken
/// rather than one that could still take a 7g), ties to the lowest index.
/// Meant for GPUs of one model. `None` when no GPU can take it.
pub fn choose_gpu(layouts: &[MigLayout<'_>], profile: &str) -> Option<(usize, Placement)> {
    let mut best: Option<(Vec<u8>, usize, Placement)> = None;
    for (index, layout) in layouts.iter().enumerate() {
        let Ok(placement) = choose_placement(layout, profile) else {
            continue;
        };
        let before = layout.score();
        let after = scored_candidates(layout, profile)
            .ok()?
            .into_iter()
            .find(|(p, _)| *p == placement)
            .map(|(_, score)| score)?;
        let loss: Vec<u8> = before
            .remaining()
            .iter()
            .zip(after.remaining())
            .map(|(b, a)| b.saturating_sub(*a))
            .collect();
        if best
            .as_ref()
            .is_none_or(|(best_loss, _, _)| loss < *best_loss)
        {
            best = Some((loss, index, placement));
        }
    }
    best.map(|(_, index, placement)| (index, placement))
}

fn no_room(layout: &MigLayout<'_>, profile: &str) -> MigPlanError {
    match layout.geometry().position(profile) {
        Ok(position) => layout.no_room(position),
        Err(unknown) => unknown,
    }
}
