//! The layout offered on a GPU in layout mode: the configured profiles placed
//! by the planner ([`crate::mig::plan_layout`]), with slices that claims hold
//! kept where they are, slices made ahead reused where they sit, and every
//! other instance treated as an obstacle.

use crate::gpu::{GpuInstance, MigProfile, Placement};
use crate::mig::{ForeignPolicy, MigGeometry, Occupancy, Occupant, Ownership, plan_layout};

/// The (profile id, placement) pairs to offer for `wanted` profile names on a
/// GPU with `instances`, whose owners `owner` tells; and a problem line when
/// the layout cannot be offered as configured.
pub fn plan_offer(
    profiles: &[MigProfile],
    instances: &[GpuInstance],
    owner: &dyn Fn(&GpuInstance) -> Ownership,
    wanted: &[String],
) -> (Vec<(u32, Placement)>, Vec<String>) {
    let geometry = match MigGeometry::new(profiles.to_vec()) {
        Ok(g) => g,
        Err(err) => return (Vec::new(), vec![format!("MIG profiles unusable: {err}")]),
    };
    let names: Vec<&str> = wanted.iter().map(String::as_str).collect();
    let attempt = |hold: bool| {
        let occupants = instances
            .iter()
            .map(|gi| {
                let ownership = match owner(gi) {
                    Ownership::Held if !hold => Ownership::Foreign,
                    other => other,
                };
                Occupant::from_instance(gi, ownership)
            })
            .collect();
        let occupancy = Occupancy::new(&geometry, occupants)?;
        plan_layout(&occupancy, &names, ForeignPolicy::Keep)
    };
    // Held slices stay in the offer; if the config no longer wants one of
    // them, offer what fits around them instead and say so.
    let planned = attempt(true)
        .map(|t| (t, None))
        .or_else(|first| attempt(false).map(|t| (t, Some(first.to_string()))));
    match planned {
        Ok((targets, note)) => (
            targets
                .into_iter()
                .map(|t| (t.profile_id, t.placement))
                .collect(),
            note.into_iter()
                .map(|n| format!("layout kept around held slices: {n}"))
                .collect(),
        ),
        Err(err) => (Vec::new(), vec![format!("layout cannot be offered: {err}")]),
    }
}
