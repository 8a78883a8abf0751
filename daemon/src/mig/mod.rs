//! TEMPORARY stand-in for the MIG planner being written on branch work/planner;
//! replaced by it at merge. First-fit, largest first.

use crate::gpu::{MigProfile, Placement};

/// A layout that cannot be placed.
#[derive(Debug, thiserror::Error)]
#[error("no free placement for {0}")]
pub struct PlanError(String);

/// Places `wanted` around `occupied`.
pub fn plan_layout(
    _profiles: &[MigProfile],
    occupied: &[(u32, Placement)],
    wanted: &[&MigProfile],
) -> Result<Vec<(u32, Placement)>, PlanError> {
    let mut taken: Vec<Placement> = occupied.iter().map(|(_, p)| *p).collect();
    let mut order: Vec<&&MigProfile> = wanted.iter().collect();
    order.sort_by_key(|p| std::cmp::Reverse(p.memory_slices));
    let mut out = Vec::new();
    for p in order {
        let at = p
            .placements
            .iter()
            .find(|pl| !taken.iter().any(|t| t.overlaps(**pl)))
            .ok_or_else(|| PlanError(p.name.clone()))?;
        taken.push(*at);
        out.push((p.id, *at));
    }
    Ok(out)
}
