//! Errors of the MIG planner: why a request, a layout or a geometry change
//! cannot be planned. Each message names the profile or instance involved and
//! what would make the request succeed. Pure data, no I/O.

/// A MIG plan that cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MigPlanError {
    /// The profile table handed to the planner is unusable.
    #[error("MIG profile table is invalid: {reason}")]
    InvalidProfiles {
        /// What is wrong with it.
        reason: String,
    },
    /// A request names a profile this GPU does not have.
    #[error("unknown MIG profile {name:?} on this GPU; valid profiles: {valid}")]
    UnknownProfile {
        /// The name asked for.
        name: String,
        /// Every profile name of this GPU, comma separated.
        valid: String,
    },
    /// An instance or target carries a profile ID this GPU does not have.
    #[error("unknown MIG profile id {id} on this GPU; valid ids: {valid}")]
    UnknownProfileId {
        /// The id found.
        id: u32,
        /// Every profile `name=id` of this GPU, comma separated.
        valid: String,
    },
    /// A placement that the profile's table does not allow.
    #[error("placement {placement} is not allowed for {profile}; allowed placements: {allowed}")]
    PlacementNotAllowed {
        /// The profile name.
        profile: String,
        /// The placement asked for, as `start:size`.
        placement: String,
        /// The profile's placements, as `start:size` comma separated.
        allowed: String,
    },
    /// Every placement of the profile overlaps an occupied memory slice, or the
    /// GPU's compute slices are used up.
    #[error(
        "no room for a {profile} instance on this GPU: its placements {placements} all overlap \
         occupied memory slices or the compute slices are used up; the GPU holds {occupants}; \
         release one of them or pick another GPU"
    )]
    NoRoom {
        /// The profile name.
        profile: String,
        /// The profile's placements, as `start:size` comma separated.
        placements: String,
        /// What occupies the GPU, one entry per instance.
        occupants: String,
    },
    /// The profile already has as many instances as the GPU allows.
    #[error(
        "{profile} already has {max} instances on this GPU, the most it allows; release one \
         first or pick another GPU"
    )]
    MaxCountReached {
        /// The profile name.
        profile: String,
        /// The profile's `max_count`.
        max: u32,
    },
    /// A media-extension ("+me") instance already exists; a GPU has at most one.
    #[error(
        "{profile} needs the GPU's media extensions, which {holder} already uses (at most one \
         +me instance per GPU); release it first or pick another GPU"
    )]
    MediaExtensionsInUse {
        /// The requested profile name.
        profile: String,
        /// The instance holding the media extensions.
        holder: String,
    },
    /// A "+me.all" instance holds every media engine: beside it only "-me"
    /// instances fit.
    #[error(
        "{profile} takes media engines, but {holder} holds every one of them (beside a +me.all \
         instance only -me instances fit); ask for a -me profile, release it first, or pick \
         another GPU"
    )]
    AllMediaEnginesTaken {
        /// The requested profile name.
        profile: String,
        /// The "+me.all" instance.
        holder: String,
    },
    /// A "+me.all" instance needs every media engine, which other instances
    /// take.
    #[error(
        "{profile} needs every media engine of the GPU, which {holders} already take (a +me.all \
         instance fits only beside -me instances); release them first or pick another GPU"
    )]
    MediaEnginesInUse {
        /// The requested profile name.
        profile: String,
        /// The instances taking media engines.
        holders: String,
    },
    /// Two instances of a layout share a memory slice.
    #[error("{first} and {second} overlap: they share a memory slice")]
    Overlap {
        /// One instance.
        first: String,
        /// The other.
        second: String,
    },
    /// A target layout would destroy or move instances that claims hold.
    #[error(
        "the target layout removes or moves {instances}, held by a claim; keep it in the \
         target or unprepare the claim first"
    )]
    HeldInstanceRemoved {
        /// The held instances, one entry each.
        instances: String,
    },
    /// A target layout needs room that an instance gpuslice did not create holds.
    #[error(
        "the target layout needs room held by {instance}, which gpuslice did not create; \
         destroy it by hand or allow destroying foreign instances"
    )]
    ForeignInstanceInTheWay {
        /// The foreign instance.
        instance: String,
    },
    /// No arrangement of the wanted profiles fits around the fixed instances.
    #[error(
        "no layout of {wanted} fits on this GPU around {fixed}; ask for fewer or smaller \
         profiles"
    )]
    LayoutImpossible {
        /// The wanted profiles that had to be placed, comma separated.
        wanted: String,
        /// The instances that stay where they are.
        fixed: String,
    },
}
