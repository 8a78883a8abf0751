//! Claims that align their devices with Kubernetes' standard topology
//! attributes, `matchAttribute: resource.kubernetes.io/pcieRoot` or
//! `resource.kubernetes.io/numaNode` across two requests, on an 8-GPU
//! simulated node as `gpu::sim::topology` lays it out (GPUs 0-3 under
//! `pci0000:00` on NUMA node 0, GPUs 4-7 under `pci0000:80` on node 1): the
//! scheduler ([`crate::scheduler`], the selector crate's allocator) finds
//! aligned devices in the published slices, in first-fit and shuffled
//! orders, every such allocation prepares, and a claim no root can hold is
//! not allocated. A MIG slice aligns as its GPU does.

use gpuslice::config::{MigCreate, MigOffering};
use gpuslice::gpu::sim::SimModel;
use gpuslice_selector::allocate::Held;
use k8s_openapi::api::resource::v1::{
    AllocationResult, Device, DeviceAttribute, ResourceClaim, ResourceSliceSpec,
};
use serde_json::{Value, json};

use crate::cases::{GPU_CLASS, MIG_CLASS, resource_claim, uuid};
use crate::node::{DRIVER, GpuPlan, Node, NodePlan};
use crate::{results, scheduler};

const PCIE_ROOT: &str = "resource.kubernetes.io/pcieRoot";
const NUMA_NODE: &str = "resource.kubernetes.io/numaNode";

/// Eight whole H100s, or GPU 4 MIG-managed with two 3g.40gb slices.
fn node(mig_on_gpu_4: bool) -> Node {
    let gpus = (0..8)
        .map(|i| GpuPlan {
            model: SimModel::H100_80GB,
            mig: (mig_on_gpu_4 && i == 4).then(|| vec!["3g.40gb".to_owned(); 2]),
            foreign: None,
            fault: None,
        })
        .collect();
    Node::start(&NodePlan {
        gpus,
        advertise: Some(MigOffering::Layout),
        create: MigCreate::OnPrepare,
        consumable_capacity: false,
    })
}

/// A request for `count` devices of `class` (MIG slices of 3g.40gb).
fn request(name: &str, class: &str, count: i64) -> Value {
    let mut exactly = json!({
        "deviceClassName": class, "allocationMode": "ExactCount", "count": count
    });
    if class == MIG_CLASS {
        exactly["selectors"] = json!([{ "cel": {
            "expression": format!("device.attributes['{DRIVER}'].profile == '3g.40gb'")
        } }]);
    }
    json!({ "name": name, "exactly": exactly })
}

/// A claim of two requests, with `attribute` matched across both when given.
fn claim(n: u64, first: Value, second: Value, attribute: Option<&str>) -> ResourceClaim {
    let uid = uuid(7, n);
    let constraints = attribute
        .map(|a| json!([{ "requests": ["r0", "r1"], "matchAttribute": a }]))
        .unwrap_or(Value::Null);
    serde_json::from_value(json!({
        "metadata": {
            "name": format!("claim-{}", &uid[24..]), "namespace": "contract", "uid": uid
        },
        "spec": { "devices": { "requests": [first, second], "constraints": constraints } }
    }))
    .expect("a valid claim")
}

fn device<'a>(slices: &'a [ResourceSliceSpec], name: &str) -> &'a Device {
    crate::devices(slices)
        .find(|d| d.name == name)
        .unwrap_or_else(|| panic!("{name} is not published"))
}

fn attribute<'a>(dev: &'a Device, attribute: &str) -> Option<&'a DeviceAttribute> {
    dev.attributes.as_ref()?.get(attribute)
}

/// The value of `attribute` on each allocated device.
fn values<'a>(
    slices: &'a [ResourceSliceSpec],
    allocation: &AllocationResult,
    name: &str,
) -> Vec<&'a DeviceAttribute> {
    results(allocation)
        .iter()
        .map(|r| {
            attribute(device(slices, &r.device), name)
                .unwrap_or_else(|| panic!("{} has no {name}", r.device))
        })
        .collect()
}

fn text(value: &str) -> DeviceAttribute {
    DeviceAttribute {
        string: Some(value.to_owned()),
        ..DeviceAttribute::default()
    }
}

/// Allocates `claim` against what `held` holds, first fit or (with a seed)
/// in that seed's shuffled order.
fn allocate_one(
    slices: &[ResourceSliceSpec],
    claim: &ResourceClaim,
    held: &Held,
    seed: Option<u64>,
) -> Option<AllocationResult> {
    let mut rng = seed.map(fastrand::Rng::with_seed);
    let order = scheduler::in_order(slices, rng.as_mut());
    let classes = scheduler::classes();
    let answer = scheduler::schedule(&order, &classes, std::slice::from_ref(claim), held);
    answer.allocations().map(|found| found[0].clone())
}

fn prepare(node: &Node, claim: &ResourceClaim, allocation: &AllocationResult) {
    let object = resource_claim(claim, allocation, &mut || unreachable!("no shared device"));
    node.prepare(&object).unwrap_or_else(|e| {
        panic!(
            "claim {:?} allocated {:?} did not prepare: {e}",
            claim.metadata.uid,
            crate::brief(&results(allocation))
        )
    });
}

#[test]
fn sim_two_requests_on_one_pcie_root_allocate_and_prepare_until_no_root_can_hold_them() {
    let node = node(false);
    let slices = crate::published(&node, false);
    // First fit, then eight shuffled orders.
    for (n, seed) in (0u64..).zip([None].into_iter().chain((0..8).map(Some))) {
        let mut held = Held::default();
        let mut roots = Vec::new();
        for c in 0..2 {
            let wanted = claim(
                n * 10 + c,
                request("r0", GPU_CLASS, 2),
                request("r1", GPU_CLASS, 2),
                Some(PCIE_ROOT),
            );
            let allocation = allocate_one(&slices, &wanted, &held, seed).unwrap_or_else(|| {
                panic!("order {seed:?}: claim {c} found no root with 4 free GPUs")
            });
            let found = values(&slices, &allocation, PCIE_ROOT);
            assert!(
                found.iter().all(|v| *v == found[0]),
                "order {seed:?}: {found:?}"
            );
            roots.push(found[0].clone());
            prepare(&node, &wanted, &allocation);
            held.add(&allocation).expect("whole devices add");
        }
        roots.sort_by_key(|r| format!("{r:?}"));
        assert_eq!(
            roots,
            [text("pci0000:00"), text("pci0000:80")],
            "order {seed:?}"
        );
        // Every GPU is held now: one more aligned pair finds nothing.
        let more = claim(
            n * 10 + 9,
            request("r0", GPU_CLASS, 1),
            request("r1", GPU_CLASS, 1),
            Some(PCIE_ROOT),
        );
        assert_eq!(allocate_one(&slices, &more, &held, seed), None);
        for c in 0..2 {
            node.unprepare(&uuid(7, n * 10 + c));
        }
    }
    assert_eq!(node.claim_count(), 0);
}

#[test]
fn sim_a_claim_wider_than_any_pcie_root_is_not_allocated() {
    let node = node(false);
    let slices = crate::published(&node, false);
    let held = Held::default();
    let wide = |attribute| {
        claim(
            1,
            request("r0", GPU_CLASS, 3),
            request("r1", GPU_CLASS, 2),
            attribute,
        )
    };
    assert_eq!(
        allocate_one(&slices, &wide(Some(PCIE_ROOT)), &held, None),
        None
    );
    assert_eq!(
        allocate_one(&slices, &wide(Some(NUMA_NODE)), &held, None),
        None
    );
    let allocation =
        allocate_one(&slices, &wide(None), &held, None).expect("5 of 8 GPUs unaligned");
    prepare(&node, &wide(None), &allocation);
    node.unprepare(&uuid(7, 1));
}

#[test]
fn sim_a_mig_slice_and_a_whole_gpu_on_one_numa_node() {
    let node = node(true);
    let slices = crate::published(&node, false);
    let names: Vec<&str> = crate::devices(&slices)
        .filter(|d| d.name.starts_with("gpu-4-mig-"))
        .map(|d| d.name.as_str())
        .collect();
    assert_eq!(names.len(), 2, "GPU 4 offers its layout");
    for name in &names {
        let dev = device(&slices, name);
        let numa = DeviceAttribute {
            int: Some(1),
            ..DeviceAttribute::default()
        };
        assert_eq!(attribute(dev, NUMA_NODE), Some(&numa), "{name}");
        assert_eq!(
            attribute(dev, PCIE_ROOT),
            Some(&text("pci0000:80")),
            "{name}"
        );
    }
    // First fit walks gpu-0 first; the constraint moves the whole GPU to
    // the slice's NUMA node.
    let wanted = claim(
        2,
        request("r0", MIG_CLASS, 1),
        request("r1", GPU_CLASS, 1),
        Some(NUMA_NODE),
    );
    let allocation = allocate_one(&slices, &wanted, &Held::default(), None).expect("aligned");
    let got = results(&allocation);
    let devices: Vec<&str> = got.iter().map(|r| r.device.as_str()).collect();
    assert!(names.contains(&devices[0]), "{devices:?}");
    assert!(
        ["gpu-5", "gpu-6", "gpu-7"].contains(&devices[1]),
        "{devices:?}"
    );
    prepare(&node, &wanted, &allocation);
    node.unprepare(&uuid(7, 2));
    assert_eq!(node.claim_count(), 0);
}
