//! The backtracking search (upstream incubating `allocator_incubating.go`:
//! `Allocate`, `allocateOne`, `allocateDevice`, `checkAvailableCounters`,
//! `deviceInUse`, `deviceCapacityInUse`). Pure.
//!
//! Claims are allocated in order, each request in order, each device of a
//! request in turn; a choice that leaves a later one impossible is undone
//! and the next device tried. Within one request devices are tried only
//! after the one taken before (combinations, not permutations: upstream's
//! `startLocation`), so first fit finds the same allocation upstream does.
//! A `firstAvailable` request takes its first subrequest that lets the
//! rest succeed. An `All` request takes exactly the devices it selects that
//! fit their capacity now (gathered before the search); any one it cannot
//! take fails the claim, and a constraint refusing one is an error.
//!
//! A device is in use when an earlier claim holds it without a share or
//! this search takes it for a claim; one with `allowMultipleAllocations` is
//! never in use, only its capacity is (see `capacity`). Counters: a device
//! that consumes them fits when, for every counter of every set, the set's
//! value less what held devices consume (exclusively or shared) is at least
//! what the devices taken in this search consume; a shared device whose
//! capacity is already in use is not counted again (`skipCounterCheck`).
//! Two places where upstream forgets to give back what it took on a failed
//! attempt (counters when a taint refuses the device, constraints when the
//! capacity check fails late) give it back here.

use std::collections::BTreeMap;

use super::capacity::{self, Amounts};
use super::constraints::Constraint;
use super::error::{AllocateError, PoolError};
use super::input::Held;
use super::pool::Counters;
use super::requests::{Mode, Prepared};
use super::shortfall::Blocker;
use super::taints;
use crate::quantity::Quantity;

/// `AllocationResultsMaxSize`: most devices in one claim's allocation.
pub const MAX_RESULTS: usize = 32;
/// Most devices tried before the search gives up.
pub const STEP_LIMIT: u64 = 2_000_000;

/// What part of the claims to allocate (the whole, for the scheduler's
/// answer; parts, to find what falls short).
#[derive(Debug, Clone, Default)]
pub struct Scope {
    /// Only this request of each claim.
    pub only: Option<usize>,
    /// Only this alternative of a `firstAvailable` request.
    pub sub: Option<usize>,
    /// This count for ExactCount requests in scope.
    pub count: Option<usize>,
    /// Which constraints apply (all when `None`).
    pub constraints: Option<Vec<bool>>,
}

/// One device taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Picked {
    /// The request data.
    pub request: usize,
    /// The device.
    pub device: usize,
    /// What it consumes (devices allowing multiple allocations).
    pub consumed: Option<Amounts>,
}

#[derive(Debug, Clone, Copy)]
struct Cursor {
    claim: usize,
    request: usize,
    sub: usize,
    device: usize,
}

impl Cursor {
    fn claim(claim: usize) -> Self {
        Self {
            claim,
            request: 0,
            sub: 0,
            device: 0,
        }
    }
}

enum Stop {
    Fatal(AllocateError),
    /// `errAllocationResultMaxSizeExceeded`.
    MaxSize,
}

impl From<AllocateError> for Stop {
    fn from(e: AllocateError) -> Self {
        Self::Fatal(e)
    }
}

struct Undo {
    device: usize,
    counted: bool,
    multi: bool,
}

/// One search over prepared claims.
pub struct Search<'p, 'a> {
    p: &'p Prepared<'a>,
    scope: &'p Scope,
    held_devices: Vec<bool>,
    held_shared: Vec<Option<Amounts>>,
    available: Counters,
    consumed: Counters,
    taking: Vec<Vec<usize>>,
    taking_capacity: Vec<Option<Amounts>>,
    constraints: Vec<Vec<Constraint>>,
    /// Per claim, the devices taken.
    pub results: Vec<Vec<Picked>>,
    /// (claim, request) -> the subrequest taken.
    pub chosen: BTreeMap<(usize, usize), usize>,
    all_devices: Vec<Vec<usize>>,
    steps: u64,
}

impl std::fmt::Debug for Search<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Search")
            .field("results", &self.results)
            .field("steps", &self.steps)
            .finish_non_exhaustive()
    }
}

fn held_amounts(held: &Held, name: &str) -> Result<Option<Amounts>, PoolError> {
    let Some(map) = held.shared.get(name) else {
        return Ok(None);
    };
    map.iter()
        .map(|(k, q)| {
            Quantity::parse(&q.0)
                .map(|q| (k.clone(), q))
                .map_err(|source| PoolError::Quantity {
                    place: format!("held device {name}, capacity {k}"),
                    source,
                })
        })
        .collect::<Result<_, _>>()
        .map(Some)
}

impl<'p, 'a> Search<'p, 'a> {
    /// A search of `scope` against what `held` holds.
    pub fn new(p: &'p Prepared<'a>, held: &Held, scope: &'p Scope) -> Result<Self, AllocateError> {
        let devices = &p.pool.devices;
        let held_devices: Vec<bool> = devices
            .iter()
            .map(|d| held.devices.contains(&d.raw.name))
            .collect();
        let held_shared = devices
            .iter()
            .map(|d| held_amounts(held, &d.raw.name))
            .collect::<Result<Vec<_>, _>>()?;
        let mut available = p.pool.counter_sets.clone();
        for (d, device) in devices.iter().enumerate() {
            if !held_devices[d] && held_shared[d].is_none() {
                continue;
            }
            for (set, counters) in &device.consumes {
                let Some(have) = available.get_mut(set) else {
                    continue;
                };
                for (k, v) in counters {
                    if let Some(h) = have.get_mut(k) {
                        *h = h.checked_sub(*v).unwrap_or(*h);
                    }
                }
            }
        }
        let mut search = Self {
            p,
            scope,
            held_devices,
            held_shared,
            available,
            consumed: Counters::new(),
            taking: vec![Vec::new(); devices.len()],
            taking_capacity: vec![None; devices.len()],
            constraints: p
                .claims
                .iter()
                .map(|c| c.constraints.iter().cloned().map(Constraint::new).collect())
                .collect(),
            results: vec![Vec::new(); p.claims.len()],
            chosen: BTreeMap::new(),
            all_devices: vec![Vec::new(); p.requests.len()],
            steps: 0,
        };
        search.gather_all()?;
        search.check_sizes()?;
        Ok(search)
    }

    fn in_scope(&self, request: usize, sub: usize) -> bool {
        self.scope.only.is_none_or(|o| o == request) && self.scope.sub.is_none_or(|s| s == sub)
    }

    /// The devices of every `All` request in scope (upstream
    /// `validateDeviceRequest`): those it selects whose capacity fits now.
    fn gather_all(&mut self) -> Result<(), AllocateError> {
        for claim in &self.p.claims {
            for (r, ids) in claim.requests.iter().enumerate() {
                for (s, &id) in ids.iter().enumerate() {
                    if self.p.requests[id].mode != Mode::All || !self.in_scope(r, s) {
                        continue;
                    }
                    let mut all = Vec::new();
                    for d in 0..self.p.pool.devices.len() {
                        if self.p.selects(id, d)? && self.capacity_fit(id, d)?.is_some() {
                            all.push(d);
                        }
                    }
                    self.all_devices[id] = all;
                }
            }
        }
        Ok(())
    }

    fn need(&self, id: usize) -> usize {
        match (self.p.requests[id].mode, self.scope.count) {
            (Mode::Exact(_), Some(n)) => n,
            (Mode::Exact(n), None) => n,
            (Mode::All, _) => self.all_devices[id].len(),
        }
    }

    /// The claim limit on the least each claim needs.
    fn check_sizes(&self) -> Result<(), AllocateError> {
        for claim in &self.p.claims {
            let least: usize = (claim.requests.iter().enumerate())
                .filter(|(r, _)| self.scope.only.is_none_or(|o| o == *r))
                .map(|(_, ids)| ids.iter().map(|&id| self.need(id)).min().unwrap_or(0))
                .sum();
            if least > MAX_RESULTS {
                return Err(AllocateError::TooManyDevices {
                    claim: claim.label.clone(),
                    devices: least,
                    limit: MAX_RESULTS,
                });
            }
        }
        Ok(())
    }

    /// Runs the search: whether every claim in scope was allocated.
    pub fn run(&mut self) -> Result<bool, AllocateError> {
        match self.allocate_one(Cursor::claim(0), false, 0) {
            Ok(done) => Ok(done),
            Err(Stop::MaxSize) => Ok(false),
            Err(Stop::Fatal(e)) => Err(e),
        }
    }

    fn step(&mut self) -> Result<(), Stop> {
        self.steps += 1;
        if self.steps > STEP_LIMIT {
            return Err(Stop::Fatal(AllocateError::StepLimit(STEP_LIMIT)));
        }
        Ok(())
    }

    fn next_request(c: Cursor) -> Cursor {
        Cursor {
            request: c.request + 1,
            sub: 0,
            device: 0,
            ..c
        }
    }

    /// `allocateOne`.
    fn allocate_one(&mut self, c: Cursor, in_sub: bool, start: usize) -> Result<bool, Stop> {
        self.step()?;
        let p = self.p;
        let Some(claim) = p.claims.get(c.claim) else {
            return Ok(true);
        };
        let Some(ids) = claim.requests.get(c.request) else {
            return match self.allocate_one(Cursor::claim(c.claim + 1), false, 0) {
                Err(Stop::MaxSize) => Ok(false),
                other => other,
            };
        };
        if self.scope.only.is_some_and(|o| o != c.request) {
            return self.allocate_one(Self::next_request(c), false, 0);
        }
        if !in_sub && claim.has_subs[c.request] {
            return self.alternatives(c, ids.len());
        }
        let id = ids[c.sub];
        let all = p.requests[id].mode == Mode::All;
        if all && self.all_devices[id].is_empty() {
            return Ok(false);
        }
        let need = self.need(id);
        if c.device >= need {
            return self.allocate_one(Self::next_request(c), false, 0);
        }
        if self.results[c.claim].len() + need - c.device > MAX_RESULTS {
            return Err(Stop::MaxSize);
        }
        let next = Cursor {
            device: c.device + 1,
            ..c
        };
        if all {
            let d = self.all_devices[id][c.device];
            let Some(undo) = self.take(c, id, d, true)? else {
                return Ok(false);
            };
            let done = self.allocate_one(next, in_sub, 0);
            if !matches!(done, Ok(true)) {
                self.undo(c.claim, id, undo);
            }
            return done;
        }
        for d in start..p.pool.devices.len() {
            self.step()?;
            let r = &p.requests[id];
            let taken_here = self.taking[d].contains(&c.claim);
            if (r.admin && taken_here) || (!r.admin && self.in_use(d)) || !p.selects(id, d)? {
                continue;
            }
            let Some(undo) = self.take(c, id, d, false)? else {
                continue;
            };
            match self.allocate_one(next, in_sub, d + 1) {
                Ok(true) => return Ok(true),
                Ok(false) => self.undo(c.claim, id, undo),
                Err(e) => {
                    self.undo(c.claim, id, undo);
                    return Err(e);
                }
            }
        }
        Ok(false)
    }

    /// The subrequests of a `firstAvailable` request, in order.
    fn alternatives(&mut self, c: Cursor, count: usize) -> Result<bool, Stop> {
        let mut all_too_big = true;
        for sub in 0..count {
            if !self.in_scope(c.request, sub) {
                continue;
            }
            match self.allocate_one(Cursor { sub, ..c }, true, 0) {
                Err(Stop::MaxSize) => continue,
                Err(e) => return Err(e),
                Ok(done) => {
                    all_too_big = false;
                    if done {
                        self.chosen.insert((c.claim, c.request), sub);
                        return Ok(true);
                    }
                }
            }
        }
        if all_too_big {
            Err(Stop::MaxSize)
        } else {
            Ok(false)
        }
    }

    /// `deviceInUse`.
    pub fn in_use(&self, d: usize) -> bool {
        self.held_devices[d] || !self.taking[d].is_empty()
    }

    fn capacity_in_use(&self, d: usize) -> bool {
        self.held_shared[d].is_some() || self.taking_capacity[d].is_some()
    }

    /// Whether taking `d` now draws on counters: it consumes some, and is
    /// not a shared device already in use (`skipCounterCheck`).
    fn draws_counters(&self, d: usize) -> bool {
        let device = &self.p.pool.devices[d];
        let shared_in_use = device.multi && self.capacity_in_use(d);
        !device.consumes.is_empty() && !shared_in_use
    }

    fn capacity_fit(&self, id: usize, d: usize) -> Result<Option<Amounts>, AllocateError> {
        let r = &self.p.requests[id];
        capacity::fit(
            r.capacity.as_ref(),
            &self.p.pool.driver,
            &self.p.pool.devices[d],
            self.held_shared[d].as_ref(),
            self.taking_capacity[d].as_ref(),
        )
        .map_err(|e| AllocateError::Capacity {
            claim: self.p.claims[r.claim].label.clone(),
            request: r.name(),
            capacity: self.p.pool.devices[d].raw.name.clone(),
            problem: e.to_string(),
        })
    }

    /// Why request data `id` cannot take device `d` on its own in this
    /// search's state (before anything is taken), if it cannot.
    pub fn blocker(&mut self, id: usize, d: usize) -> Result<Option<Blocker>, AllocateError> {
        let (p, r) = (self.p, &self.p.requests[id]);
        let device = &p.pool.devices[d];
        if !r.admin && self.in_use(d) {
            return Ok(Some(Blocker::Held));
        }
        if let Some(taint) = taints::preventing(device.raw, r.tolerations) {
            return Ok(Some(Blocker::Tainted {
                taint: taints::show(taint),
            }));
        }
        if self.draws_counters(d) {
            if !self.take_counters(d) {
                return Ok(Some(Blocker::Counters));
            }
            self.give_counters(d);
        }
        Ok(self
            .capacity_fit(id, d)?
            .is_none()
            .then_some(Blocker::Capacity))
    }

    /// `checkAvailableCounters`: takes the device's counters if they fit.
    pub fn take_counters(&mut self, d: usize) -> bool {
        let device = &self.p.pool.devices[d];
        for (set, counters) in &device.consumes {
            let sum = self.consumed.entry(set.clone()).or_default();
            capacity::add(sum, counters);
        }
        let fits = self.available.iter().all(|(set, counters)| {
            counters.iter().all(|(k, have)| {
                let used = self.consumed.get(set).and_then(|c| c.get(k));
                used.is_none_or(|u| have >= u)
            })
        });
        if !fits {
            self.give_counters(d);
        }
        fits
    }

    fn give_counters(&mut self, d: usize) {
        for (set, counters) in &self.p.pool.devices[d].consumes {
            if let Some(sum) = self.consumed.get_mut(set) {
                capacity::sub(sum, counters);
            }
        }
    }

    fn active(&self, i: usize) -> bool {
        self.scope
            .constraints
            .as_ref()
            .is_none_or(|on| on.get(i).copied().unwrap_or(true))
    }

    /// `allocateDevice`: takes `d` for request data `id` if it may.
    fn take(&mut self, c: Cursor, id: usize, d: usize, must: bool) -> Result<Option<Undo>, Stop> {
        let (p, r) = (self.p, &self.p.requests[id]);
        let device = &p.pool.devices[d];
        let multi = device.multi;
        if (!multi && r.admin && self.taking[d].contains(&c.claim)) || (!r.admin && self.in_use(d))
        {
            return Ok(None);
        }
        let counted = self.draws_counters(d);
        if counted && !self.take_counters(d) {
            return Ok(None);
        }
        let give_back = |s: &mut Self| {
            if counted {
                s.give_counters(d);
            }
        };
        if taints::preventing(device.raw, r.tolerations).is_some() {
            give_back(self);
            return Ok(None);
        }
        let n = self.constraints[c.claim].len();
        for i in 0..n {
            if !self.active(i) {
                continue;
            }
            let driver = &p.pool.driver;
            if self.constraints[c.claim][i].add(r.base, r.sub, device.raw, driver) {
                continue;
            }
            if must {
                return Err(Stop::Fatal(AllocateError::AllConstrained {
                    claim: p.claims[c.claim].label.clone(),
                    request: r.name(),
                    device: device.raw.name.clone(),
                }));
            }
            for e in 0..i {
                if self.active(e) {
                    self.constraints[c.claim][e].remove(r.base, r.sub);
                }
            }
            give_back(self);
            return Ok(None);
        }
        let Some(amounts) = self.capacity_fit(id, d)? else {
            self.remove_constraints(c.claim, id);
            give_back(self);
            return Ok(None);
        };
        if multi {
            capacity::add(self.taking_capacity[d].get_or_insert_default(), &amounts);
        } else {
            self.taking[d].push(c.claim);
        }
        self.results[c.claim].push(Picked {
            request: id,
            device: d,
            consumed: multi.then_some(amounts),
        });
        Ok(Some(Undo {
            device: d,
            counted,
            multi,
        }))
    }

    fn remove_constraints(&mut self, claim: usize, id: usize) {
        let r = &self.p.requests[id];
        for i in 0..self.constraints[claim].len() {
            if self.active(i) {
                self.constraints[claim][i].remove(r.base, r.sub);
            }
        }
    }

    fn undo(&mut self, claim: usize, id: usize, undo: Undo) {
        let picked = self.results[claim].pop();
        self.remove_constraints(claim, id);
        let d = undo.device;
        if undo.multi {
            if let (Some(sum), Some(amounts)) = (
                self.taking_capacity[d].as_mut(),
                picked.as_ref().and_then(|p| p.consumed.as_ref()),
            ) && capacity::sub(sum, amounts)
            {
                self.taking_capacity[d] = None;
            }
        } else if let Some(at) = self.taking[d].iter().position(|c| *c == claim) {
            self.taking[d].remove(at);
        }
        if undo.counted {
            self.give_counters(d);
        }
    }
}
