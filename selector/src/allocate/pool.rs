//! The published pool as the allocator walks it: every device of every
//! slice in order (upstream `GatherPools`, one pool), each with the view its
//! selectors see, its capacities and request policies, the counters it
//! consumes, whether it may be allocated more than once; and the pool's
//! counter sets. Pure.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::resource::v1::{Device, DeviceCapacity, ResourceSliceSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as K8sQuantity;

use super::error::PoolError;
use crate::device::DeviceView;
use crate::quantity::Quantity;

/// A capacity and its request policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capacity {
    /// The capacity.
    pub value: Quantity,
    /// Consumed by a request that asks for none.
    pub default: Option<Quantity>,
    /// `validRange`: (min, max, step).
    pub range: Option<(Quantity, Option<Quantity>, Option<Quantity>)>,
    /// `validValues`, ascending.
    pub values: Vec<Quantity>,
    /// Whether any policy is set.
    pub has_policy: bool,
}

/// One device of the pool.
#[derive(Debug)]
pub struct PoolDevice<'a> {
    /// As published.
    pub raw: &'a Device,
    /// As selectors see it.
    pub view: DeviceView,
    /// Capacities by name as published.
    pub capacity: BTreeMap<String, Capacity>,
    /// (counter set, counter -> amount).
    pub consumes: Vec<(String, BTreeMap<String, Quantity>)>,
    /// `allowMultipleAllocations`.
    pub multi: bool,
}

/// Counter sets by name, then counter.
pub type Counters = BTreeMap<String, BTreeMap<String, Quantity>>;

/// One node's pool.
#[derive(Debug)]
pub struct Pool<'a> {
    /// The driver.
    pub driver: String,
    /// The pool's name.
    pub name: String,
    /// The node the slices are for.
    pub node: Option<String>,
    /// Devices in walk order.
    pub devices: Vec<PoolDevice<'a>>,
    /// Every counter set.
    pub counter_sets: Counters,
}

fn parse(q: &K8sQuantity, place: impl FnOnce() -> String) -> Result<Quantity, PoolError> {
    Quantity::parse(&q.0).map_err(|error| PoolError::Quantity {
        place: place(),
        error,
    })
}

fn capacity(device: &str, name: &str, c: &DeviceCapacity) -> Result<Capacity, PoolError> {
    let place = || format!("device {device}, capacity {name}");
    let policy = c.request_policy.as_ref();
    let range = policy.and_then(|p| p.valid_range.as_ref());
    let range = match range {
        Some(r) => Some((
            parse(&r.min, place)?,
            r.max.as_ref().map(|q| parse(q, place)).transpose()?,
            r.step.as_ref().map(|q| parse(q, place)).transpose()?,
        )),
        None => None,
    };
    Ok(Capacity {
        value: parse(&c.value, place)?,
        default: policy
            .and_then(|p| p.default.as_ref())
            .map(|q| parse(q, place))
            .transpose()?,
        range,
        values: policy
            .and_then(|p| p.valid_values.as_ref())
            .into_iter()
            .flatten()
            .map(|q| parse(q, place))
            .collect::<Result<_, _>>()?,
        has_policy: policy.is_some(),
    })
}

fn counters(
    map: &BTreeMap<String, k8s_openapi::api::resource::v1::Counter>,
    place: &str,
) -> Result<BTreeMap<String, Quantity>, PoolError> {
    map.iter()
        .map(|(k, c)| {
            Ok((
                k.clone(),
                parse(&c.value, || format!("{place}, counter {k}"))?,
            ))
        })
        .collect()
}

fn device<'a>(raw: &'a Device, driver: &str) -> Result<PoolDevice<'a>, PoolError> {
    let capacity = raw
        .capacity
        .iter()
        .flatten()
        .map(|(k, c)| Ok((k.clone(), capacity(&raw.name, k, c)?)))
        .collect::<Result<_, PoolError>>()?;
    let consumes = raw
        .consumes_counters
        .iter()
        .flatten()
        .map(|c| {
            let place = format!("device {}, counter set {}", raw.name, c.counter_set);
            Ok((c.counter_set.clone(), counters(&c.counters, &place)?))
        })
        .collect::<Result<_, PoolError>>()?;
    Ok(PoolDevice {
        raw,
        view: DeviceView::new(raw, driver)?,
        capacity,
        consumes,
        multi: raw.allow_multiple_allocations == Some(true),
    })
}

impl<'a> Pool<'a> {
    /// The pool of `slices`.
    pub fn new(slices: &'a [ResourceSliceSpec]) -> Result<Self, PoolError> {
        let mut pool = Pool {
            driver: String::new(),
            name: String::new(),
            node: None,
            devices: Vec::new(),
            counter_sets: Counters::new(),
        };
        let mut names = BTreeSet::new();
        for (i, slice) in slices.iter().enumerate() {
            if i == 0 {
                pool.driver.clone_from(&slice.driver);
                pool.name.clone_from(&slice.pool.name);
                pool.node.clone_from(&slice.node_name);
            } else if slice.driver != pool.driver || slice.pool.name != pool.name {
                return Err(PoolError::MixedPools {
                    first: format!("{}/{}", pool.driver, pool.name),
                    other: format!("{}/{}", slice.driver, slice.pool.name),
                });
            }
            for set in slice.shared_counters.iter().flatten() {
                let place = format!("counter set {}", set.name);
                pool.counter_sets
                    .insert(set.name.clone(), counters(&set.counters, &place)?);
            }
            for raw in slice.devices.iter().flatten() {
                if !names.insert(raw.name.as_str()) {
                    return Err(PoolError::DuplicateDevice(raw.name.clone()));
                }
                pool.devices.push(device(raw, &pool.driver)?);
            }
        }
        Ok(pool)
    }
}
