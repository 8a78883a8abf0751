//! Why an allocation cannot even be tried, or was given up: the published
//! pool is unreadable, or a claim is one the scheduler refuses (its
//! `Allocate` returns an error, not "no allocation").

use crate::device::DeviceError;
use crate::matcher::CompileError;
use crate::quantity::QuantityError;

/// A published pool the allocator cannot read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PoolError {
    /// The slices hold more than one driver or pool (the allocator judges
    /// one node's pool).
    #[error(
        "the slices are of more than one pool: {first} and {other} (give one node's pool of one driver)"
    )]
    MixedPools {
        /// `driver/pool` of the first slice.
        first: String,
        /// `driver/pool` of another.
        other: String,
    },
    /// Two devices of one name.
    #[error("device {0} is published twice in the pool")]
    DuplicateDevice(String),
    /// A device a selector cannot read.
    #[error(transparent)]
    Device(#[from] DeviceError),
    /// A counter or capacity value that is not a quantity.
    #[error("{place}: {error}")]
    Quantity {
        /// "device gpu-0, capacity memory", "counter set gpu-0-counters".
        place: String,
        /// Why.
        error: QuantityError,
    },
}

/// Why claims cannot be allocated at all (the scheduler's `Allocate`
/// returns an error for them), or why the search stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AllocateError {
    /// The pool is unreadable.
    #[error(transparent)]
    Pool(#[from] PoolError),
    /// A request of neither kind (`exactly` nor `firstAvailable`).
    #[error("claim {claim}, request {request}: neither exactly nor firstAvailable is set")]
    RequestKind {
        /// The claim.
        claim: String,
        /// The request.
        request: String,
    },
    /// A DeviceClass the claim names and nobody gave.
    #[error("claim {claim}, request {request}: device class {class} does not exist")]
    UnknownClass {
        /// The claim.
        claim: String,
        /// The request.
        request: String,
        /// The class.
        class: String,
    },
    /// A selector without a CEL expression (a future selector type).
    #[error("{origin}: a selector without cel.expression (only CEL selectors exist)")]
    NoExpression {
        /// Where.
        origin: String,
    },
    /// A selector Kubernetes would refuse.
    #[error("{origin}: {error}")]
    Compile {
        /// Where.
        origin: String,
        /// Why.
        error: CompileError,
    },
    /// A selector failed on a device the scheduler considered: upstream
    /// aborts the allocation ("CEL runtime error").
    #[error("{origin} on device {device}: CEL runtime error: {message}")]
    Evaluation {
        /// Where the selector comes from.
        origin: String,
        /// The device.
        device: String,
        /// What failed.
        message: String,
    },
    /// An allocation mode other than ExactCount and All.
    #[error("claim {claim}, request {request}: unsupported allocation mode {mode:?}")]
    Mode {
        /// The claim.
        claim: String,
        /// The request.
        request: String,
        /// The mode.
        mode: String,
    },
    /// A count below 1.
    #[error("claim {claim}, request {request}: count {count} is not a number of devices")]
    Count {
        /// The claim.
        claim: String,
        /// The request.
        request: String,
        /// The count.
        count: i64,
    },
    /// More devices than one allocation result holds.
    #[error(
        "claim {claim}: number of requested devices {devices} exceeds the claim limit of {limit}"
    )]
    TooManyDevices {
        /// The claim.
        claim: String,
        /// At least this many.
        devices: usize,
        /// `AllocationResultsMaxSize`.
        limit: usize,
    },
    /// A constraint of neither kind.
    #[error("claim {claim}, constraint #{index}: empty constraint (unsupported constraint type?)")]
    Constraint {
        /// The claim.
        claim: String,
        /// Its index.
        index: usize,
    },
    /// An `All` request whose devices a constraint does not allow together.
    #[error(
        "claim {claim}, request {request}: cannot add device {device} because a claim constraint would not be satisfied"
    )]
    AllConstrained {
        /// The claim.
        claim: String,
        /// The request.
        request: String,
        /// The device.
        device: String,
    },
    /// A capacity request that is not a quantity, or not one a device can
    /// account for.
    #[error("claim {claim}, request {request}: capacity {capacity}: {problem}")]
    Capacity {
        /// The claim.
        claim: String,
        /// The request.
        request: String,
        /// The capacity asked for.
        capacity: String,
        /// What is wrong.
        problem: String,
    },
    /// What a request asks of a device's capacity cannot be accounted for
    /// (upstream aborts rather than skip the device).
    #[error("claim {claim}, request {request}: its capacity request on device {device}: {problem}")]
    Consumption {
        /// The claim.
        claim: String,
        /// The request.
        request: String,
        /// The device.
        device: String,
        /// What is wrong.
        problem: String,
    },
    /// The search tried more devices than it is allowed to.
    #[error(
        "no answer after trying {0} devices (the claims allow very many combinations); the scheduler gives up after its filter timeout too"
    )]
    StepLimit(u64),
}

impl AllocateError {
    /// Whether the error is about the claims (the scheduler would leave
    /// them unallocated and say why), not about the pool or the search.
    pub fn is_about_claims(&self) -> bool {
        !matches!(self, Self::Pool(_) | Self::StepLimit(_))
    }
}
