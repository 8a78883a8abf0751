//! Part 3 of the bench, placement when the scheduler chooses (partitionable
//! mode): adversarial traces served by the allocator's first fit over a
//! publication order, against the layout-mode planner and the offline optimum.
//!
//! The node is the real scan (`Inventory::from_backend`, `advertise =
//! "partitionable"`) of simulated GPUs, so the published order is the one
//! gpusliced publishes; the other orders are permutations of the same devices
//! for comparison. Traces: 1g/2g/3g/4g/7g mixes, and long-lived small slices
//! among churn of large ones, on A100-40GB, A100-80GB and H100-80GB.

use gpuslice::config::{MigConfig, MigGpuConfig, MigOffering};
use gpuslice::gpu::sim::{SimBackend, SimModel};
use gpuslice::gpu::{GpuBackend, MigMode};
use gpuslice::inventory::Inventory;
use gpuslice::mig::{MigGeometry, Occupancy, Ownership, choose_gpu};

use super::optimum::{self, Admission};
use super::published::{
    Device, Packing, PositionOf, Publication, draw, fits, from_inventory, pick, rescored,
};
use super::{Request, Rng, SEED, geometry, occupant, online, ratio};

/// Seeds of the slice order (the informer's map order) per trace.
const SLICE_SEEDS: u64 = 8;
/// Most search nodes per trace for the optimum.
const SEARCH_BUDGET: u64 = 200_000;

/// One class of request: a profile size, its weight and its lifetimes.
struct Class {
    compute: u32,
    weight: u32,
    life: (u64, u64),
}

struct Trace {
    name: &'static str,
    classes: &'static [Class],
}

/// A node size and trace length: short traces on 3 GPUs, where the search
/// finishes, and long ones on 8 GPUs (the slice packing of a full node).
struct Size {
    gpus: usize,
    steps: usize,
    arrivals: (u64, u64),
    traces: u64,
    search: bool,
}

const SIZES: [Size; 2] = [
    Size {
        gpus: 3,
        steps: 10,
        arrivals: (1, 3),
        traces: 4,
        search: true,
    },
    Size {
        gpus: 8,
        steps: 40,
        arrivals: (2, 6),
        traces: 2,
        search: false,
    },
];

const fn class(compute: u32, weight: u32, life: (u64, u64)) -> Class {
    Class {
        compute,
        weight,
        life,
    }
}

const MIX: Trace = Trace {
    name: "1g-7g mix",
    classes: &[
        class(1, 30, (1, 10)),
        class(2, 20, (1, 10)),
        class(3, 20, (1, 10)),
        class(4, 15, (1, 10)),
        class(7, 15, (1, 10)),
    ],
};

const SMALL_AMONG_LARGE: Trace = Trace {
    name: "long 1g/2g, churning 3g-7g",
    classes: &[
        class(1, 25, (10, 30)),
        class(2, 10, (10, 30)),
        class(3, 20, (1, 3)),
        class(4, 20, (1, 3)),
        class(7, 25, (1, 3)),
    ],
};

const HALVES: Trace = Trace {
    name: "3g/4g halves, 1g/2g",
    classes: &[
        class(1, 20, (2, 12)),
        class(2, 20, (2, 12)),
        class(3, 30, (2, 12)),
        class(4, 30, (2, 12)),
    ],
};

const TRACES: [&Trace; 3] = [&MIX, &SMALL_AMONG_LARGE, &HALVES];
const MODELS: [SimModel; 3] = [
    SimModel::A100_40GB,
    SimModel::A100_80GB,
    SimModel::H100_80GB,
];

/// The model's plain profile with `compute` compute slices and the least
/// memory ("1g.10gb", not "1g.20gb" or "1g.10gb+me").
fn profile_name(g: &MigGeometry, compute: u32) -> &'static str {
    let profile = g
        .profiles()
        .iter()
        .filter(|p| p.compute_slices == compute && !p.name.contains('+'))
        .min_by_key(|p| p.memory_slices)
        .unwrap_or_else(|| panic!("no {compute}g profile"));
    Box::leak(profile.name.clone().into_boxed_str())
}

fn trace(t: &Trace, g: &MigGeometry, size: &Size, rng: &mut Rng) -> Vec<Request> {
    let total: u32 = t.classes.iter().map(|c| c.weight).sum();
    let (low, high) = size.arrivals;
    let mut requests = Vec::new();
    for arrive in 0..size.steps {
        for _ in 0..low + rng.below(high - low + 1) {
            let mut pick = u32::try_from(rng.below(u64::from(total))).unwrap_or(0);
            let Some(c) = t.classes.iter().find(|c| {
                let hit = pick < c.weight;
                pick = pick.saturating_sub(c.weight);
                hit
            }) else {
                continue;
            };
            let life = c.life.0 + rng.below(c.life.1 - c.life.0 + 1);
            requests.push(Request {
                arrive,
                depart: arrive + usize::try_from(life).unwrap_or(1),
                profile: profile_name(g, c.compute),
            });
        }
    }
    requests
}

/// A node of `gpus` GPUs of `model` in MIG mode, scanned as gpusliced does.
fn scanned(model: SimModel, gpus: usize) -> Inventory {
    let backend = SimBackend::new(vec![model; gpus], "placement-bench");
    for index in 0..u32::try_from(gpus).unwrap_or(0) {
        if let Err(e) = backend.set_mig_mode(index, MigMode::Enabled) {
            panic!("{model}: MIG mode: {e}");
        }
    }
    let config = MigConfig {
        advertise: Some(MigOffering::Partitionable),
        gpu: vec![MigGpuConfig::default()],
        ..MigConfig::default()
    };
    Inventory::from_backend(&backend, &config, &|_, _| Ownership::Foreign)
        .unwrap_or_else(|e| panic!("{model}: scan: {e}"))
}

/// A publication order: fixed, or re-made from the GPUs' state.
enum Order {
    Fixed(Publication),
    Rescored(Vec<Device>, Packing),
}

/// Requests the allocator accepted over `order`, and allocations whose
/// counters fit but which the GPU's rules refuse (would fail at prepare).
struct Served {
    accepted: usize,
    unpreparable: usize,
}

fn serve(
    g: &MigGeometry,
    requests: &[Request],
    order: &Order,
    capacity: &[Vec<i64>],
    rng: &mut Rng,
) -> Served {
    let mut layouts = vec![Occupancy::empty(g); capacity.len()];
    let mut left = capacity.to_vec();
    let mut live: Vec<(usize, Device)> = Vec::new();
    let mut served = Served {
        accepted: 0,
        unpreparable: 0,
    };
    for (id, r) in requests.iter().enumerate() {
        live.retain(|(i, device)| {
            let gone = requests[*i].depart <= r.arrive;
            if gone {
                draw(device, &mut left, -1);
                layouts[device.gpu].remove(u32::try_from(*i).unwrap_or(u32::MAX));
            }
            !gone
        });
        let remade;
        let publication = match order {
            Order::Fixed(p) => p,
            Order::Rescored(base, packing) => {
                remade = Publication::new(rescored(base, &layouts, g), *packing);
                &remade
            }
        };
        let Some(d) = pick(publication, &left, g.position_of(r.profile), rng) else {
            continue;
        };
        let device = publication.devices[d].clone();
        debug_assert!(fits(&device, &left));
        if layouts[device.gpu]
            .insert(occupant(g, id, r.profile, device.placement))
            .is_err()
        {
            served.unpreparable += 1;
            continue;
        }
        draw(&device, &mut left, 1);
        live.push((id, device));
        served.accepted += 1;
    }
    served
}

/// Where a GPU's devices of one profile go in a fixed order.
#[derive(Clone, Copy)]
enum Static {
    /// GPU after GPU, each GPU's profiles, higher starts first.
    PerGpu,
    /// Profile after profile, its devices GPU after GPU; placements by `Start`.
    PerProfile(Gpus, Start),
}

#[derive(Clone, Copy)]
enum Gpus {
    FirstFirst,
    /// Profiles of 3 compute slices or more from the last GPU down.
    LargeFromLast,
}

#[derive(Clone, Copy)]
enum Start {
    High,
    Low,
}

fn fixed(base: &[Device], g: &MigGeometry, gpus: usize, how: Static) -> Vec<Device> {
    let mut devices = base.to_vec();
    devices.sort_by_key(|d| {
        let Some(position) = d.profile else {
            return (0, 0, 0, 0);
        };
        let high = u32::MAX - d.placement.start;
        match how {
            Static::PerGpu => (1, d.gpu, position, high),
            Static::PerProfile(order, start) => {
                let large = g.profiles()[position].compute_slices >= 3;
                let gpu = match order {
                    Gpus::LargeFromLast if large => gpus - 1 - d.gpu,
                    _ => d.gpu,
                };
                let start = match start {
                    Start::High => high,
                    Start::Low => d.placement.start,
                };
                (1, position, gpu, start)
            }
        }
    });
    devices
}

/// The orders compared; the first is what gpusliced publishes.
fn orders(inventory: &Inventory, g: &MigGeometry) -> (Vec<(&'static str, Order)>, Vec<Vec<i64>>) {
    let (base, capacity) = from_inventory(inventory, g);
    let gpus = capacity.len();
    let fixed = |how, packing| Order::Fixed(Publication::new(fixed(&base, g, gpus, how), packing));
    let list = vec![
        (
            "published (scan order), by-profile slices",
            Order::Fixed(Publication::new(base.clone(), Packing::ByProfile)),
        ),
        (
            "today: per GPU, re-scored live, 64-chunks",
            Order::Rescored(base.clone(), Packing::Chunks),
        ),
        (
            "per GPU, high start first, 64-chunks",
            fixed(Static::PerGpu, Packing::Chunks),
        ),
        (
            "per profile, GPU 0 first, high start, 64-chunks",
            fixed(
                Static::PerProfile(Gpus::FirstFirst, Start::High),
                Packing::Chunks,
            ),
        ),
        (
            "per profile, GPU 0 first, high start, by-profile",
            fixed(
                Static::PerProfile(Gpus::FirstFirst, Start::High),
                Packing::ByProfile,
            ),
        ),
        (
            "per profile, GPU 0 first, low start, by-profile",
            fixed(
                Static::PerProfile(Gpus::FirstFirst, Start::Low),
                Packing::ByProfile,
            ),
        ),
        (
            "per profile, large from last GPU, high start, by-profile",
            fixed(
                Static::PerProfile(Gpus::LargeFromLast, Start::High),
                Packing::ByProfile,
            ),
        ),
    ];
    (list, capacity)
}

/// Fewest and most accepted over the slice-order seeds.
fn over_seeds(
    g: &MigGeometry,
    requests: &[Request],
    order: &Order,
    capacity: &[Vec<i64>],
) -> (usize, usize, usize) {
    let (mut low, mut high, mut unpreparable) = (usize::MAX, 0, 0);
    for seed in 0..SLICE_SEEDS {
        let served = serve(g, requests, order, capacity, &mut Rng(SEED ^ (seed << 32)));
        low = low.min(served.accepted);
        high = high.max(served.accepted);
        unpreparable += served.unpreparable;
    }
    (low, high, unpreparable)
}

/// Sums over the traces of one scenario.
#[derive(Default)]
struct Totals {
    requests: usize,
    planner: usize,
    /// Per order: fewest and most accepted over the slice orders, and
    /// allocations the GPU would refuse at prepare.
    orders: Vec<(usize, usize, usize)>,
    /// Best placements (a request that fits is placed), and whether proven.
    placement: (usize, bool),
    /// Offline optimum (requests may be refused), and whether proven.
    offline: (usize, bool),
}

fn search(
    g: &MigGeometry,
    requests: &[Request],
    gpus: usize,
    admission: Admission,
    known: usize,
) -> (usize, bool) {
    let (best, finished, _) =
        optimum::optimum(g, requests, (gpus, admission), known, SEARCH_BUDGET);
    (best, finished)
}

fn one_trace(t: &Trace, model: SimModel, size: &Size, seed: u64, totals: &mut Totals) {
    let inventory = scanned(model, size.gpus);
    let g = geometry(model);
    let requests = trace(t, &g, size, &mut Rng(SEED ^ seed));
    let planner = online(&g, &requests, size.gpus, choose_gpu);
    let (orders, capacity) = orders(&inventory, &g);
    let results: Vec<(usize, usize, usize)> = orders
        .iter()
        .map(|(_, o)| over_seeds(&g, &requests, o, &capacity))
        .collect();
    let known = results.iter().map(|r| r.1).max().unwrap_or(0).max(planner);
    let (placement, offline) = if size.search {
        let placement = search(&g, &requests, size.gpus, Admission::PlaceIfFits, known);
        (
            placement,
            search(&g, &requests, size.gpus, Admission::MayRefuse, placement.0),
        )
    } else {
        ((known, false), (known, false))
    };
    totals.requests += requests.len();
    totals.planner += planner;
    totals.orders.resize(results.len(), (0, 0, 0));
    for (sum, r) in totals.orders.iter_mut().zip(&results) {
        *sum = (sum.0 + r.0, sum.1 + r.1, sum.2 + r.2);
    }
    let first = totals.placement == (0, false) && totals.offline == (0, false);
    totals.placement = (
        totals.placement.0 + placement.0,
        (first || totals.placement.1) && placement.1,
    );
    totals.offline = (
        totals.offline.0 + offline.0,
        (first || totals.offline.1) && offline.1,
    );
}

fn proven(found: (usize, bool), search: bool) -> String {
    match (search, found.1) {
        (false, _) => format!("{} (best seen, no search)", found.0),
        (true, true) => format!("{} (proven)", found.0),
        (true, false) => format!("{} (budget hit, best found)", found.0),
    }
}

/// One (trace, model, size): prints its rows; returns each order's worst
/// ratio to the best placements.
fn scenario(t: &Trace, model: SimModel, size: &Size, names: &mut Vec<&'static str>) -> Vec<f64> {
    let mut totals = Totals::default();
    for seed in 0..size.traces {
        one_trace(
            t,
            model,
            size,
            seed << 40 | u64::try_from(t.name.len()).unwrap_or(0),
            &mut totals,
        );
    }
    if names.is_empty() {
        let inventory = scanned(model, 1);
        *names = orders(&inventory, &geometry(model))
            .0
            .into_iter()
            .map(|(n, _)| n)
            .collect();
    }
    let best = totals.placement.0;
    let published = totals.orders.first().copied().unwrap_or_default();
    println!(
        "{:<27} {:<9} gpus={} traces={} requests={:<4} published={:>3}..{:<3} planner={:<3} best-placement={} offline={} | published/best {} planner/best {} published/offline {}",
        t.name,
        <&str>::from(model),
        size.gpus,
        size.traces,
        totals.requests,
        published.0,
        published.1,
        totals.planner,
        proven(totals.placement, size.search),
        proven(totals.offline, size.search),
        ratio(published.0, best),
        ratio(totals.planner, best),
        ratio(published.0, totals.offline.0),
    );
    for (name, (low, high, unpreparable)) in names.iter().zip(&totals.orders).skip(1) {
        println!(
            "      {name:<58} {low:>3}..{high:<3} ({}..{}){}",
            ratio(*low, best),
            ratio(*high, best),
            if *unpreparable > 0 {
                format!(" UNPREPARABLE {unpreparable}")
            } else {
                String::new()
            },
        );
    }
    totals
        .orders
        .iter()
        .map(|r| {
            f64::from(u32::try_from(r.0).unwrap_or(0))
                / f64::from(u32::try_from(best).unwrap_or(1).max(1))
        })
        .collect()
}

pub(super) fn placement() {
    println!(
        "Placement when the scheduler chooses (partitionable): first fit over a publication order,"
    );
    println!(
        "fewest..most accepted over {SLICE_SEEDS} slice orders, against the planner and the searches:"
    );
    let mut worst: Vec<f64> = Vec::new();
    let mut names = Vec::new();
    for t in TRACES {
        for model in MODELS {
            for size in &SIZES {
                let ratios = scenario(t, model, size, &mut names);
                if worst.is_empty() {
                    worst = ratios;
                } else {
                    worst
                        .iter_mut()
                        .zip(ratios)
                        .for_each(|(w, r)| *w = w.min(r));
                }
            }
        }
    }
    println!("worst ratio to the best placements over every scenario, per order:");
    for (name, w) in names.iter().zip(worst) {
        println!("      {name:<58} {w:.3}");
    }
}
