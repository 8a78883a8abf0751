//! Claims that align their devices with Kubernetes' standard topology
//! attributes, `matchAttribute: resource.kubernetes.io/pcieRoot` or
//! `resource.kubernetes.io/numaNode` across two requests, on an 8-GPU
//! simulated node as `gpu::sim::topology` lays it out (GPUs 0-3 under
//! `pci0000:00` on NUMA node 0, GPUs 4-7 under `pci0000:80` on node 1): the
//! model scheduler ([`crate::model`]) finds aligned devices in the published
//! slices, in first-fit and shuffled orders, every such allocation prepares,
//! and a claim no root can hold is not allocated. A MIG slice aligns as its
//! GPU does.

use gpuslice::config::{MigAdvertise, MigCreate};
use gpuslice::gpu::sim::SimModel;

use crate::cases::{resource_claim, uuid};
use crate::model::{Allocated, Allocations, Claim, Class, Request, allocate};
use crate::node::{GpuPlan, Node, NodePlan};
use crate::shape::{Attr, Pool};

const PCIE_ROOT: &str = "resource.kubernetes.io/pcieRoot";
const NUMA_NODE: &str = "resource.kubernetes.io/numaNode";

/// Eight whole H100s, or GPU 4 MIG-managed with two 3g.40gb slices.
fn node(mig_on_gpu_4: bool) -> Node {
    let gpus = (0..8)
        .map(|i| GpuPlan {
            model: SimModel::H100_80GB,
            mig: (mig_on_gpu_4 && i == 4).then(|| vec!["3g.40gb".to_owned(); 2]),
            foreign: None,
        })
        .collect();
    Node::start(
        &NodePlan {
            gpus,
            advertise: MigAdvertise::Layout,
            create: MigCreate::OnPrepare,
            consumable_capacity: false,
        },
        false,
    )
}

fn request(name: &str, class: Class, count: usize) -> Request {
    Request {
        name: name.to_owned(),
        class,
        profile: (class == Class::Mig).then(|| "3g.40gb".to_owned()),
        count: Some(count),
        memory: None,
    }
}

/// A claim of two requests, with `attribute` matched across both when given.
fn claim(n: u64, first: Request, second: Request, attribute: Option<&str>) -> Claim {
    Claim {
        uid: uuid(7, n),
        requests: vec![first, second],
        constraints: attribute
            .map(|a| vec![(vec!["r0".to_owned(), "r1".to_owned()], a.to_owned())])
            .into_iter()
            .flatten()
            .collect(),
    }
}

/// The value of `attribute` on each allocated device.
fn values<'a>(pool: &'a Pool, results: &[Allocated], attribute: &str) -> Vec<&'a Attr> {
    results
        .iter()
        .map(|r| {
            let dev = pool.devices.iter().find(|d| d.name == r.device);
            let dev = dev.unwrap_or_else(|| panic!("{} is not published", r.device));
            dev.attrs
                .get(attribute)
                .unwrap_or_else(|| panic!("{} has no {attribute}", r.device))
        })
        .collect()
}

/// Allocates `claim` against what `held` holds, devices walked in `order`.
fn allocate_one(
    pool: &Pool,
    claim: &Claim,
    held: &Allocations,
    order: Vec<usize>,
) -> Option<Vec<Allocated>> {
    allocate(pool, std::slice::from_ref(claim), held, order).map(|mut r| r.remove(0))
}

fn prepare(node: &Node, claim: &Claim, results: &[Allocated]) {
    let object = resource_claim(claim, results, &mut || unreachable!("no shared device"));
    node.prepare(&object).unwrap_or_else(|e| {
        panic!(
            "claim {} allocated {results:?} did not prepare: {e}",
            claim.uid
        )
    });
}

#[test]
fn sim_two_requests_on_one_pcie_root_allocate_and_prepare_until_no_root_can_hold_them() {
    let node = node(false);
    let pool = crate::published(&node, false);
    for seed in 0..8u64 {
        let mut order: Vec<usize> = (0..pool.devices.len()).collect();
        fastrand::Rng::with_seed(seed).shuffle(&mut order);
        let mut held = Allocations::default();
        let mut roots = Vec::new();
        for n in 0..2 {
            let wanted = claim(
                seed * 10 + n,
                request("r0", Class::Gpu, 2),
                request("r1", Class::Gpu, 2),
                Some(PCIE_ROOT),
            );
            let results = allocate_one(&pool, &wanted, &held, order.clone())
                .unwrap_or_else(|| panic!("seed {seed}: claim {n} found no root with 4 free GPUs"));
            let found = values(&pool, &results, PCIE_ROOT);
            assert!(
                found.iter().all(|v| *v == found[0]),
                "seed {seed}: {found:?}"
            );
            roots.push(found[0].clone());
            prepare(&node, &wanted, &results);
            held.add(&results);
        }
        roots.sort_by_key(|r| format!("{r:?}"));
        assert_eq!(
            roots,
            [
                Attr::Str("pci0000:00".into()),
                Attr::Str("pci0000:80".into())
            ],
            "seed {seed}"
        );
        // Every GPU is held now: one more aligned pair finds nothing.
        let more = claim(
            seed * 10 + 9,
            request("r0", Class::Gpu, 1),
            request("r1", Class::Gpu, 1),
            Some(PCIE_ROOT),
        );
        assert_eq!(allocate_one(&pool, &more, &held, order.clone()), None);
        for n in 0..2 {
            node.unprepare(&uuid(7, seed * 10 + n));
        }
    }
    assert_eq!(node.claim_count(), 0);
}

#[test]
fn sim_a_claim_wider_than_any_pcie_root_is_not_allocated() {
    let node = node(false);
    let pool = crate::published(&node, false);
    let order = || (0..pool.devices.len()).collect::<Vec<_>>();
    let held = Allocations::default();
    let wide = |attribute| {
        claim(
            1,
            request("r0", Class::Gpu, 3),
            request("r1", Class::Gpu, 2),
            attribute,
        )
    };
    assert_eq!(
        allocate_one(&pool, &wide(Some(PCIE_ROOT)), &held, order()),
        None
    );
    assert_eq!(
        allocate_one(&pool, &wide(Some(NUMA_NODE)), &held, order()),
        None
    );
    let results = allocate_one(&pool, &wide(None), &held, order()).expect("5 of 8 GPUs unaligned");
    prepare(&node, &wide(None), &results);
    node.unprepare(&uuid(7, 1));
}

#[test]
fn sim_a_mig_slice_and_a_whole_gpu_on_one_numa_node() {
    let node = node(true);
    let pool = crate::published(&node, false);
    let slices: Vec<&str> = pool
        .devices
        .iter()
        .filter(|d| d.name.starts_with("gpu-4-mig-"))
        .map(|d| d.name.as_str())
        .collect();
    assert_eq!(slices.len(), 2, "GPU 4 offers its layout");
    for slice in &slices {
        let dev = pool
            .devices
            .iter()
            .find(|d| d.name == *slice)
            .expect("published");
        assert_eq!(dev.attrs.get(NUMA_NODE), Some(&Attr::Int(1)), "{slice}");
        assert_eq!(
            dev.attrs.get(PCIE_ROOT),
            Some(&Attr::Str("pci0000:80".into())),
            "{slice}"
        );
    }
    // First fit walks gpu-0 first; the constraint moves the whole GPU to
    // the slice's NUMA node.
    let order: Vec<usize> = (0..pool.devices.len()).collect();
    let wanted = claim(
        2,
        request("r0", Class::Mig, 1),
        request("r1", Class::Gpu, 1),
        Some(NUMA_NODE),
    );
    let results = allocate_one(&pool, &wanted, &Allocations::default(), order).expect("aligned");
    let devices: Vec<&str> = results.iter().map(|r| r.device.as_str()).collect();
    assert!(slices.contains(&devices[0]), "{devices:?}");
    assert!(
        ["gpu-5", "gpu-6", "gpu-7"].contains(&devices[1]),
        "{devices:?}"
    );
    prepare(&node, &wanted, &results);
    node.unprepare(&uuid(7, 2));
    assert_eq!(node.claim_count(), 0);
}
