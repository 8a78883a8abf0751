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
//! never in use, only its capacity is (see `capacity`). A device that
//! consumes counters must fit them (see `counters`), but a shared device
//! whose capacity is already in use is not counted again
//! (`skipCounterCheck`).
//! Two places where upstream forgets to give back what it took on a failed
//! attempt (counters when a taint refuses the device, constraints when the
//! capacity check fails late) give it back here.

use std::collections::BTreeMap;

use super::capacity::Amounts;
use super::constraints::Constraint;
use super::counters::Book;
use super::error::{AllocateError, PoolError};
use super::input::Held;
use super::requests::{Mode, Prepared};
use crate::quantity::Quantity;

mod device;

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
    counters: Book,
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
                .map_err(|error| PoolError::Quantity {
                    place: format!("held device {name}, capacity {k}"),
                    error,
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
        let held_at = |d: &usize| held_devices[*d] || held_shared[*d].is_some();
        let counters = Book::new(
            &p.pool.counter_sets,
            (0..devices.len()).filter(held_at).map(|d| &devices[d]),
        );
        let mut search = Self {
            p,
            scope,
            held_devices,
            held_shared,
            counters,
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
        if self.hopeless()? {
            return Ok(false);
        }
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
        if self.too_few_left(id, start, need - c.device) {
            return Ok(false);
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

    /// Whether fewer than `wanted` devices from `start` on could still be
    /// taken for request data `id` (not in use, selected). Upstream has no
    /// such bound and tries every combination before it gives up; the bound
    /// cuts only branches without a solution, so the answer and the first
    /// solution found are upstream's. A device whose selectors fail ends the
    /// count: upstream's walk would reach it and raise the error, so this
    /// walk does too.
    fn too_few_left(&self, id: usize, start: usize, wanted: usize) -> bool {
        let admin = self.p.requests[id].admin;
        let mut left = 0;
        for d in start..self.p.pool.devices.len() {
            if !admin && self.in_use(d) {
                continue;
            }
            match self.p.selects(id, d) {
                Ok(true) => left += 1,
                Ok(false) => {}
                // Upstream's walk reaches it and raises the error: walk.
                Err(_) => return false,
            }
            if left >= wanted {
                return false;
            }
        }
        true
    }

    /// Whether some request in scope can never be satisfied, whatever the
    /// requests before it take: an `All` request with no device it can
    /// take, or an ExactCount one selecting fewer devices than it asks that
    /// are not held already. Upstream has no such check: it tries every
    /// combination of the requests before it (past any step limit with a
    /// few MIG GPUs published partitionable) and then answers the same, no
    /// allocation. Not decided when the walk could stop with an error first
    /// (a selector failing on a device, a capacity it cannot account for,
    /// an `All` request in a claim with constraints): the walk then runs
    /// as upstream's does.
    fn hopeless(&self) -> Result<bool, AllocateError> {
        let p = self.p;
        let mut hopeless = false;
        for claim in &p.claims {
            let mut in_scope = (claim.requests.iter().enumerate())
                .filter(|(r, _)| self.scope.only.is_none_or(|o| o == *r));
            if !claim.constraints.is_empty()
                && in_scope.any(|(_, ids)| ids.iter().any(|&id| p.requests[id].mode == Mode::All))
            {
                return Ok(false);
            }
            for (r, ids) in claim.requests.iter().enumerate() {
                if self.scope.only.is_some_and(|o| o != r) {
                    continue;
                }
                let mut possible = false;
                for (s, &id) in ids.iter().enumerate() {
                    if !self.in_scope(r, s) {
                        continue;
                    }
                    let Some(takeable) = self.takeable(id)? else {
                        return Ok(false);
                    };
                    possible |= takeable >= self.need(id).max(1);
                }
                hopeless |= !possible;
            }
        }
        Ok(hopeless)
    }

    /// How many devices request data `id` could take on an empty search
    /// (selected, not held unless it has admin access, their capacity
    /// enough now: the search only takes more of it); `None` when a
    /// selector or a capacity errs on one.
    fn takeable(&self, id: usize) -> Result<Option<usize>, AllocateError> {
        let r = &self.p.requests[id];
        if r.mode == Mode::All {
            return Ok(Some(self.all_devices[id].len()));
        }
        let mut count = 0;
        for d in 0..self.p.pool.devices.len() {
            match self.p.selects(id, d) {
                Ok(true) => {}
                Ok(false) => continue,
                Err(_) => return Ok(None),
            }
            match self.capacity_fit(id, d) {
                Ok(Some(_)) if r.admin || !self.in_use(d) => count += 1,
                Ok(_) => {}
                Err(_) => return Ok(None),
            }
        }
        Ok(Some(count))
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
}
