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
//!
//! Part 3, placement when the scheduler chooses (partitionable mode): see
//! `adversarial.rs`. `GPUSLICE_BENCH_PLACEMENT_ONLY` set runs part 3 alone.
//! What it must not do: measure time (no figure here depends on the clock).

mod adversarial;
mod changes;
mod optimum;
mod published;

use gpuslice::gpu::Placement;
use gpuslice::gpu::sim::SimModel;
use gpuslice::mig::{
    ForeignPolicy, MigGeometry, Occupancy, Occupant, Ownership, choose_gpu, first_fit, plan_layout,
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

fn geometry(model: SimModel) -> MigGeometry {
    let profiles = model.spec().mig_profiles();
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
fn expire(layouts: &mut [Occupancy<'_>], requests: &[Request], now: usize) {
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
type GpuPicker = fn(&[Occupancy<'_>], &str) -> Option<(usize, Placement)>;

/// Runs an online policy over the trace; how many requests it accepted.
fn online(g: &MigGeometry, requests: &[Request], gpus: usize, pick: GpuPicker) -> usize {
    let mut layouts = vec![Occupancy::empty(g); gpus];
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

fn first_fit_any(layouts: &[Occupancy<'_>], profile: &str) -> Option<(usize, Placement)> {
    layouts
        .iter()
        .enumerate()
        .find_map(|(gpu, l)| first_fit(l, profile).ok().map(|p| (gpu, p)))
}

/// The static policy: pre-made instances, each free or busy until a step.
fn static_layout(g: &MigGeometry, s: &Scenario, requests: &[Request]) -> usize {
    let Ok(layout) = plan_layout(&Occupancy::empty(g), s.balanced, ForeignPolicy::Keep) else {
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
    let planner = online(&g, &requests, GPUS, choose_gpu);
    let first = online(&g, &requests, GPUS, first_fit_any);
    let fixed = static_layout(&g, s, &requests);
    let known = planner.max(first).max(fixed);
    let (best, label, nodes) = if s.optimum {
        let (best, finished, nodes) = optimum::optimum(
            &g,
            &requests,
            (GPUS, optimum::Admission::MayRefuse),
            known,
            NODE_BUDGET,
        );
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
        <&str>::from(s.model),
        s.steps,
        requests.len(),
        ratio(planner, best),
        ratio(first, best),
        ratio(fixed, best),
    );
}

fn main() {
    if std::env::var_os("GPUSLICE_BENCH_PLACEMENT_ONLY").is_some() {
        adversarial::placement();
        return;
    }
    println!("gpuslice MIG planner bench (seed {SEED:#x}; counts only, no timings)");
    println!();
    println!("Requests accepted on a seeded arrive/depart trace (ratio to the optimum):");
    for s in SCENARIOS {
        admission(s);
    }
    println!();
    for model in [SimModel::H100_80GB, SimModel::A30_24GB] {
        changes::geometry_changes(model, 2000);
    }
    println!();
    adversarial::placement();
}
