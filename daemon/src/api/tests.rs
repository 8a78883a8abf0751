//! The answers the API builds from the engine, on simulated GPUs: each is
//! built from one view of the node, so a rescan landing while it is built
//! (made deterministic with the test hook `view.between_reads`) never pairs
//! a device with another device's holders, availability or health.

use std::sync::Arc;

use gpuslice_proto::gpuslice::v1 as pb;

use crate::claims::Engine;
use crate::config::MigConfig;
use crate::crash::test_hook::{self, ArmedHook};
use crate::gpu::GpuError;
use crate::gpu::sim::{SimBackend, op};
use crate::health::{Cause, Fault, Target};
use crate::testkit::requests::request;
use crate::testkit::{SimNode, SimNodeBuilder};

const A: &str = "aaaaaaaa-0000-4000-8000-0000000000a1";

/// Three simulated H100s; claim A holds gpu-2.
struct Node {
    _node: SimNode,
    sim: Arc<SimBackend>,
    engine: Arc<Engine>,
}

impl Node {
    fn new() -> Self {
        let node = SimNodeBuilder::h100s(3).hardware_in_memory().start();
        let engine = Arc::clone(node.engine());
        engine.prepare(&request(A, &["gpu-2"])).unwrap();
        Self {
            sim: Arc::clone(&node.sim),
            engine,
            _node: node,
        }
    }

    /// At the first pass of `view.between_reads` on this thread, GPU 0 stops
    /// answering and a rescan (SIGHUP) drops it from the inventory.
    fn lose_gpu_0_between_reads(&self) -> ArmedHook {
        let (sim, engine) = (self.sim.clone(), self.engine.clone());
        test_hook::arm("view.between_reads", move || {
            let lost = GpuError::GpuLost {
                what: "GPU 0 (test)".into(),
            };
            sim.faults().fail_gpu(op::DEVICE_INFO, 0, lost);
            engine.setup_mig(&MigConfig::default()).unwrap();
        })
    }

    /// Claims whose records name `device`.
    fn recorded_on(&self, device: &str) -> Vec<String> {
        (self.engine.claims().into_iter())
            .filter(|r| r.devices.iter().any(|d| d.device == device))
            .map(|r| r.uid)
            .collect()
    }
}

fn names(answer: &pb::GetInventoryResponse) -> Vec<&str> {
    answer.devices.iter().map(|d| d.name.as_str()).collect()
}

#[test]
fn sim_a_rescan_between_the_reads_of_an_inventory_answer_pairs_each_device_with_its_own_holders() {
    let node = Node::new();
    let before = node.engine.generation();
    let hook = node.lose_gpu_0_between_reads();
    let answer = super::inventory_response(&node.engine.view());
    assert_eq!(hook.passes(), 1, "the rescan landed inside the answer");
    assert_eq!(
        node.engine.inventory().gpus.len(),
        2,
        "GPU 0 left the inventory"
    );

    for device in &answer.devices {
        let holders = node.recorded_on(&device.name);
        assert_eq!(
            device.holders, holders,
            "{}: the holders of another device",
            device.name
        );
        assert_eq!(
            device.available,
            holders.is_empty(),
            "{}: the availability of another device",
            device.name
        );
    }
    let gpu_2 = answer.devices.iter().find(|d| d.name == "gpu-2").unwrap();
    assert_eq!(
        (gpu_2.holders.as_slice(), gpu_2.available),
        ([A.to_owned()].as_slice(), false)
    );
    // The answer is the node at its generation; the rescan came after it and
    // is a newer one, so a WatchInventory reader asks again.
    assert_eq!(names(&answer), ["gpu-0", "gpu-1", "gpu-2"]);
    assert_eq!(answer.generation, before);
    assert!(node.engine.generation() > answer.generation);

    let again = super::inventory_response(&node.engine.view());
    assert_eq!(names(&again), ["gpu-1", "gpu-2"]);
    assert_eq!(again.generation, node.engine.generation());
    assert_eq!(again.devices[1].holders, [A]);
}

#[test]
fn sim_a_rescan_between_the_reads_of_a_health_answer_keeps_each_fault_with_its_own_claims() {
    let node = Node::new();
    let gpu_2 = node
        .engine
        .inventory()
        .gpu("gpu-2")
        .unwrap()
        .info
        .uuid
        .clone();
    let fault = Fault {
        cause: Cause::Xid(79),
        detail: "test".into(),
        since: 1_748_779_200,
    };
    assert!(node.engine.health().record(&gpu_2, 2, Target::Gpu, fault));
    node.engine.health_changed();
    let hook = node.lose_gpu_0_between_reads();
    let answer = super::health::health_response(&node.engine);
    assert_eq!(hook.passes(), 1, "the rescan landed inside the answer");

    let unhealthy: Vec<(&str, &[String])> = (answer.unhealthy.iter())
        .map(|u| (u.device.as_str(), u.claims.as_slice()))
        .collect();
    assert_eq!(unhealthy, [("gpu-2", [A.to_owned()].as_slice())]);
    assert_eq!(answer.unhealthy[0].gpu_uuid, gpu_2);

    // Asked again: the lost GPU too, with no claim on it.
    let again = super::health::health_response(&node.engine);
    let devices: Vec<(&str, usize)> = (again.unhealthy.iter())
        .map(|u| (u.device.as_str(), u.claims.len()))
        .collect();
    assert_eq!(devices, [("gpu-2", 1), ("gpu-0", 0)]);
    assert!(
        again.unhealthy[1].reason.contains("cannot be read"),
        "{again:?}"
    );
}
