//! The JSON the allocator tool reads and answers (tests/tools/allocator/
//! main.go), as Rust types: the Kubernetes objects are k8s-openapi's
//! resource.k8s.io/v1 and core/v1 types, so what a test builds is what the
//! API would serve.
//!
//! Owns: the field names on both sides. Must not run anything.

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::resource::v1::{AllocationResult, DeviceClass, ResourceClaim, ResourceSlice};
use serde::{Deserialize, Serialize};

/// One scheduling question: may `claims` (one pod's, none allocated yet) be
/// allocated on `node`, given the slices, classes and the claims already
/// allocated?
#[derive(Debug, Clone, Serialize)]
pub struct Input {
    pub node: Node,
    pub features: Features,
    pub slices: Vec<ResourceSlice>,
    pub classes: Vec<DeviceClass>,
    pub claims: Vec<ResourceClaim>,
    /// Claims with `status.allocation` set: what the node's devices already
    /// hold, read as the scheduler's allocated-devices tracker reads it.
    pub allocated: Vec<ResourceClaim>,
    /// A budget of the allocator's `allocateOne` calls, standing in for
    /// kube-scheduler's filter timeout; past it the answer is
    /// [`Outcome::Limit`].
    #[serde(
        rename = "maxAllocateOneCalls",
        skip_serializing_if = "Option::is_none"
    )]
    pub max_allocate_one_calls: Option<i64>,
}

/// The allocator's feature switches: the fields of upstream's
/// `structured.Features` at the vendored tag, by name (the tool refuses a
/// name it does not have; `-about` lists them, and a test compares).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct Features {
    /// DRAAdminAccess.
    pub admin_access: bool,
    /// DRAConsumableCapacity (also turns on its CEL functions).
    pub consumable_capacity: bool,
    /// DRADeviceBindingConditions and DRAResourceClaimDeviceStatus together.
    pub device_binding_and_status: bool,
    /// DRADeviceTaints.
    pub device_taints: bool,
    /// DRAListTypeAttributes (also turns on its CEL functions).
    pub list_type_attributes: bool,
    /// DRAPartitionableDevices.
    pub partitionable_devices: bool,
    /// DRAPrioritizedList.
    pub prioritized_list: bool,
}

impl Features {
    /// The names the tool knows them by, in its order.
    pub const NAMES: [&'static str; 7] = [
        "AdminAccess",
        "ConsumableCapacity",
        "DeviceBindingAndStatus",
        "DeviceTaints",
        "ListTypeAttributes",
        "PartitionableDevices",
        "PrioritizedList",
    ];
}

/// The allocator's answer.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "outcome", rename_all = "lowercase")]
pub enum Outcome {
    /// Every claim got an allocation; `allocator` names the implementation
    /// the features picked (stable, incubating or experimental).
    Allocated {
        allocator: String,
        allocations: Vec<ClaimAllocation>,
    },
    /// The pod does not fit the node (the scheduler's Unschedulable).
    Unschedulable {
        stage: Stage,
        reason: String,
        #[serde(default)]
        allocator: Option<String>,
    },
    /// The search needed more `allocateOne` calls than the input's budget
    /// (where the scheduler would run into its filter timeout).
    Limit { calls: i64, reason: String },
    /// The scheduler would report a scheduling error (a bad CEL selector,
    /// an allocator that cannot be built for the features).
    Error {
        stage: Stage,
        reason: String,
        #[serde(default)]
        allocator: Option<String>,
    },
}

/// Where the scheduler decided: before building the allocator (classes,
/// request types) or in Allocate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stage {
    Prefilter,
    Filter,
}

/// One claim's allocation, in the order of `Input::claims`.
#[derive(Debug, Clone, Deserialize)]
pub struct ClaimAllocation {
    /// `namespace/name`.
    pub claim: String,
    pub allocation: AllocationResult,
}

/// What `-about` prints.
#[derive(Debug, Clone, Deserialize)]
pub struct About {
    /// The vendored tag (SOURCE's ref).
    pub upstream: String,
    pub commit: String,
    /// The Go version it was built with.
    pub go: String,
    /// The fields of `structured.Features`.
    pub features: Vec<String>,
    /// The fixes of known upstream bugs it was built with (none: upstream
    /// as the scheduler runs it).
    #[serde(default)]
    pub fixes: Vec<String>,
}
