//! Consumable capacity: what a request consumes of each capacity of a
//! device, and whether that fits beside what other allocations consume
//! (upstream incubating `consumable_capacity.go`: `cmpRequestOverCapacity`,
//! `resolveCapacityName`, `calculateConsumedCapacity`, `roundUpRange`,
//! `roundUpValidValues`, `violatesPolicy`). Pure.
//!
//! * A request naming a capacity the device lacks does not fit it (the bare
//!   name and the driver-qualified one find each other).
//! * Each capacity is consumed by the request's amount rounded up by the
//!   policy (to `min`, then `min + k*step`; or to the next valid value), or
//!   without an amount by the policy's default, else the whole capacity.
//! * The amount must obey the policy (at most `max`, a step from `min`, one
//!   of the valid values; the default always does), and what earlier
//!   allocations and this search already consume plus the amount must stay
//!   within the capacity. This holds for every device; only a device with
//!   `allowMultipleAllocations` records what it consumes, so on any other
//!   the check is the request against the whole capacity.

use std::collections::BTreeMap;

use super::pool::{Capacity, PoolDevice};
use crate::quantity::Quantity;

/// Amounts by capacity name, as the device publishes it.
pub type Amounts = BTreeMap<String, Quantity>;

/// A capacity request no device can account for (upstream aborts).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CapacityError {
    /// Asked for under two spellings.
    #[error("requested both as {0:?} and as {1:?}")]
    Twice(String, String),
    /// Beyond the range arithmetic.
    #[error("{0} cannot be represented in the device's range arithmetic")]
    Unrepresentable(String),
    /// Below zero.
    #[error("{0} is negative")]
    Negative(String),
}

/// `resolveCapacityName`: the device's key a requested name refers to.
fn resolve<'d>(name: &str, driver: &str, device: &'d PoolDevice<'_>) -> Option<&'d str> {
    if let Some((k, _)) = device.capacity.get_key_value(name) {
        return Some(k);
    }
    let key = match name.split_once('/') {
        Some((domain, id)) if domain == driver => id.to_owned(),
        Some(_) => return None,
        None => format!("{driver}/{name}"),
    };
    device.capacity.get_key_value(&key).map(|(k, _)| k.as_str())
}

/// `roundUpRange` / `roundUpValidValues` / `fillEmptyRequestQuantity`.
fn consumed(asked: Option<Quantity>, cap: &Capacity) -> Result<Quantity, CapacityError> {
    let Some(asked) = asked else {
        return Ok(cap.default.unwrap_or(cap.value));
    };
    if let Some((min, _, step)) = cap.range {
        if asked < min {
            return Ok(min);
        }
        let Some(step) = step else {
            return Ok(asked);
        };
        let (a, m, s) = (asked.ceil_units(), min.ceil_units(), step.ceil_units());
        if s <= 0 {
            return Ok(asked);
        }
        let n = (a - m) / s + i128::from((a - m) % s != 0);
        let total = n.checked_mul(s).and_then(|v| v.checked_add(m));
        return total
            .and_then(|v| i64::try_from(v).ok())
            .map(Quantity::from_units)
            .ok_or_else(|| CapacityError::Unrepresentable(asked.canonical()));
    }
    Ok(cap
        .values
        .iter()
        .find(|v| asked <= **v)
        .copied()
        .unwrap_or(asked))
}

/// `violatesPolicy`.
fn violates(amount: Quantity, cap: &Capacity) -> bool {
    if !cap.has_policy || cap.default == Some(amount) {
        return false;
    }
    if let Some((min, max, step)) = cap.range {
        if max.is_some_and(|max| amount > max) {
            return true;
        }
        let s = step.map_or(0, Quantity::ceil_units);
        return s > 0 && (amount.ceil_units() - min.ceil_units()) % s != 0;
    }
    !cap.values.is_empty() && !cap.values.contains(&amount)
}

/// `cmpRequestOverCapacity`: what the request consumes of each capacity of
/// `device` (`None`: it does not fit), given what earlier allocations
/// (`held`) and this search (`taking`) consume there.
pub fn fit(
    requested: Option<&Amounts>,
    driver: &str,
    device: &PoolDevice<'_>,
    held: Option<&Amounts>,
    taking: Option<&Amounts>,
) -> Result<Option<Amounts>, CapacityError> {
    let mut asked: BTreeMap<&str, (Quantity, &str)> = BTreeMap::new();
    for (name, amount) in requested.into_iter().flatten() {
        let Some(key) = resolve(name, driver, device) else {
            return Ok(None);
        };
        if let Some((_, other)) = asked.insert(key, (*amount, name)) {
            return Err(CapacityError::Twice(other.to_owned(), name.clone()));
        }
    }
    let mut amounts = Amounts::new();
    for (name, cap) in &device.capacity {
        let amount = consumed(asked.get(name.as_str()).map(|(q, _)| *q), cap)?;
        if amount.sign() < 0 {
            return Err(CapacityError::Negative(amount.canonical()));
        }
        amounts.insert(name.clone(), amount);
    }
    for ((name, cap), amount) in device.capacity.iter().zip(amounts.values().copied()) {
        if violates(amount, cap) {
            return Ok(None);
        }
        let so_far = |m: Option<&Amounts>| m.and_then(|m| m.get(name)).copied();
        let total = [so_far(held), so_far(taking)]
            .into_iter()
            .flatten()
            .try_fold(amount, Quantity::checked_add);
        if total.is_none_or(|t| t > cap.value) {
            return Ok(None);
        }
    }
    Ok(Some(amounts))
}

/// Adds `amounts` into `sum`.
pub fn add(sum: &mut Amounts, amounts: &Amounts) {
    for (k, v) in amounts {
        let entry = sum.entry(k.clone()).or_insert(Quantity::from_units(0));
        *entry = entry.checked_add(*v).unwrap_or(*entry);
    }
}

/// Takes `amounts` out of `sum`; whether nothing is left.
pub fn sub(sum: &mut Amounts, amounts: &Amounts) -> bool {
    for (k, v) in amounts {
        if let Some(entry) = sum.get_mut(k) {
            *entry = entry.checked_sub(*v).unwrap_or(*entry);
        }
    }
    sum.values().all(|v| v.sign() == 0)
}
