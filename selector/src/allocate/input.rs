//! What the allocator is given, in resource.k8s.io/v1 shapes so it travels
//! as JSON (to another allocator, a file, a test): one node's ResourceSlices,
//! the DeviceClasses, the claims of one pod, and what claims allocated
//! earlier hold ([`Held`], upstream's `AllocatedState`). Pure.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::resource::v1::{
    AllocationResult, DeviceClass, ResourceClaim, ResourceSliceSpec,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as K8sQuantity;
use serde::{Deserialize, Serialize};

use crate::quantity::{Quantity, QuantityError};

/// One allocation problem.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Input {
    /// The node's slices: one pool of one driver, in the order the
    /// scheduler walks them (slice by slice, device by device).
    pub slices: Vec<ResourceSliceSpec>,
    /// The DeviceClasses the claims may name.
    pub classes: Vec<DeviceClass>,
    /// The claims of one pod, allocated together in this order.
    pub claims: Vec<ResourceClaim>,
    /// What claims allocated earlier hold.
    #[serde(default)]
    pub held: Held,
}

/// What claims allocated earlier hold in the pool (upstream's
/// `AllocatedState`, of one pool, so devices go by name).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Held {
    /// Devices allocated without a share (`AllocatedDevices`).
    #[serde(default)]
    pub devices: BTreeSet<String>,
    /// Devices allocated with shares (`AllocatedSharedDeviceIDs`), and the
    /// capacity all their shares consume together (`AggregatedCapacity`),
    /// by capacity name as the device publishes it.
    #[serde(default)]
    pub shared: BTreeMap<String, BTreeMap<String, K8sQuantity>>,
}

impl Held {
    /// Records an allocation. A result with a share id or a consumed
    /// capacity is a share (the allocator leaves share ids to the caller,
    /// as the scheduler makes them, so a consumed capacity marks one too).
    pub fn add(&mut self, allocation: &AllocationResult) -> Result<(), QuantityError> {
        for result in results(allocation) {
            if result.share_id.is_none() && result.consumed_capacity.is_none() {
                self.devices.insert(result.device.clone());
                continue;
            }
            let sums = self.shared.entry(result.device.clone()).or_default();
            for (name, amount) in result.consumed_capacity.iter().flatten() {
                let sum = match sums.get(name) {
                    Some(q) => Quantity::parse(&q.0)?,
                    None => Quantity::from_units(0),
                };
                let add = Quantity::parse(&amount.0)?;
                let total = sum
                    .checked_add(add)
                    .ok_or_else(|| QuantityError::TooLarge(amount.0.clone()))?;
                sums.insert(name.clone(), K8sQuantity(total.canonical()));
            }
        }
        Ok(())
    }

    /// Forgets a deallocated allocation (the inverse of [`Held::add`]); a
    /// shared device whose shares are all gone is no longer held.
    pub fn remove(&mut self, allocation: &AllocationResult) -> Result<(), QuantityError> {
        for result in results(allocation) {
            if result.share_id.is_none() && result.consumed_capacity.is_none() {
                self.devices.remove(&result.device);
                continue;
            }
            let Some(sums) = self.shared.get_mut(&result.device) else {
                continue;
            };
            for (name, amount) in result.consumed_capacity.iter().flatten() {
                if let Some(sum) = sums.get_mut(name) {
                    let left = Quantity::parse(&sum.0)?
                        .checked_sub(Quantity::parse(&amount.0)?)
                        .ok_or_else(|| QuantityError::TooLarge(amount.0.clone()))?;
                    *sum = K8sQuantity(left.canonical());
                }
            }
            let empty = sums
                .values()
                .all(|q| Quantity::parse(&q.0).is_ok_and(|q| q.sign() == 0));
            if empty {
                self.shared.remove(&result.device);
            }
        }
        Ok(())
    }
}

fn results(
    allocation: &AllocationResult,
) -> impl Iterator<Item = &k8s_openapi::api::resource::v1::DeviceRequestAllocationResult> {
    allocation
        .devices
        .iter()
        .flat_map(|d| d.results.iter().flatten())
}
