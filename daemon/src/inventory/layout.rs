//! The layout offered on a GPU in layout mode: the configured profiles, with
//! slices that already exist kept where they are and the rest placed by the
//! planner around everything that occupies the GPU.

use crate::gpu::{MigProfile, Placement};

/// A GPU instance that exists now (ours or not).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Existing {
    /// Its profile ID.
    pub profile_id: u32,
    /// Where it sits.
    pub placement: Placement,
}

/// The (profile id, placement) pairs to offer for `wanted` profile names,
/// and a problem line for each entry that cannot be offered.
pub fn plan_offer(
    profiles: &[MigProfile],
    existing: &[Existing],
    wanted: &[String],
) -> (Vec<(u32, Placement)>, Vec<String>) {
    let mut problems = Vec::new();
    let mut kept: Vec<bool> = vec![false; existing.len()];
    let mut offer = Vec::new();
    let mut to_place = Vec::new();
    for name in wanted {
        let Some(profile) = profiles.iter().find(|p| &p.name == name) else {
            let names: Vec<&str> = profiles.iter().map(|p| p.name.as_str()).collect();
            problems.push(format!(
                "layout profile {name:?} is not offered by this GPU (it offers {})",
                names.join(", ")
            ));
            continue;
        };
        let reuse = existing
            .iter()
            .zip(kept.iter_mut())
            .find(|(e, k)| !**k && e.profile_id == profile.id);
        match reuse {
            Some((e, k)) => {
                *k = true;
                offer.push((profile.id, e.placement));
            }
            None => to_place.push(profile),
        }
    }
    let occupied: Vec<(u32, Placement)> = existing
        .iter()
        .map(|e| (e.profile_id, e.placement))
        .collect();
    match crate::mig::plan_layout(profiles, &occupied, &to_place) {
        Ok(placed) => offer.extend(placed),
        Err(err) => problems.push(format!("layout does not fit: {err}")),
    }
    offer.sort_by_key(|(_, p)| *p);
    (offer, problems)
}
