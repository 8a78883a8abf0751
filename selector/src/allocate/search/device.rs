//! What taking one device for a request means: whether it is in use, what
//! it would consume of capacity and counters, the taint and constraint
//! checks, and undoing it (upstream incubating `allocateDevice` and the
//! rollback it returns; `deviceInUse`, `deviceCapacityInUse`). Pure.

use super::{Cursor, Search, Stop, Undo};
use crate::allocate::capacity::{self, Amounts};
use crate::allocate::error::AllocateError;
use crate::allocate::search::Picked;
use crate::allocate::shortfall::Blocker;
use crate::allocate::taints;

impl Search<'_, '_> {
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

    pub(super) fn capacity_fit(
        &self,
        id: usize,
        d: usize,
    ) -> Result<Option<Amounts>, AllocateError> {
        let r = &self.p.requests[id];
        capacity::fit(
            r.capacity.as_ref(),
            &self.p.pool.driver,
            &self.p.pool.devices[d],
            self.held_shared[d].as_ref(),
            self.taking_capacity[d].as_ref(),
        )
        .map_err(|e| AllocateError::Consumption {
            claim: self.p.claims[r.claim].label.clone(),
            request: r.name(),
            device: self.p.pool.devices[d].raw.name.clone(),
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
    fn take_counters(&mut self, d: usize) -> bool {
        self.counters.take(&self.p.pool.devices[d])
    }

    fn give_counters(&mut self, d: usize) {
        self.counters.give(&self.p.pool.devices[d]);
    }

    fn active(&self, i: usize) -> bool {
        self.scope
            .constraints
            .as_ref()
            .is_none_or(|on| on.get(i).copied().unwrap_or(true))
    }

    /// `allocateDevice`: takes `d` for request data `id` if it may.
    pub(super) fn take(
        &mut self,
        c: Cursor,
        id: usize,
        d: usize,
        must: bool,
    ) -> Result<Option<Undo>, Stop> {
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

    pub(super) fn undo(&mut self, claim: usize, id: usize, undo: Undo) {
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
