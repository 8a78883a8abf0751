//! A GPU's MIG geometry as the planner sees it: its profile table, the number
//! of memory and compute slices (derived from the profiles), and each
//! placement as a memory-slice bit mask. Built once per GPU model from what the
//! backend reports; read-only afterwards. No I/O.

use crate::gpu::{MediaEngines, MigProfile, Placement};

use super::error::MigPlanError;

/// Most profiles one GPU may have (NVML defines 18 profile indices).
pub(super) const MAX_PROFILES: usize = 24;
/// Most memory slices the bit masks can hold.
const MAX_MEMORY_SLICES: u32 = 32;

/// One profile's table row, preprocessed for the planner.
#[derive(Debug, Clone)]
pub(super) struct ProfileRow {
    /// Memory-slice mask of each placement, ascending by end slice.
    pub(super) masks: Vec<(Placement, u32)>,
    /// The media engines its instances take.
    pub(super) media: MediaEngines,
}

/// A GPU's MIG profiles and slice counts, ready for planning.
#[derive(Debug, Clone)]
pub struct MigGeometry {
    profiles: Vec<MigProfile>,
    rows: Vec<ProfileRow>,
    /// Profile positions, largest first: the order capacities are compared in.
    priority: Vec<usize>,
    memory_slices: u32,
    compute_slices: u32,
}

impl MigGeometry {
    /// Takes a GPU's profile table (as `GpuBackend::mig_profiles` returns it).
    /// The memory-slice count is the end of the furthest placement; the
    /// compute-slice count is the largest profile's.
    pub fn new(profiles: Vec<MigProfile>) -> Result<Self, MigPlanError> {
        validate(&profiles)?;
        let rows = profiles.iter().map(row).collect::<Vec<_>>();
        let memory_slices = profiles
            .iter()
            .flat_map(|p| p.placements.iter().map(|pl| pl.start + pl.size))
            .max()
            .unwrap_or(0);
        let compute_slices = profiles.iter().map(|p| p.compute_slices).max().unwrap_or(0);
        let mut priority: Vec<usize> = (0..profiles.len()).collect();
        priority.sort_by_key(|&i| {
            let p = &profiles[i];
            let larger_first = (
                std::cmp::Reverse(p.memory_slices),
                std::cmp::Reverse(p.compute_slices),
            );
            (larger_first, p.media_extensions(), p.id)
        });
        Ok(Self {
            profiles,
            rows,
            priority,
            memory_slices,
            compute_slices,
        })
    }

    /// The profile table, in the order given.
    pub fn profiles(&self) -> &[MigProfile] {
        &self.profiles
    }

    /// Memory slices of the GPU (8 on A100/H100/H200/B200, 4 on A30 and
    /// the RTX PRO 6000).
    pub fn memory_slices(&self) -> u32 {
        self.memory_slices
    }

    /// Compute slices of the GPU (7 on A100/H100/H200/B200, 4 on A30 and
    /// the RTX PRO 6000).
    pub fn compute_slices(&self) -> u32 {
        self.compute_slices
    }

    /// The profile with this name, e.g. "3g.40gb".
    pub fn profile(&self, name: &str) -> Result<&MigProfile, MigPlanError> {
        self.position(name).map(|i| &self.profiles[i])
    }

    /// The profile with this NVML profile ID.
    pub fn profile_by_id(&self, id: u32) -> Result<&MigProfile, MigPlanError> {
        self.position_by_id(id).map(|i| &self.profiles[i])
    }

    /// Profile names, largest first: the order [`super::Score`] compares in.
    pub fn names_by_priority(&self) -> Vec<&str> {
        self.priority
            .iter()
            .map(|&i| self.profiles[i].name.as_str())
            .collect()
    }

    pub(super) fn position(&self, name: &str) -> Result<usize, MigPlanError> {
        self.profiles
            .iter()
            .position(|p| p.name == name)
            .ok_or_else(|| MigPlanError::UnknownProfile {
                name: name.to_owned(),
                valid: self.names_by_priority().join(", "),
            })
    }

    pub(super) fn position_by_id(&self, id: u32) -> Result<usize, MigPlanError> {
        self.profiles
            .iter()
            .position(|p| p.id == id)
            .ok_or_else(|| MigPlanError::UnknownProfileId {
                id,
                valid: self
                    .profiles
                    .iter()
                    .map(|p| format!("{}={}", p.name, p.id))
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }

    pub(super) fn row(&self, position: usize) -> &ProfileRow {
        &self.rows[position]
    }

    pub(super) fn priority(&self) -> &[usize] {
        &self.priority
    }

    /// The mask of `placement` if the profile at `position` allows it.
    pub(super) fn mask_of(
        &self,
        position: usize,
        placement: Placement,
    ) -> Result<u32, MigPlanError> {
        self.rows[position]
            .masks
            .iter()
            .find(|(p, _)| *p == placement)
            .map(|&(_, mask)| mask)
            .ok_or_else(|| {
                let profile = &self.profiles[position];
                MigPlanError::PlacementNotAllowed {
                    profile: profile.name.clone(),
                    placement: format_placement(placement),
                    allowed: format_placements(&profile.placements),
                }
            })
    }
}

/// `start:size`, as `nvidia-smi mig -lgipp` prints a placement.
pub(super) fn format_placement(placement: Placement) -> String {
    format!("{}:{}", placement.start, placement.size)
}

/// Placements as `start:size`, comma separated.
pub(super) fn format_placements(placements: &[Placement]) -> String {
    placements
        .iter()
        .map(|&p| format_placement(p))
        .collect::<Vec<_>>()
        .join(", ")
}

fn validate(profiles: &[MigProfile]) -> Result<(), MigPlanError> {
    let invalid = |reason: String| Err(MigPlanError::InvalidProfiles { reason });
    if profiles.is_empty() {
        return invalid("the GPU reports no MIG profiles".to_owned());
    }
    if profiles.len() > MAX_PROFILES {
        return invalid(format!(
            "{} profiles, at most {MAX_PROFILES} supported",
            profiles.len()
        ));
    }
    for (i, p) in profiles.iter().enumerate() {
        if profiles[..i]
            .iter()
            .any(|q| q.id == p.id || q.name == p.name)
        {
            return invalid(format!("profile {} (id {}) appears twice", p.name, p.id));
        }
        if u8::try_from(p.max_count).is_err() {
            return invalid(format!("{} has max count {}", p.name, p.max_count));
        }
        for pl in &p.placements {
            if pl.size == 0
                || pl
                    .start
                    .checked_add(pl.size)
                    .is_none_or(|end| end > MAX_MEMORY_SLICES)
            {
                return invalid(format!(
                    "{} placement {} is empty or beyond {MAX_MEMORY_SLICES} memory slices",
                    p.name,
                    format_placement(*pl)
                ));
            }
        }
    }
    Ok(())
}

fn row(profile: &MigProfile) -> ProfileRow {
    let mut masks: Vec<(Placement, u32)> = profile
        .placements
        .iter()
        .map(|&p| (p, p.slices().fold(0u32, |m, s| m | (1u32 << s))))
        .collect();
    masks.sort_by_key(|(p, _)| (p.start + p.size, p.start));
    ProfileRow {
        masks,
        media: profile.media(),
    }
}
