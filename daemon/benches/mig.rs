//! MIG planner benchmark: requests accepted on a seeded trace, and op counts of
//! geometry changes. Prints tables; figures go to bench/README.md.
//!
//! Part 1, admission: a deterministic trace of MIG requests (a profile each,
//! living some steps) arrives at 8 GPUs of one model. Four policies see it:
//! * planner: `choose_gpu` (least capacity lost, then `choose_placement`);
//! * first-fit: the first GPU and lowest start where the profile fits;
//! * static: each GPU pre-partitioned once into a balanced mix (`plan_layout`),
//!   a request takes a free pre-made instance of its profile or is refused;
//! * optimum: exhaustive search over every accept/reject and every (GPU,
//!   placement) choice, knowing the whole trace, memoised on canonical node
//!   states; it reports whether it finished within its node budget.
//!
//! Part 2, geometry changes: seeded random (current, target) layouts on one
//! GPU with some instances held by claims; op count of `diff` against the
//! lower bound (symmetric difference) and against teardown-and-rebuild.
//! What it must not do: measure time (no figure here depends on the clock).

use std::collections::{HashMap, HashSet};

use gpuslice::gpu::sim::{GiProfile, SimModel};
use gpuslice::gpu::{MigProfile, Placement};
use gpuslice::mig::{
    ForeignPolicy, MigGeometry, MigLayout, Occupant, Ownership, TargetInstance, choose_gpu, diff,
    first_fit, legal_placements, plan_layout,
};

const GPUS: usize = 8;
const SEED: u64 = 0x6d69_6721;
/// Most search nodes the optimum may visit per trace before it gives up.
const NODE_BUDGET: u64 = 3_000_000;

/// One benchmark scenario: a model, its request mix and its static layout.
struct Scenario {
    model: SimModel,
    /// (profile, weight) of arriving requests.
    mix: &'static [(&'static str, u32)],
    /// The balanced layout the static policy pre-creates on every GPU.
    balanced: &'static [&'static str],
    steps: usize,
    max_arrivals: u64,
    max_life: u64,
    /// Whether to run the exhaustive search (short traces only).
    optimum: bool,
}

const H100_MIX: &[(&str, u32)] = &[
    ("1g.10gb", 30),
    ("1g.20gb", 10),
    ("2g.20gb", 25),
    ("3g.40gb", 20),
    ("4g.40gb", 10),
    ("7g.80gb", 5),
];
const H100_HEAVY: &[(&str, u32)] = &[
    ("1g.10gb", 25),
    ("2g.20gb", 20),
    ("3g.40gb", 30),
    ("4g.40gb", 15),
    ("7g.80gb", 10),
];
const H100_BALANCED: &[&str] = &["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"];
const A30_MIX: &[(&str, u32)] = &[("1g.6gb", 50), ("2g.12gb", 35), ("4g.24gb", 15)];
const A30_BALANCED: &[&str] = &["2g.12gb", "1g.6gb", "1g.6gb"];

/// Long traces (heuristics only) and short saturated ones (with the optimum).
const SCENARIOS: &[Scenario] = &[
    Scenario {
        model: SimModel::H100_80GB,
        mix: H100_MIX,
        balanced: H100_BALANCED,
        steps: 24,
        max_arrivals: 4,
        max_life: 24,
        optimum: false,
    },
    Scenario {
        model: SimModel::H100_80GB,
        mix: H100_HEAVY,
        balanced: H100_BALANCED,
        steps: 6,
        max_arrivals: 8,
        max_life: 8,
        optimum: true,
    },
    Scenario {
        model: SimModel::A30_24GB,
        mix: A30_MIX,
        balanced: A30_BALANCED,
        steps: 24,
        max_arrivals: 4,
        max_life: 24,
        optimum: false,
    },
    Scenario {
        model: SimModel::A30_24GB,
        mix: A30_MIX,
        balanced: A30_BALANCED,
        steps: 6,
        max_arrivals: 8,
        max_life: 8,
        optimum: true,
    },
];

/// splitmix64: a tiny deterministic generator, enough for a trace.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in 0..n (n > 0).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn index(&mut self, n: usize) -> usize {
        usize::try_from(self.below(u64::try_from(n).unwrap_or(1).max(1))).unwrap_or(0)
    }
}

/// One request of the trace.
#[derive(Debug, Clone, Copy)]
struct Request {
    arrive: usize,
    depart: usize,
    profile: &'static str,
}

fn mig_profile(p: &GiProfile) -> MigProfile {
    MigProfile {
        name: p.name.to_owned(),
        index: p.index,
        id: p.id,
        memory_slices: p.memory_slices,
        compute_slices: p.compute_slices,
        multiprocessors: p.sm_count,
        memory_bytes: p.memory_mib << 20,
        copy_engines: p.engines.copy,
        decoders: p.engines.decoders,
        encoders: p.engines.encoders,
        jpegs: p.engines.jpeg,
        ofas: p.engines.ofa,
        max_count: p.max_count,
        placements: p.placements.to_vec(),
    }
}

fn geometry(model: SimModel) -> MigGeometry {
    let profiles = model.spec().gi_profiles.iter().map(mig_profile).collect();
    MigGeometry::new(profiles).unwrap_or_else(|e| panic!("{model}: {e}"))
}

fn trace(s: &Scenario, rng: &mut Rng) -> Vec<Request> {
    let total: u32 = s.mix.iter().map(|(_, w)| w).sum();
    let mut requests = Vec::new();
    for arrive in 0..s.steps {
        for _ in 0..1 + rng.below(s.max_arrivals) {
            let mut pick = u32::try_from(rng.below(u64::from(total))).unwrap_or(0);
            let profile = s.mix.iter().find(|(_, w)| {
                let hit = pick < *w;
                pick = pick.saturating_sub(*w);
                hit
            });
            let life = usize::try_from(1 + rng.below(s.max_life)).unwrap_or(1);
            requests.push(Request {
                arrive,
                depart: arrive + life,
                profile: profile.map_or("", |p| p.0),
            });
        }
    }
    requests
}

fn occupant(g: &MigGeometry, id: usize, profile: &str, placement: Placement) -> Occupant {
    Occupant {
        gi_id: u32::try_from(id).unwrap_or(u32::MAX),
        profile_id: g.profile(profile).map_or(0, |p| p.id),
        placement,
        ownership: Ownership::Held,
    }
}

/// Releases every instance whose request departs at or before `now`.
fn expire(layouts: &mut [MigLayout<'_>], requests: &[Request], now: usize) {
    for layout in layouts.iter_mut() {
        let gone: Vec<u32> = layout
            .occupants()
            .iter()
            .filter(|o| usize::try_from(o.gi_id).is_ok_and(|i| requests[i].depart <= now))
            .map(|o| o.gi_id)
            .collect();
        for gi_id in gone {
            layout.remove(gi_id);
        }
    }
}

/// An online policy: which GPU and placement a request gets, if any.
type GpuPicker = fn(&[MigLayout<'_>], &str) -> Option<(usize, Placement)>;

/// Runs an online policy over the trace; how many requests it accepted.
fn online(g: &MigGeometry, requests: &[Request], pick: GpuPicker) -> usize {
    let mut layouts = vec![MigLayout::empty(g); GPUS];
    let mut accepted = 0;
    for (id, r) in requests.iter().enumerate() {
        expire(&mut layouts, requests, r.arrive);
        if let Some((gpu, placement)) = pick(&layouts, r.profile)
            && layouts[gpu]
                .insert(occupant(g, id, r.profile, placement))
                .is_ok()
        {
            accepted += 1;
        }
    }
    accepted
}

fn first_fit_any(layouts: &[MigLayout<'_>], profile: &str) -> Option<(usize, Placement)> {
    layouts
        .iter()
        .enumerate()
        .find_map(|(gpu, l)| first_fit(l, profile).ok().map(|p| (gpu, p)))
}

/// The static policy: pre-made instances, each free or busy until a step.
fn static_layout(g: &MigGeometry, s: &Scenario, requests: &[Request]) -> usize {
    let Ok(layout) = plan_layout(&MigLayout::empty(g), s.balanced, ForeignPolicy::Keep) else {
        panic!("{}: balanced layout {:?} does not fit", s.model, s.balanced);
    };
    // (profile id, busy until) per pre-made instance, GPU after GPU.
    let mut slots: Vec<(u32, usize)> = (0..GPUS)
        .flat_map(|_| layout.iter().map(|t| (t.profile_id, 0)))
        .collect();
    let mut accepted = 0;
    for r in requests {
        let id = g.profile(r.profile).map_or(u32::MAX, |p| p.id);
        if let Some(slot) = slots
            .iter_mut()
            .find(|(p, busy)| *p == id && *busy <= r.arrive)
        {
            slot.1 = r.depart;
            accepted += 1;
        }
    }
    accepted
}

/// A GPU's live instances as (profile id, start, depart), sorted.
type GpuKey = Vec<(u32, u32, usize)>;

/// Exhaustive offline search for the most requests any policy could accept.
struct Optimum<'r> {
    requests: &'r [Request],
    best: usize,
    nodes: u64,
    finished: bool,
    memo: HashMap<(usize, Vec<GpuKey>), usize>,
}

impl Optimum<'_> {
    fn gpu_key(&self, layout: &MigLayout<'_>) -> GpuKey {
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
    fn still_possible(&self, next: usize, layouts: &[MigLayout<'_>]) -> usize {
        let mut count = 0;
        let mut at_time: Option<(usize, Vec<MigLayout<'_>>)> = None;
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
        mut layouts: Vec<MigLayout<'_>>,
        accepted: usize,
    ) {
        self.nodes += 1;
        if self.nodes > NODE_BUDGET {
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
                    self.search(g, next + 1, after, accepted + 1);
                }
            }
        }
        self.search(g, next + 1, layouts, accepted);
    }
}

/// (optimum or best found, whether the search finished, nodes visited).
fn optimum(g: &MigGeometry, requests: &[Request], known: usize) -> (usize, bool, u64) {
    let mut search = Optimum {
        requests,
        best: known,
        nodes: 0,
        finished: true,
        memo: HashMap::new(),
    };
    search.search(g, 0, vec![MigLayout::empty(g); GPUS], 0);
    (search.best, search.finished, search.nodes)
}

fn ratio(part: usize, whole: usize) -> String {
    let (part, whole) = (
        u32::try_from(part).unwrap_or(0),
        u32::try_from(whole).unwrap_or(0),
    );
    if whole == 0 {
        "-".to_owned()
    } else {
        format!("{:.3}", f64::from(part) / f64::from(whole))
    }
}

fn admission(s: &Scenario) {
    let g = geometry(s.model);
    let requests = trace(s, &mut Rng(SEED));
    let planner = online(&g, &requests, choose_gpu);
    let first = online(&g, &requests, first_fit_any);
    let fixed = static_layout(&g, s, &requests);
    let known = planner.max(first).max(fixed);
    let (best, label, nodes) = if s.optimum {
        let (best, finished, nodes) = optimum(&g, &requests, known);
        (
            best,
            if finished {
                "optimum"
            } else {
                "best found (budget hit, not proven)"
            },
            nodes,
        )
    } else {
        (known, "best of the three (no search)", 0)
    };
    println!(
        "{:<10} steps={:<2} requests={:<3} planner={planner:<3} ({}) first-fit={first:<3} ({}) \
         static={fixed:<3} ({}) {label}={best} [{nodes} search nodes]",
        s.model.as_str(),
        s.steps,
        requests.len(),
        ratio(planner, best),
        ratio(first, best),
        ratio(fixed, best),
    );
}

/// Adds up to `attempts` random legal instances to `layout`.
fn fill(
    layout: &mut MigLayout<'_>,
    rng: &mut Rng,
    attempts: u64,
    held_one_in: u64,
    next_id: &mut u32,
) {
    let g = layout.geometry();
    for _ in 0..rng.below(attempts + 1) {
        let profile = &g.profiles()[rng.index(g.profiles().len())];
        let legal = legal_placements(layout, &profile.name).unwrap_or_default();
        if legal.is_empty() {
            continue;
        }
        let held = held_one_in > 0 && rng.below(held_one_in) == 0;
        *next_id += 1;
        let occupant = Occupant {
            gi_id: *next_id,
            profile_id: profile.id,
            placement: legal[rng.index(legal.len())],
            ownership: if held {
                Ownership::Held
            } else {
                Ownership::Ours
            },
        };
        let _always_legal = layout.insert(occupant);
    }
}

/// Sums over the pairs of one kind of geometry change.
#[derive(Default)]
struct Totals {
    pairs: usize,
    diff_ops: usize,
    lower_bound: usize,
    teardown_ops: usize,
    at_bound: usize,
    held_teardown_destroys: usize,
}

impl Totals {
    fn print(&self, what: &str) {
        println!(
            "  {what:<34} pairs={} diff ops={} lower bound={} ({} of pairs at it) teardown+rebuild ops={} \
             diff/bound={} diff/teardown={} held instances teardown would destroy={}",
            self.pairs,
            self.diff_ops,
            self.lower_bound,
            ratio(self.at_bound, self.pairs),
            self.teardown_ops,
            ratio(self.diff_ops, self.lower_bound),
            ratio(self.diff_ops, self.teardown_ops),
            self.held_teardown_destroys,
        );
    }

    fn add(&mut self, current: &MigLayout<'_>, target: &[TargetInstance], ops: usize) {
        let now: HashSet<TargetInstance> = current
            .occupants()
            .iter()
            .map(TargetInstance::from)
            .collect();
        let want: HashSet<TargetInstance> = target.iter().copied().collect();
        let bound = now.symmetric_difference(&want).count();
        self.pairs += 1;
        self.diff_ops += ops;
        self.lower_bound += bound;
        self.at_bound += usize::from(ops == bound);
        self.teardown_ops += now.len() + want.len();
        self.held_teardown_destroys += current
            .occupants()
            .iter()
            .filter(|o| o.ownership == Ownership::Held)
            .count();
    }
}

fn geometry_changes(model: SimModel, pairs: usize) {
    let g = geometry(model);
    let mut rng = Rng(SEED ^ 0x9e0);
    let (mut placed, mut mixes) = (Totals::default(), Totals::default());
    let mut next_id = 0;
    for _ in 0..pairs {
        let mut current = MigLayout::empty(&g);
        fill(&mut current, &mut rng, 8, 3, &mut next_id);
        let held: Vec<Occupant> = current
            .occupants()
            .iter()
            .filter(|o| o.ownership == Ownership::Held)
            .copied()
            .collect();
        // A target with placements: the held instances plus a random fill.
        let mut target = MigLayout::new(&g, held).unwrap_or_else(|e| panic!("{e}"));
        fill(&mut target, &mut rng, 8, 0, &mut next_id);
        let explicit: Vec<TargetInstance> = target
            .occupants()
            .iter()
            .map(TargetInstance::from)
            .collect();
        if let Ok(plan) = diff(&current, &explicit, ForeignPolicy::Keep) {
            placed.add(&current, &explicit, plan.steps.len());
        }
        // A target as a profile mix (a static layout): plan_layout picks places.
        let names: Vec<&str> = explicit
            .iter()
            .filter_map(|t| g.profile_by_id(t.profile_id).ok().map(|p| p.name.as_str()))
            .collect();
        if let Ok(chosen) = plan_layout(&current, &names, ForeignPolicy::Keep)
            && let Ok(plan) = diff(&current, &chosen, ForeignPolicy::Keep)
        {
            mixes.add(&current, &chosen, plan.steps.len());
        }
    }
    println!("{model}: geometry changes, 1 in 3 current instances held by a claim");
    placed.print("target given with placements:");
    mixes.print("target given as a profile mix:");
}

fn main() {
    println!("gpuslice MIG planner bench (seed {SEED:#x}; counts only, no timings)");
    println!();
    println!("Requests accepted on a seeded arrive/depart trace (ratio to the optimum):");
    for s in SCENARIOS {
        admission(s);
    }
    println!();
    for model in [SimModel::H100_80GB, SimModel::A30_24GB] {
        geometry_changes(model, 2000);
    }
}
