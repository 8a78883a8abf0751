//! Test fixtures: geometries from the simulator's tables, layouts by name, and
//! the enumeration of every reachable state of a GPU.

use crate::gpu::Placement;
use crate::gpu::sim::SimModel;
use crate::mig::{MigGeometry, Occupancy, Occupant, Ownership, TargetInstance};

pub(super) fn geometry(model: SimModel) -> MigGeometry {
    let profiles = model.spec().mig_profiles();
    MigGeometry::new(profiles).expect("simulator tables are valid")
}

pub(super) fn at(start: u32, size: u32) -> Placement {
    Placement { start, size }
}

/// A layout of `(profile name, start)` instances with gi ids 1.. and one owner.
pub(super) fn layout<'g>(
    geometry: &'g MigGeometry,
    instances: &[(&str, u32)],
    ownership: Ownership,
) -> Occupancy<'g> {
    let occupants = instances
        .iter()
        .zip(1..)
        .map(|(&(name, start), gi_id)| {
            let profile = geometry.profile(name).expect("known profile");
            Occupant {
                gi_id,
                profile_id: profile.id,
                placement: at(start, profile.memory_slices),
                ownership,
            }
        })
        .collect();
    Occupancy::new(geometry, occupants).expect("legal layout")
}

/// A target instance by profile name and start.
pub(super) fn target(geometry: &MigGeometry, name: &str, start: u32) -> TargetInstance {
    let profile = geometry.profile(name).expect("known profile");
    TargetInstance {
        profile_id: profile.id,
        placement: at(start, profile.memory_slices),
    }
}

/// Every reachable state of a GPU: each set of instances NVML would let exist
/// together (allowed placements, no overlap, max counts, one "+me", compute
/// slices), once each, the empty GPU included.
pub(super) fn reachable_states(geometry: &MigGeometry) -> Vec<Vec<TargetInstance>> {
    let pairs: Vec<TargetInstance> = geometry
        .profiles()
        .iter()
        .flat_map(|p| {
            p.placements.iter().map(|&placement| TargetInstance {
                profile_id: p.id,
                placement,
            })
        })
        .collect();
    let mut states = Vec::new();
    let mut current = Occupancy::empty(geometry);
    extend(&pairs, 0, &mut current, &mut Vec::new(), &mut states);
    states
}

fn extend(
    pairs: &[TargetInstance],
    from: usize,
    layout: &mut Occupancy<'_>,
    chosen: &mut Vec<TargetInstance>,
    states: &mut Vec<Vec<TargetInstance>>,
) {
    states.push(chosen.clone());
    for (i, pair) in pairs.iter().enumerate().skip(from) {
        let gi_id = u32::try_from(chosen.len()).expect("small") + 1;
        let occupant = Occupant {
            gi_id,
            profile_id: pair.profile_id,
            placement: pair.placement,
            ownership: Ownership::Ours,
        };
        if layout.insert(occupant).is_ok() {
            chosen.push(*pair);
            extend(pairs, i + 1, layout, chosen, states);
            chosen.pop();
            layout.remove(gi_id);
        }
    }
}

/// `state` as a layout whose owners follow `owner(i)` for instance i.
pub(super) fn owned<'g>(
    geometry: &'g MigGeometry,
    state: &[TargetInstance],
    owner: impl Fn(usize) -> Ownership,
) -> Occupancy<'g> {
    let occupants = state
        .iter()
        .enumerate()
        .map(|(i, t)| Occupant {
            gi_id: u32::try_from(i).expect("small") + 100,
            profile_id: t.profile_id,
            placement: t.placement,
            ownership: owner(i),
        })
        .collect();
    Occupancy::new(geometry, occupants).expect("reachable state is legal")
}
