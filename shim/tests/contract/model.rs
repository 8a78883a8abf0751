//! A structured-parameters scheduler, as the upstream allocator decides,
//! over one node's pool ([`Pool`]). Rules, each from
//! kubernetes/kubernetes staging/src/k8s.io/dynamic-resource-allocation/
//! structured/internal/ at commit 8a84988 (experimental, the one with
//! DRAConsumableCapacity; incubating 0cfbf89 is the same without it):
//!
//! * claims of one pod are allocated together, request by request, device by
//!   device, backtracking when a later choice fails (`allocateOne`);
//! * `ExactCount`: `count` devices; `All`: every device the selectors match,
//!   each of which must be allocatable or the claim fails (`must`);
//! * a device allocated to any claim (earlier or in this pod) is unavailable,
//!   unless it has `allowMultipleAllocations` (`deviceInUse`, `allocateDevice`);
//! * a device that consumes counters fits only if, for every counter of every
//!   set in the pool, the set's value minus what devices allocated earlier
//!   consume (only devices in `AllocatedDevices`, i.e. not shared ones) is at
//!   least what this pod's devices consume (`checkAvailableCounters`); a
//!   multi-allocatable device whose capacity is already in use skips the
//!   check (`skipCounterCheck`);
//! * consumable capacity: each capacity of a multi-allocatable device is
//!   consumed by the request's amount rounded up by the policy (min, then
//!   `min + k*step`), or the policy's default, or the whole value; the sum
//!   over allocations must stay within the capacity (consumable_capacity.go
//!   `CmpRequestOverCapacity`, `calculateConsumedCapacity`);
//! * NoSchedule/NoExecute taints prevent allocation without a toleration
//!   (`taintPreventsAllocation`; our claims tolerate none);
//! * `matchAttribute`: every device of the constrained requests has the
//!   attribute, all with one value; a fully qualified name whose domain is
//!   the driver also finds the unqualified key (constraint.go,
//!   allocator.go `lookupAttribute`).
//!
//! Which valid choice is made: first fit walks devices in slice order, as
//! upstream does; the random scheduler walks them in a shuffled order, so
//! it finds other valid allocations a scheduler could equally make.

use std::collections::{BTreeMap, BTreeSet};

use crate::node::DRIVER;
use crate::shape::{Attr, Dev, Pool};

/// What a request's DeviceClass selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// `device.attributes["gpu.nvidia.com"].type == "gpu"`.
    Gpu,
    /// `device.attributes["gpu.nvidia.com"].type == "mig"`.
    Mig,
    /// Like `Gpu` and `!device.attributes["gpu.nvidia.com"].migManaged`,
    /// with an MPS `GpuConfig` in the class.
    Shared,
}

/// One request of a claim.
#[derive(Debug, Clone)]
pub struct Request {
    /// Request name.
    pub name: String,
    /// DeviceClass.
    pub class: Class,
    /// `device.attributes["gpu.nvidia.com"].profile == ...` when set.
    pub profile: Option<String>,
    /// `Some(n)`: ExactCount n; `None`: All.
    pub count: Option<usize>,
    /// `capacity.requests.memory`, bytes.
    pub memory: Option<i64>,
}

/// A claim.
#[derive(Debug, Clone)]
pub struct Claim {
    /// metadata.uid.
    pub uid: String,
    /// Requests.
    pub requests: Vec<Request>,
    /// matchAttribute constraints: (requests, fully qualified attribute).
    pub constraints: Vec<(Vec<String>, String)>,
}

/// One allocation result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allocated {
    /// Request name.
    pub request: String,
    /// Device name.
    pub device: String,
    /// Consumed capacity (multi-allocatable devices only).
    pub consumed: Option<BTreeMap<String, i64>>,
}

/// What claims allocated earlier hold (upstream `AllocatedState`).
#[derive(Debug, Clone, Default)]
pub struct Allocations {
    /// Devices allocated exclusively (`AllocatedDevices`).
    pub exclusive: BTreeSet<String>,
    /// Multi-allocated devices and their summed consumption (`AggregatedCapacity`).
    pub shared: BTreeMap<String, BTreeMap<String, i64>>,
}

impl Allocations {
    /// Records a claim's results.
    pub fn add(&mut self, results: &[Allocated]) {
        for r in results {
            match &r.consumed {
                None => {
                    self.exclusive.insert(r.device.clone());
                }
                Some(c) => {
                    let sum = self.shared.entry(r.device.clone()).or_default();
                    for (k, v) in c {
                        *sum.entry(k.clone()).or_default() += v;
                    }
                }
            }
        }
    }

    /// Forgets a claim's results (it was deallocated).
    pub fn remove(&mut self, results: &[Allocated]) {
        for r in results {
            match &r.consumed {
                None => {
                    self.exclusive.remove(&r.device);
                }
                Some(c) => {
                    if let Some(sum) = self.shared.get_mut(&r.device) {
                        for (k, v) in c {
                            *sum.entry(k.clone()).or_default() -= v;
                        }
                        if sum.values().all(|v| *v == 0) {
                            self.shared.remove(&r.device);
                        }
                    }
                }
            }
        }
    }
}

fn lookup<'a>(dev: &'a Dev, qualified: &str) -> Option<&'a Attr> {
    if let Some(a) = dev.attrs.get(qualified) {
        return Some(a);
    }
    let (domain, id) = qualified.split_once('/')?;
    (domain == DRIVER).then(|| dev.attrs.get(id)).flatten()
}

fn selects(req: &Request, dev: &Dev) -> bool {
    let kind = match req.class {
        Class::Gpu | Class::Shared => "gpu",
        Class::Mig => "mig",
    };
    let is = |key: &str, want: &str| matches!(lookup(dev, &format!("{DRIVER}/{key}")), Some(Attr::Str(s)) if s == want);
    // The sharing class leaves out GPUs gpusliced will not share
    // (`!device.attributes["gpu.nvidia.com"].migManaged`).
    let shareable = req.class != Class::Shared
        || matches!(
            lookup(dev, &format!("{DRIVER}/migManaged")),
            Some(Attr::Bool(false))
        );
    is("type", kind) && shareable && req.profile.as_deref().is_none_or(|p| is("profile", p))
}

/// `calculateConsumedCapacity` for every capacity of `dev`.
fn consumption(req: &Request, dev: &Dev) -> BTreeMap<String, i64> {
    dev.capacity
        .iter()
        .map(|(name, cap)| {
            let asked = (name == "memory").then_some(req.memory).flatten();
            let amount = match (asked, cap.min) {
                (None, _) => cap.default.unwrap_or(cap.value),
                (Some(a), Some(min)) if a < min => min,
                (Some(a), Some(min)) => cap.step.map_or(a, |step| {
                    min + (a - min).div_euclid(step) * step
                        + if (a - min).rem_euclid(step) == 0 {
                            0
                        } else {
                            step
                        }
                }),
                (Some(a), None) => a,
            };
            (name.clone(), amount)
        })
        .collect()
}

/// A slot to fill: claim, request, and (All mode) the one device it must take.
#[derive(Debug, Clone, Copy)]
struct Slot {
    claim: usize,
    request: usize,
    must: Option<usize>,
}

struct Search<'a> {
    pool: &'a Pool,
    claims: &'a [Claim],
    before: &'a Allocations,
    order: Vec<usize>,
    slots: Vec<Slot>,
    /// Counter sets less what earlier exclusive allocations consume.
    available: BTreeMap<String, BTreeMap<String, i64>>,
    consumed: BTreeMap<String, BTreeMap<String, i64>>,
    taking: BTreeSet<usize>,
    taking_capacity: BTreeMap<usize, BTreeMap<String, i64>>,
    values: Vec<Vec<Option<Attr>>>,
    counts: Vec<Vec<usize>>,
    results: Vec<Vec<Allocated>>,
}

impl Search<'_> {
    fn counters_fit(&mut self, dev: &Dev) -> bool {
        for (set, used) in &dev.consumes {
            let sum = self.consumed.entry(set.clone()).or_default();
            for (k, v) in used {
                *sum.entry(k.clone()).or_default() += v;
            }
        }
        let fits = self.available.iter().all(|(set, counters)| {
            counters.iter().all(|(k, have)| {
                let used = self.consumed.get(set).and_then(|c| c.get(k)).copied();
                *have >= used.unwrap_or(0)
            })
        });
        if !fits {
            self.release_counters(dev);
        }
        fits
    }

    fn release_counters(&mut self, dev: &Dev) {
        for (set, used) in &dev.consumes {
            if let Some(sum) = self.consumed.get_mut(set) {
                for (k, v) in used {
                    *sum.entry(k.clone()).or_default() -= v;
                }
            }
        }
    }

    fn in_use(&self, i: usize) -> bool {
        let name = &self.pool.devices[i].name;
        self.before.exclusive.contains(name) || self.taking.contains(&i)
    }

    fn capacity_in_use(&self, i: usize) -> bool {
        let name = &self.pool.devices[i].name;
        self.before.shared.contains_key(name) || self.taking_capacity.contains_key(&i)
    }

    fn constraints_add(&mut self, claim: usize, request: &str, dev: &Dev) -> bool {
        let claims = self.claims;
        let constraints = &claims[claim].constraints;
        let mut added = Vec::new();
        for (c, (requests, attribute)) in constraints.iter().enumerate() {
            if !requests.is_empty() && !requests.iter().any(|r| r == request) {
                continue;
            }
            let value = lookup(dev, attribute);
            let ok = match (value, &self.values[claim][c]) {
                (None, _) => false,
                (Some(_), None) => true,
                (Some(v), Some(first)) => v == first,
            };
            if !ok {
                for c in added {
                    self.constraint_remove(claim, c);
                }
                return false;
            }
            if self.counts[claim][c] == 0 {
                self.values[claim][c] = value.cloned();
            }
            self.counts[claim][c] += 1;
            added.push(c);
        }
        true
    }

    fn constraint_remove(&mut self, claim: usize, c: usize) {
        self.counts[claim][c] -= 1;
        if self.counts[claim][c] == 0 {
            self.values[claim][c] = None;
        }
    }

    fn constraints_remove(&mut self, claim: usize, request: &str) {
        let claims = self.claims;
        for c in 0..claims[claim].constraints.len() {
            let requests = &claims[claim].constraints[c].0;
            if requests.is_empty() || requests.iter().any(|r| r == request) {
                self.constraint_remove(claim, c);
            }
        }
    }

    /// `allocateDevice`: `Some(undo)` when `i` is taken for the slot.
    fn take(&mut self, slot: Slot, i: usize) -> Option<Taken> {
        let (pool, claims) = (self.pool, self.claims);
        let dev = &pool.devices[i];
        let req = &claims[slot.claim].requests[slot.request];
        let multi = dev.multi;
        if self.in_use(i) {
            return None;
        }
        // A claim holds a multi-allocatable device once (gpusliced refuses
        // one device twice in a claim).
        if self.results[slot.claim]
            .iter()
            .any(|r| r.device == dev.name)
        {
            return None;
        }
        let skip_counters = multi && self.capacity_in_use(i);
        let counted = !skip_counters && !dev.consumes.is_empty();
        if counted && !self.counters_fit(dev) {
            return None;
        }
        let undo_counters = |s: &mut Self| {
            if counted {
                s.release_counters(dev);
            }
        };
        if dev.tainted || !self.constraints_add(slot.claim, &req.name, dev) {
            undo_counters(self);
            return None;
        }
        let want = consumption(req, dev);
        let earlier = self.before.shared.get(&dev.name);
        let taking = self.taking_capacity.get(&i);
        let over = dev.capacity.iter().any(|(name, cap)| {
            let so_far = |m: Option<&BTreeMap<String, i64>>| {
                m.and_then(|m| m.get(name)).copied().unwrap_or(0)
            };
            let mine = if multi { want[name] } else { 0 };
            so_far(earlier) + so_far(taking) + mine > cap.value
                || (req.memory.is_some() && name == "memory" && want[name] > cap.value)
        });
        if over {
            self.constraints_remove(slot.claim, &req.name);
            undo_counters(self);
            return None;
        }
        if multi {
            let sum = self.taking_capacity.entry(i).or_default();
            for (k, v) in &want {
                *sum.entry(k.clone()).or_default() += v;
            }
        } else {
            self.taking.insert(i);
        }
        self.results[slot.claim].push(Allocated {
            request: req.name.clone(),
            device: dev.name.clone(),
            consumed: multi.then_some(want),
        });
        Some(Taken { i, counted, multi })
    }

    fn undo(&mut self, slot: Slot, t: Taken) {
        let result = self.results[slot.claim].pop().expect("a result to undo");
        let name = self.claims[slot.claim].requests[slot.request].name.clone();
        self.constraints_remove(slot.claim, &name);
        if t.multi {
            if let (Some(sum), Some(c)) = (self.taking_capacity.get_mut(&t.i), &result.consumed) {
                for (k, v) in c {
                    *sum.entry(k.clone()).or_default() -= v;
                }
                if sum.values().all(|v| *v == 0) {
                    self.taking_capacity.remove(&t.i);
                }
            }
        } else {
            self.taking.remove(&t.i);
        }
        if t.counted {
            let pool = self.pool;
            self.release_counters(&pool.devices[t.i]);
        }
    }

    fn fill(&mut self, at: usize) -> bool {
        let Some(&slot) = self.slots.get(at) else {
            return true;
        };
        let candidates: Vec<usize> = match slot.must {
            Some(i) => vec![i],
            None => self.order.clone(),
        };
        let (pool, claims) = (self.pool, self.claims);
        let req = &claims[slot.claim].requests[slot.request];
        for i in candidates {
            if slot.must.is_none() && !selects(req, &pool.devices[i]) {
                continue;
            }
            let Some(taken) = self.take(slot, i) else {
                if slot.must.is_some() {
                    return false;
                }
                continue;
            };
            if self.fill(at + 1) {
                return true;
            }
            self.undo(slot, taken);
        }
        false
    }
}

#[derive(Debug, Clone, Copy)]
struct Taken {
    i: usize,
    counted: bool,
    multi: bool,
}

/// Upstream's available counters: every set, less what exclusively
/// allocated devices still in the pool consume.
fn available(pool: &Pool, before: &Allocations) -> BTreeMap<String, BTreeMap<String, i64>> {
    let mut sets = pool.counter_sets.clone();
    for dev in pool
        .devices
        .iter()
        .filter(|d| before.exclusive.contains(&d.name))
    {
        for (set, used) in &dev.consumes {
            if let Some(counters) = sets.get_mut(set) {
                for (k, v) in used {
                    if let Some(have) = counters.get_mut(k) {
                        *have -= v;
                    }
                }
            }
        }
    }
    sets
}

/// Allocates every claim of one pod, or `None` when the scheduler finds no
/// allocation. `order` is the device walk (indices into the pool).
pub fn allocate(
    pool: &Pool,
    claims: &[Claim],
    before: &Allocations,
    order: Vec<usize>,
) -> Option<Vec<Vec<Allocated>>> {
    let mut slots = Vec::new();
    for (c, claim) in claims.iter().enumerate() {
        for (r, req) in claim.requests.iter().enumerate() {
            match req.count {
                Some(n) => slots.extend((0..n).map(|_| Slot {
                    claim: c,
                    request: r,
                    must: None,
                })),
                None => {
                    let all: Vec<usize> = (0..pool.devices.len())
                        .filter(|&i| selects(req, &pool.devices[i]))
                        .collect();
                    if all.is_empty() {
                        return None;
                    }
                    slots.extend(all.into_iter().map(|i| Slot {
                        claim: c,
                        request: r,
                        must: Some(i),
                    }));
                }
            }
        }
    }
    let mut search = Search {
        pool,
        claims,
        before,
        order,
        slots,
        available: available(pool, before),
        consumed: BTreeMap::new(),
        taking: BTreeSet::new(),
        taking_capacity: BTreeMap::new(),
        values: claims
            .iter()
            .map(|c| vec![None; c.constraints.len()])
            .collect(),
        counts: claims
            .iter()
            .map(|c| vec![0; c.constraints.len()])
            .collect(),
        results: vec![Vec::new(); claims.len()],
    };
    search.fill(0).then_some(search.results)
}
