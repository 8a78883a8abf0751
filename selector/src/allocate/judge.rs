//! The question a user asks of one claim: can it be allocated on this node
//! now (with what other claims hold), and on an empty node; and when not,
//! what falls short. The claim is judged as the only claim of its pod.
//! Pure.
//!
//! What falls short is found by asking the allocator smaller questions in
//! the state that failed: each request alone (every alternative of a
//! `firstAvailable` request; it falls short when none fits), without
//! constraints: its devices there, on an empty node and free now, and how
//! many it can take together; then the requests together without
//! constraints; then each constraint alone.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::resource::v1::{DeviceClass, ResourceClaim, ResourceSliceSpec};
use serde::Serialize;

use super::constraints::{covers, lookup};
use super::error::AllocateError;
use super::input::Held;
use super::pool::Pool;
use super::requests::{Mode, Prepared};
use super::search::{Scope, Search};
use super::shortfall::{Blocked, Blocker, Shortfall, When};

/// One device the allocation gives a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Assigned {
    /// `request` or `request/subrequest`.
    pub request: String,
    /// The device.
    pub device: String,
}

/// How a claim fares in one state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "fits", rename_all = "snake_case")]
pub enum Fit {
    /// Allocated (first fit, as the scheduler walks).
    Yes {
        /// What each request gets.
        devices: Vec<Assigned>,
    },
    /// Not allocated.
    No {
        /// Why.
        shortfalls: Vec<Shortfall>,
    },
}

impl Fit {
    /// Whether it fits.
    pub fn fits(&self) -> bool {
        matches!(self, Self::Yes { .. })
    }
}

/// How a claim fares now and on an empty node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Judgement {
    /// With what is held now.
    pub now: Fit,
    /// With nothing held.
    pub empty_node: Fit,
}

/// Judges `claim` on the pool of `slices`, `held` being what other claims
/// hold now. An error means the pool is unreadable or the search gave up.
pub fn judge(
    slices: &[ResourceSliceSpec],
    classes: &[DeviceClass],
    claim: &ResourceClaim,
    held: &Held,
) -> Result<Judgement, AllocateError> {
    let pool = Pool::new(slices)?;
    let p = match Prepared::new(pool, classes, std::slice::from_ref(claim)) {
        Ok(p) => p,
        Err(e) if e.is_about_claims() => {
            let refused = Fit::No {
                shortfalls: vec![Shortfall::Refused {
                    message: e.to_string(),
                }],
            };
            return Ok(Judgement {
                now: refused.clone(),
                empty_node: refused,
            });
        }
        Err(e) => return Err(e),
    };
    let judge = Judge { p: &p, now: held };
    Ok(Judgement {
        now: judge.fit(held, When::Now)?,
        empty_node: judge.fit(&Held::default(), When::EmptyNode)?,
    })
}

struct Judge<'p, 'a> {
    p: &'p Prepared<'a>,
    now: &'p Held,
}

/// What the request data of each request is, alone.
struct Alone {
    shortfall: Option<Shortfall>,
    /// Devices it could take alone in the judged state.
    free: Vec<usize>,
    needs: usize,
}

impl Judge<'_, '_> {
    fn run(&self, state: &Held, scope: &Scope) -> Result<bool, AllocateError> {
        Search::new(self.p, state, scope)?.run()
    }

    fn fit(&self, state: &Held, when: When) -> Result<Fit, AllocateError> {
        let scope = Scope::default();
        let found = Search::new(self.p, state, &scope).and_then(|mut s| {
            let done = s.run()?;
            Ok(done.then(|| self.assigned(&s)))
        });
        let shortfalls = match found {
            Ok(Some(devices)) => return Ok(Fit::Yes { devices }),
            Ok(None) => self.diagnose(state, when),
            Err(e) => Err(e),
        };
        match shortfalls {
            Ok(shortfalls) => Ok(Fit::No { shortfalls }),
            Err(e) if e.is_about_claims() => Ok(Fit::No {
                shortfalls: vec![Shortfall::Refused {
                    message: e.to_string(),
                }],
            }),
            Err(e) => Err(e),
        }
    }

    fn assigned(&self, search: &Search<'_, '_>) -> Vec<Assigned> {
        search.results[0]
            .iter()
            .map(|picked| Assigned {
                request: self.p.requests[picked.request].name(),
                device: self.p.pool.devices[picked.device].raw.name.clone(),
            })
            .collect()
    }

    fn no_constraints(&self) -> Option<Vec<bool>> {
        Some(vec![false; self.p.claims[0].constraints.len()])
    }

    fn diagnose(&self, state: &Held, when: When) -> Result<Vec<Shortfall>, AllocateError> {
        let claim = &self.p.claims[0];
        let mut short = Vec::new();
        let mut chosen = Vec::new();
        for (r, ids) in claim.requests.iter().enumerate() {
            let mut missing = Vec::new();
            let mut fits = None;
            for (s, &id) in ids.iter().enumerate() {
                let alone = self.alone(state, when, r, s, id)?;
                match alone.shortfall {
                    None => {
                        fits = Some((id, alone));
                        break;
                    }
                    Some(shortfall) => missing.push(shortfall),
                }
            }
            match fits {
                Some(found) => chosen.push(found),
                None => short.extend(missing),
            }
        }
        if !short.is_empty() {
            return Ok(short);
        }
        let free_of_constraints = Scope {
            constraints: self.no_constraints(),
            ..Scope::default()
        };
        if !self.run(state, &free_of_constraints)? {
            let free: BTreeSet<usize> = chosen.iter().flat_map(|(_, a)| a.free.clone()).collect();
            return Ok(vec![Shortfall::Together {
                requests: chosen
                    .iter()
                    .map(|(id, _)| self.p.requests[*id].name())
                    .collect(),
                needs: chosen.iter().map(|(_, a)| a.needs).sum(),
                free: free.len(),
                when,
            }]);
        }
        for i in 0..claim.constraints.len() {
            let mut on = vec![false; claim.constraints.len()];
            on[i] = true;
            let scope = Scope {
                constraints: Some(on),
                ..Scope::default()
            };
            if !self.run(state, &scope)? {
                short.push(self.constraint(i, &chosen, when));
            }
        }
        if short.is_empty() {
            short.push(Shortfall::Constraints {
                attributes: claim
                    .constraints
                    .iter()
                    .map(|c| c.attribute.clone())
                    .collect(),
            });
        }
        Ok(short)
    }

    /// Request `r` (alternative `s`, request data `id`) alone, without
    /// constraints.
    fn alone(
        &self,
        state: &Held,
        when: When,
        r: usize,
        s: usize,
        id: usize,
    ) -> Result<Alone, AllocateError> {
        let scope = Scope {
            only: Some(r),
            sub: Some(s),
            constraints: self.no_constraints(),
            count: None,
        };
        let fits = self.run(state, &scope)?;
        let empty = Held::default();
        let probe = |held: &Held| -> Result<BTreeMap<usize, Option<_>>, AllocateError> {
            let mut search = Search::new(self.p, held, &scope)?;
            let mut out = BTreeMap::new();
            for d in 0..self.p.pool.devices.len() {
                // A device its selectors fail on is not counted: had the
                // search considered it, the claim would have been refused.
                if self.p.selects(id, d).unwrap_or(false) {
                    out.insert(d, search.blocker(id, d)?);
                }
            }
            Ok(out)
        };
        let on_empty = probe(&empty)?;
        let on_now = probe(self.now)?;
        let judged = if when == When::Now {
            &on_now
        } else {
            &on_empty
        };
        let free: Vec<usize> = judged
            .iter()
            .filter(|(_, b)| b.is_none())
            .map(|(d, _)| *d)
            .collect();
        let request = &self.p.requests[id];
        let all = request.mode == Mode::All;
        let needs = match request.mode {
            Mode::Exact(n) => n,
            Mode::All => judged
                .values()
                .filter(|b| !matches!(b, Some(Blocker::Capacity)))
                .count(),
        };
        if fits {
            return Ok(Alone {
                shortfall: None,
                free,
                needs,
            });
        }
        let together = match request.mode {
            Mode::Exact(n) if free.len() >= n => Some(self.together(state, &scope, n)?),
            _ => None,
        };
        let blocked = judged
            .iter()
            .filter_map(|(d, b)| {
                let blocker = b.clone()?;
                let capacity_only = all && blocker == Blocker::Capacity;
                (!capacity_only).then(|| Blocked {
                    device: self.p.pool.devices[*d].raw.name.clone(),
                    blocker,
                })
            })
            .collect();
        let count = |m: &BTreeMap<usize, Option<_>>| m.values().filter(|b| b.is_none()).count();
        Ok(Alone {
            shortfall: Some(Shortfall::Devices {
                request: request.name(),
                class: request.class.to_owned(),
                own_selectors: request.own_selectors,
                all,
                needs,
                exist: on_empty.len(),
                usable: count(&on_empty),
                free: count(&on_now),
                together,
                when,
                blocked,
            }),
            free,
            needs,
        })
    }

    /// The most devices a request takes together (fewer than `n`).
    fn together(&self, state: &Held, scope: &Scope, n: usize) -> Result<usize, AllocateError> {
        for k in (1..n).rev() {
            let fewer = Scope {
                count: Some(k),
                ..scope.clone()
            };
            if self.run(state, &fewer)? {
                return Ok(k);
            }
        }
        Ok(0)
    }

    /// Constraint `i`: the largest set of free devices of the requests it
    /// covers that meets it.
    fn constraint(&self, i: usize, chosen: &[(usize, Alone)], when: When) -> Shortfall {
        let spec = &self.p.claims[0].constraints[i];
        let covered: Vec<&(usize, Alone)> = chosen
            .iter()
            .filter(|(id, _)| {
                let r = &self.p.requests[*id];
                covers(&spec.requests, r.base, r.sub)
            })
            .collect();
        let needs: usize = covered.iter().map(|(_, a)| a.needs).sum();
        let devices: BTreeSet<usize> = covered.iter().flat_map(|(_, a)| a.free.clone()).collect();
        let mut groups: BTreeMap<String, usize> = BTreeMap::new();
        for d in devices {
            let device = self.p.pool.devices[d].raw;
            if let Some(v) = lookup(device, &self.p.pool.driver, &spec.attribute) {
                *groups.entry(v.to_string()).or_default() += 1;
            }
        }
        let (best, value) = if spec.distinct {
            (groups.len(), None)
        } else {
            let top = groups
                .iter()
                .max_by_key(|(v, n)| (**n, std::cmp::Reverse((*v).clone())));
            top.map_or((0, None), |(v, n)| (*n, Some(v.clone())))
        };
        Shortfall::Constraint {
            attribute: spec.attribute.clone(),
            distinct: spec.distinct,
            requests: spec.requests.clone(),
            needs,
            best: best.min(needs),
            value,
            when,
        }
    }
}
