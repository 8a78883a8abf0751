//! Geometry diff: the fewest destroy and create steps that turn a GPU's
//! instances into a target layout. Instances that already match (same
//! profile, same placement) stay; instances held by a claim are never touched
//! (a target without them is an error naming them); foreign instances are left
//! alone and reported unless the caller allows destroying them. Every destroy
//! comes before every create, so a create never meets an instance it overlaps
//! and no step breaks a max count or the one "+me" rule on the way.
//! No I/O: the claim engine runs the steps.

use std::collections::HashSet;

use crate::gpu::Placement;

use super::error::MigPlanError;
use super::geometry::format_placement;
use super::occupancy::{Occupancy, Occupant, Ownership};

/// One GPU instance of a target layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TargetInstance {
    /// Its NVML profile ID.
    pub profile_id: u32,
    /// Where it sits.
    pub placement: Placement,
}

impl From<&Occupant> for TargetInstance {
    fn from(occupant: &Occupant) -> Self {
        Self {
            profile_id: occupant.profile_id,
            placement: occupant.placement,
        }
    }
}

/// One hardware step of a geometry change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Step {
    /// Destroy the GPU instance with this id (its compute instances first).
    Destroy {
        /// The GPU instance id.
        gi_id: u32,
    },
    /// Create a GPU instance (and its full-size compute instance) here.
    Create {
        /// The NVML profile ID.
        profile_id: u32,
        /// Where, as `nvmlDeviceCreateGpuInstanceWithPlacement` takes it.
        placement: Placement,
    },
}

/// What may happen to instances gpuslice did not create.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ForeignPolicy {
    /// Leave them where they are; a target that needs their room is an error.
    #[default]
    Keep,
    /// Treat them like gpuslice's own idle instances (an operator's choice).
    Destroy,
}

/// The steps of a geometry change and what it left alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeometryDiff {
    /// Destroys (ascending GPU-instance id), then creates (largest profile first).
    pub steps: Vec<Step>,
    /// Foreign instances not in the target that stay, for the caller to report.
    pub foreign_left: Vec<Occupant>,
}

/// The steps from `occupancy` to `target`. The target must be a valid layout on
/// its own (known profiles, allowed placements, no overlap, max counts, one
/// "+me"), must keep every held instance, and under [`ForeignPolicy::Keep`]
/// must fit around the foreign instances it does not list.
pub fn diff(
    occupancy: &Occupancy<'_>,
    target: &[TargetInstance],
    foreign: ForeignPolicy,
) -> Result<GeometryDiff, MigPlanError> {
    let mut target_occupancy = validate_target(occupancy, target)?;
    let wanted: HashSet<TargetInstance> = target.iter().copied().collect();
    let current: HashSet<TargetInstance> = occupancy
        .occupants()
        .iter()
        .map(TargetInstance::from)
        .collect();
    let leaving: Vec<&Occupant> = occupancy
        .occupants()
        .iter()
        .filter(|o| !wanted.contains(&TargetInstance::from(*o)))
        .collect();
    let held: Vec<String> = leaving
        .iter()
        .filter(|o| o.ownership == Ownership::Held)
        .map(|o| occupancy.describe(o))
        .collect();
    if !held.is_empty() {
        return Err(MigPlanError::HeldInstanceRemoved {
            instances: held.join(", "),
        });
    }
    let stays =
        |o: &&&Occupant| o.ownership == Ownership::Foreign && foreign == ForeignPolicy::Keep;
    let foreign_left: Vec<Occupant> = leaving.iter().filter(stays).map(|o| **o).collect();
    for occupant in &foreign_left {
        target_occupancy
            .insert(*occupant)
            .map_err(|_| MigPlanError::ForeignInstanceInTheWay {
                instance: occupancy.describe(occupant),
            })?;
    }
    let mut destroys: Vec<u32> = leaving
        .iter()
        .filter(|o| !stays(o))
        .map(|o| o.gi_id)
        .collect();
    destroys.sort_unstable();
    let mut creates: Vec<TargetInstance> = target
        .iter()
        .filter(|t| !current.contains(t))
        .copied()
        .collect();
    let names = occupancy.geometry().names_by_priority();
    creates.sort_by_key(|t| {
        let rank = occupancy
            .geometry()
            .profile_by_id(t.profile_id)
            .map_or(usize::MAX, |p| {
                names
                    .iter()
                    .position(|n| *n == p.name)
                    .unwrap_or(usize::MAX)
            });
        (rank, t.placement.start)
    });
    let steps = destroys
        .into_iter()
        .map(|gi_id| Step::Destroy { gi_id })
        .chain(creates.into_iter().map(|t| Step::Create {
            profile_id: t.profile_id,
            placement: t.placement,
        }))
        .collect();
    Ok(GeometryDiff {
        steps,
        foreign_left,
    })
}

/// The target as an occupancy of its own, or the first rule it breaks.
fn validate_target<'g>(
    occupancy: &Occupancy<'g>,
    target: &[TargetInstance],
) -> Result<Occupancy<'g>, MigPlanError> {
    let geometry = occupancy.geometry();
    let mut target_occupancy = Occupancy::empty(geometry);
    for (i, t) in target.iter().enumerate() {
        let name = &geometry.profile_by_id(t.profile_id)?.name;
        if let Some(other) = target[..i]
            .iter()
            .find(|o| o.placement.overlaps(t.placement))
        {
            let other_name = &geometry.profile_by_id(other.profile_id)?.name;
            return Err(MigPlanError::Overlap {
                first: format!(
                    "target {other_name} at {}",
                    format_placement(other.placement)
                ),
                second: format!("target {name} at {}", format_placement(t.placement)),
            });
        }
        target_occupancy.insert(Occupant {
            gi_id: u32::try_from(i).unwrap_or(u32::MAX),
            profile_id: t.profile_id,
            placement: t.placement,
            ownership: Ownership::Ours,
        })?;
    }
    Ok(target_occupancy)
}
