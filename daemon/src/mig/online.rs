//! Online placement policies: where one request goes on its own, with no
//! wanted set in view. Used only by the MIG bench (daemon/benches/mig, which
//! compares them with [`super::plan_layout`], the static split and the
//! optimum) and by the tests; the daemon places instances with
//! [`super::plan_layout`].
//!
//! [`choose_placement`]: among the legal placements of the profile, the one
//! that leaves the largest [`Score`] (the most future requests placeable,
//! largest profiles first); ties go to the highest start, so small instances
//! pack down from the top end and keep slices 0..4, the only home of a 4g and
//! one of two homes of a 3g, whole for longest (the driver's own choice for a
//! lone 1g is 6:1 too). [`first_fit`]: the lowest legal start, the baseline.
//! [`choose_gpu`]: the GPU too, for callers that pick among several. No I/O.

use crate::gpu::Placement;

use super::capacity::Score;
use super::error::MigPlanError;
use super::occupancy::Occupancy;

/// Where a new instance of `profile` should go on this GPU. Errors say why
/// none can: unknown profile, "+me" already used, max count reached, or no
/// free placement (naming what occupies the GPU).
pub fn choose_placement(
    occupancy: &Occupancy<'_>,
    profile: &str,
) -> Result<Placement, MigPlanError> {
    let scored = scored_candidates(occupancy, profile)?;
    scored
        .into_iter()
        .max_by_key(|&(placement, score)| (score, placement.start))
        .map(|(placement, _)| placement)
        .ok_or_else(|| no_room(occupancy, profile))
}

/// The lowest-start legal placement: what a naive allocator does. For
/// benchmarks and tests; the daemon uses [`choose_placement`].
pub fn first_fit(occupancy: &Occupancy<'_>, profile: &str) -> Result<Placement, MigPlanError> {
    legal_placements(occupancy, profile)?
        .into_iter()
        .min_by_key(|p| p.start)
        .ok_or_else(|| no_room(occupancy, profile))
}

/// Every placement where a new instance of `profile` could be created now,
/// ascending by start; empty when only occupied slices stand in the way.
/// Errors for an unknown profile, "+me" already used, max count reached, or
/// compute slices used up.
pub fn legal_placements(
    occupancy: &Occupancy<'_>,
    profile: &str,
) -> Result<Vec<Placement>, MigPlanError> {
    let geometry = occupancy.geometry();
    let position = geometry.position(profile)?;
    let usage = occupancy.usage();
    if let Some(refusal) = usage.refusal(geometry, position) {
        return Err(occupancy.refusal_error(position, refusal));
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
    occupancy: &Occupancy<'_>,
    profile: &str,
) -> Result<Vec<(Placement, Score)>, MigPlanError> {
    let geometry = occupancy.geometry();
    let position = geometry.position(profile)?;
    let usage = occupancy.usage();
    let mut scored = Vec::new();
    for placement in legal_placements(occupancy, profile)? {
        let mask = geometry.mask_of(position, placement)?;
        scored.push((
            placement,
            Score::of(geometry, &usage.with(geometry, position, mask)),
        ));
    }
    Ok(scored)
}

/// Which GPU (index into `occupancies`) and placement a request should take when
/// the caller picks the GPU too: the GPU whose remaining capacity drops least,
/// compared largest profile first (so a 1g goes to a GPU already broken
/// rather than one that could still take a 7g), ties to the lowest index.
/// Meant for GPUs of one model. `None` when no GPU can take it.
pub fn choose_gpu(occupancies: &[Occupancy<'_>], profile: &str) -> Option<(usize, Placement)> {
    let mut best: Option<(Vec<u8>, usize, Placement)> = None;
    for (index, occupancy) in occupancies.iter().enumerate() {
        let Ok(placement) = choose_placement(occupancy, profile) else {
            continue;
        };
        let before = occupancy.score();
        let after = scored_candidates(occupancy, profile)
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

fn no_room(occupancy: &Occupancy<'_>, profile: &str) -> MigPlanError {
    match occupancy.geometry().position(profile) {
        Ok(position) => occupancy.no_room(position),
        Err(unknown) => unknown,
    }
}
