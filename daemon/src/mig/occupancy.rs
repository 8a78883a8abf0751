//! The occupied side of one GPU: which GPU instances exist, where, and who
//! owns them (held by a claim, created by gpuslice and idle, or foreign), with
//! the NVML rules every new instance must pass: a placement from the
//! profile's table on free memory slices, the profile's max count, the media
//! engines (one "+me" instance per GPU; beside a "+me.all" only "-me" ones),
//! and no more compute slices than the GPU has.
//! No I/O: callers build it from `GpuBackend::gpu_instances` and their records.

use crate::gpu::{GpuInstance, MediaConflict, MediaEngines, MediaUse, Placement};

use super::capacity::Score;
use super::error::MigPlanError;
use super::geometry::{MAX_PROFILES, MigGeometry, format_placement};

/// Who owns a GPU instance, which decides what a geometry change may do to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ownership {
    /// A live claim uses it: never destroyed or moved.
    Held,
    /// gpuslice created it and no claim uses it: free to destroy or reuse.
    Ours,
    /// gpuslice did not create it: left alone unless the caller says otherwise.
    Foreign,
}

/// One GPU instance as the planner sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Occupant {
    /// The GPU instance id (what a destroy takes).
    pub gi_id: u32,
    /// Its NVML profile ID.
    pub profile_id: u32,
    /// Where it sits.
    pub placement: Placement,
    /// Who owns it.
    pub ownership: Ownership,
}

impl Occupant {
    /// The planner's view of an instance the backend listed.
    pub fn from_instance(instance: &GpuInstance, ownership: Ownership) -> Self {
        Self {
            gi_id: instance.id,
            profile_id: instance.profile_id,
            placement: instance.placement,
            ownership,
        }
    }
}

/// What the occupants use up, in the form the rules and scores read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct Usage {
    /// Occupied memory slices, one bit each.
    pub(super) mask: u32,
    /// Compute slices in use.
    pub(super) compute: u32,
    /// The media engines the instances take.
    pub(super) media: MediaUse,
    /// Instances per profile position.
    pub(super) counts: [u8; MAX_PROFILES],
}

impl Usage {
    pub(super) const EMPTY: Usage = Usage {
        mask: 0,
        compute: 0,
        media: MediaUse::NONE,
        counts: [0; MAX_PROFILES],
    };

    /// Whether one more instance of `position` at `mask` passes every rule.
    pub(super) fn admits(&self, geometry: &MigGeometry, position: usize, mask: u32) -> bool {
        self.mask & mask == 0 && self.refusal(geometry, position).is_none()
    }

    /// The rule, other than free slices, that refuses one more `position`.
    pub(super) fn refusal(&self, geometry: &MigGeometry, position: usize) -> Option<Refusal> {
        let profile = &geometry.profiles()[position];
        if let Some(conflict) = self.media.refusal(geometry.row(position).media) {
            Some(Refusal::Media(conflict))
        } else if u32::from(self.counts[position]) >= profile.max_count {
            Some(Refusal::MaxCount)
        } else if self.compute + profile.compute_slices > geometry.compute_slices() {
            Some(Refusal::Compute)
        } else {
            None
        }
    }

    /// This usage with one more instance of `position` at `mask`.
    pub(super) fn with(&self, geometry: &MigGeometry, position: usize, mask: u32) -> Usage {
        let mut next = *self;
        next.mask |= mask;
        next.compute += geometry.profiles()[position].compute_slices;
        next.media = next.media.with(geometry.row(position).media);
        next.counts[position] = next.counts[position].saturating_add(1);
        next
    }
}

/// Why a rule other than free memory slices refuses an instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refusal {
    Media(MediaConflict),
    MaxCount,
    Compute,
}

/// One GPU's instances on its geometry; every instance passed the rules.
#[derive(Debug, Clone)]
pub struct Occupancy<'g> {
    geometry: &'g MigGeometry,
    occupants: Vec<Occupant>,
    usage: Usage,
}

impl<'g> Occupancy<'g> {
    /// A GPU with no instances.
    pub fn empty(geometry: &'g MigGeometry) -> Self {
        Self {
            geometry,
            occupants: Vec::new(),
            usage: Usage::EMPTY,
        }
    }

    /// A GPU holding `occupants`; fails on the first that breaks a rule.
    pub fn new(geometry: &'g MigGeometry, occupants: Vec<Occupant>) -> Result<Self, MigPlanError> {
        let mut occupancy = Self::empty(geometry);
        for occupant in occupants {
            occupancy.insert(occupant)?;
        }
        Ok(occupancy)
    }

    /// The geometry these instances live on.
    pub fn geometry(&self) -> &'g MigGeometry {
        self.geometry
    }

    /// The instances, in insertion order.
    pub fn occupants(&self) -> &[Occupant] {
        &self.occupants
    }

    /// Adds an instance, checking every rule a create would meet on NVML.
    pub fn insert(&mut self, occupant: Occupant) -> Result<(), MigPlanError> {
        let position = self.geometry.position_by_id(occupant.profile_id)?;
        let mask = self.geometry.mask_of(position, occupant.placement)?;
        let name = &self.geometry.profiles()[position].name;
        if let Some(other) = self
            .occupants
            .iter()
            .find(|o| o.placement.overlaps(occupant.placement))
        {
            return Err(MigPlanError::Overlap {
                first: self.describe(other),
                second: format!("{name} at {}", format_placement(occupant.placement)),
            });
        }
        if let Some(refusal) = self.usage.refusal(self.geometry, position) {
            return Err(self.refusal_error(position, refusal));
        }
        self.usage = self.usage.with(self.geometry, position, mask);
        self.occupants.push(occupant);
        Ok(())
    }

    /// Removes the instance with this GPU-instance id, returning it.
    pub fn remove(&mut self, gi_id: u32) -> Option<Occupant> {
        let index = self.occupants.iter().position(|o| o.gi_id == gi_id)?;
        let removed = self.occupants.remove(index);
        self.usage = Usage::EMPTY;
        for occupant in &self.occupants {
            // Every occupant passed these lookups when it was inserted.
            if let Ok(position) = self.geometry.position_by_id(occupant.profile_id)
                && let Ok(mask) = self.geometry.mask_of(position, occupant.placement)
            {
                self.usage = self.usage.with(self.geometry, position, mask);
            }
        }
        Some(removed)
    }

    /// How many future requests of each profile still fit (see [`Score`]).
    pub fn score(&self) -> Score {
        Score::of(self.geometry, &self.usage)
    }

    /// "3g.40gb at 4:4 (gi 2, held)": one instance, for messages.
    pub fn describe(&self, occupant: &Occupant) -> String {
        let name = self
            .geometry
            .profile_by_id(occupant.profile_id)
            .map_or_else(
                |_| format!("profile {}", occupant.profile_id),
                |p| p.name.clone(),
            );
        let owner = match occupant.ownership {
            Ownership::Held => "held by a claim",
            Ownership::Ours => "idle",
            Ownership::Foreign => "foreign",
        };
        format!(
            "{name} at {} (gi {}, {owner})",
            format_placement(occupant.placement),
            occupant.gi_id
        )
    }

    /// Every instance described, comma separated; "nothing" when empty.
    pub fn describe_all(&self) -> String {
        if self.occupants.is_empty() {
            return "no instances".to_owned();
        }
        let all: Vec<String> = self.occupants.iter().map(|o| self.describe(o)).collect();
        all.join(", ")
    }

    /// The slices in use (for the online policies, test and bench builds).
    #[cfg(any(test, feature = "testkit"))]
    pub(super) fn usage(&self) -> &Usage {
        &self.usage
    }

    /// The error for a rule other than free slices refusing `position`.
    pub(super) fn refusal_error(&self, position: usize, refusal: Refusal) -> MigPlanError {
        let profile = &self.geometry.profiles()[position];
        match refusal {
            Refusal::Media(conflict) => {
                let holder = |wanted: &dyn Fn(MediaEngines) -> bool| {
                    let holders: Vec<String> = (self.occupants.iter())
                        .filter(|o| {
                            self.geometry
                                .profile_by_id(o.profile_id)
                                .is_ok_and(|p| wanted(p.media()))
                        })
                        .map(|o| self.describe(o))
                        .collect();
                    if holders.is_empty() {
                        "another instance".to_owned()
                    } else {
                        holders.join(", ")
                    }
                };
                let profile = profile.name.clone();
                match conflict {
                    MediaConflict::ExtensionsTaken => MigPlanError::MediaExtensionsInUse {
                        profile,
                        holder: holder(&|m| m == MediaEngines::Extensions),
                    },
                    MediaConflict::AllTaken => MigPlanError::AllMediaEnginesTaken {
                        profile,
                        holder: holder(&|m| m == MediaEngines::All),
                    },
                    MediaConflict::HeldByOthers => MigPlanError::MediaEnginesInUse {
                        profile,
                        holders: holder(&|m| m != MediaEngines::None),
                    },
                }
            }
            Refusal::MaxCount => MigPlanError::MaxCountReached {
                profile: profile.name.clone(),
                max: profile.max_count,
            },
            Refusal::Compute => self.no_room(position),
        }
    }

    /// The error for `position` finding no free placement.
    pub(super) fn no_room(&self, position: usize) -> MigPlanError {
        let profile = &self.geometry.profiles()[position];
        MigPlanError::NoRoom {
            profile: profile.name.clone(),
            placements: super::geometry::format_placements(&profile.placements),
            occupants: self.describe_all(),
        }
    }
}
