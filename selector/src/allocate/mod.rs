//! The structured-parameters allocator of Kubernetes DRA, as the scheduler
//! runs it on one node: which devices of the node's published pool the
//! claims of one pod get, or that they get none. Pure: no I/O; the inputs
//! are resource.k8s.io/v1 objects ([`Input`]), so a problem travels as JSON.
//!
//! The rules follow kubernetes/kubernetes
//! `staging/src/k8s.io/dynamic-resource-allocation/structured/internal/incubating/`
//! (the allocator the scheduler uses with DRAPrioritizedList,
//! DRAPartitionableDevices, DRADeviceTaints and DRAConsumableCapacity on);
//! each module names the upstream functions it mirrors:
//!
//! * [`requests`]: a request's DeviceClass selectors, then its own, all
//!   true (`isSelectable`, `selectorsMatch`); an evaluation error on a
//!   device the search considers aborts the allocation; ExactCount (`count`,
//!   default 1) or All (`validateDeviceRequest`); `firstAvailable`
//!   subrequests tried in order; at most 32 devices per claim.
//! * [`search`]: claims, requests and devices in order with backtracking,
//!   combinations within a request (`allocateOne`), a branch given up as
//!   soon as too few devices are left for it, and no search at all when a
//!   request could never be served (upstream tries every combination of
//!   the requests before it first; the answer is the same); devices held by earlier
//!   claims or taken in this search are in use unless they allow multiple
//!   allocations (`deviceInUse`, `allocateDevice`).
//! * [`counters`]: shared counters of partitionable devices
//!   (`checkAvailableCounters`).
//! * [`capacity`]: consumable capacity with request policies
//!   (`consumable_capacity.go`).
//! * [`taints`]: NoSchedule/NoExecute taints need a toleration in the
//!   request (`taintPreventsAllocation`).
//! * [`constraints`]: matchAttribute and distinctAttribute across the
//!   requests they list (`constraint.go`, `lookupAttribute`).
//! * [`result`]: the `AllocationResult` written for each claim.
//!
//! Not modelled: several pools or drivers at once (the node's one pool is
//! given), incomplete or invalid pools (the slices given are the pool),
//! per-device node selection and binding conditions (gpuslice publishes
//! neither), scoring (there is none upstream either: the first solution
//! wins). [`judge`] answers the user's question of one claim on top:
//! allocatable now, only on an empty node, or not at all, and why.

mod capacity;
mod constraints;
mod counters;
mod error;
mod input;
mod judge;
mod pool;
mod requests;
mod result;
mod search;
mod shortfall;
mod taints;

#[cfg(test)]
mod tests;

use k8s_openapi::api::resource::v1::AllocationResult;

pub use error::{AllocateError, PoolError};
pub use input::{Held, Input};
pub use judge::{Assigned, Fit, Judgement, judge};
pub use search::{MAX_RESULTS, STEP_LIMIT};
pub use shortfall::{Blocked, Blocker, Shortfall, When};

use pool::Pool;
use requests::Prepared;
use search::{Scope, Search};

/// Allocates every claim of `input` together, first fit in slice order, as
/// the scheduler does: one `AllocationResult` per claim, or `None` when no
/// allocation exists. Results on devices that allow multiple allocations
/// carry what they consume but no share id: the caller gives each a fresh
/// one, as the scheduler does.
pub fn allocate(input: &Input) -> Result<Option<Vec<AllocationResult>>, AllocateError> {
    let pool = Pool::new(&input.slices)?;
    let prepared = Prepared::new(pool, &input.classes, &input.claims)?;
    let scope = Scope::default();
    let mut search = Search::new(&prepared, &input.held, &scope)?;
    if !search.run()? {
        return Ok(None);
    }
    Ok(Some(
        (0..input.claims.len())
            .map(|c| result::allocation(&prepared, &search, c))
            .collect(),
    ))
}
