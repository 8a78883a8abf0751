//! The offline optimum of the admission bench: exhaustive search over every
//! accept/reject and (GPU, placement) choice, knowing the whole trace.

use std::collections::{HashMap, HashSet};

use gpuslice::mig::{MigGeometry, Occupancy, legal_placements};

use super::{Request, expire, occupant};

/// A GPU's live instances as (profile id, start, depart), sorted.
type GpuKey = Vec<(u32, u32, usize)>;

/// Exhaustive offline search for the most requests any policy could accept.
struct Optimum<'r> {
    requests: &'r [Request],
    best: usize,
    nodes: u64,
    budget: u64,
    /// Whether a request that fits must be accepted (placement only, no
    /// admission control: what a scheduler does).
    must_place: bool,
    finished: bool,
    memo: HashMap<(usize, Vec<GpuKey>), usize>,
}

impl Optimum<'_> {
    fn gpu_key(&self, layout: &Occupancy<'_>) -> GpuKey {
        let mut key: GpuKey = layout
            .occupants()
            .iter()
            .map(|o| {
                let depart = usize::try_from(o.gi_id).map_or(0, |i| self.requests[i].depart);
                (o.profile_id, o.placement.start, depart)
            })
            .collect();
        key.sort_unstable();
        key
    }

    /// An upper bound on how many of the requests from `next` on can still be
    /// accepted: those for which some GPU has room at their arrival even if
    /// every later choice rejected all others (only instances accepted so far
    /// and still live then stand in the way).
    fn still_possible(&self, next: usize, layouts: &[Occupancy<'_>]) -> usize {
        let mut count = 0;
        let mut at_time: Option<(usize, Vec<Occupancy<'_>>)> = None;
        let mut verdicts: HashMap<&str, bool> = HashMap::new();
        for request in &self.requests[next..] {
            if at_time.as_ref().is_none_or(|(t, _)| *t != request.arrive) {
                let mut then = layouts.to_vec();
                expire(&mut then, self.requests, request.arrive);
                at_time = Some((request.arrive, then));
                verdicts.clear();
            }
            let Some((_, then)) = at_time.as_ref() else {
                continue;
            };
            let fits = *verdicts.entry(request.profile).or_insert_with(|| {
                then.iter()
                    .any(|l| legal_placements(l, request.profile).is_ok_and(|p| !p.is_empty()))
            });
            count += usize::from(fits);
        }
        count
    }

    fn search(
        &mut self,
        g: &MigGeometry,
        next: usize,
        mut layouts: Vec<Occupancy<'_>>,
        accepted: usize,
    ) {
        self.nodes += 1;
        if self.nodes > self.budget {
            self.finished = false;
            return;
        }
        if accepted + (self.requests.len() - next) <= self.best {
            return;
        }
        let Some(request) = self.requests.get(next).copied() else {
            self.best = accepted;
            return;
        };
        expire(&mut layouts, self.requests, request.arrive);
        if accepted + self.still_possible(next, &layouts) <= self.best {
            return;
        }
        let keys: Vec<GpuKey> = layouts.iter().map(|l| self.gpu_key(l)).collect();
        let mut canonical = keys.clone();
        canonical.sort_unstable();
        if self
            .memo
            .get(&(next, canonical.clone()))
            .is_some_and(|&seen| seen >= accepted)
        {
            return;
        }
        self.memo.insert((next, canonical), accepted);
        let mut tried = HashSet::new();
        let mut placed = false;
        for gpu in 0..layouts.len() {
            if !tried.insert(&keys[gpu]) {
                continue; // same state as a GPU already tried: same outcomes
            }
            for placement in legal_placements(&layouts[gpu], request.profile).unwrap_or_default() {
                let mut after = layouts.clone();
                if after[gpu]
                    .insert(occupant(g, next, request.profile, placement))
                    .is_ok()
                {
                    placed = true;
                    self.search(g, next + 1, after, accepted + 1);
                }
            }
        }
        if !(self.must_place && placed) {
            self.search(g, next + 1, layouts, accepted);
        }
    }
}

/// How the search may treat a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Admission {
    /// Any request may be refused (the offline optimum).
    MayRefuse,
    /// A request that fits somewhere is placed (the best placements for a
    /// scheduler, which allocates whatever fits).
    PlaceIfFits,
}

/// (optimum or best found, whether the search finished, nodes visited).
pub(super) fn optimum(
    g: &MigGeometry,
    requests: &[Request],
    (gpus, admission): (usize, Admission),
    known: usize,
    budget: u64,
) -> (usize, bool, u64) {
    let mut search = Optimum {
        requests,
        best: known,
        nodes: 0,
        budget,
        must_place: admission == Admission::PlaceIfFits,
        finished: true,
        memo: HashMap::new(),
    };
    search.search(g, 0, vec![Occupancy::empty(g); gpus], 0);
    (search.best, search.finished, search.nodes)
}
