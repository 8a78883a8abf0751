//! The view on simulated GPUs: each device with its own holders, memory
//! left and fault, at the generation read first; the MIG instances with
//! their holders and devices.

use crate::config::{MigConfig, MigGpuConfig, MigOffering};
use crate::health::{Cause, Fault, Target};
use crate::inventory::DeviceRef;
use crate::testkit::SimNodeBuilder;
use crate::testkit::requests::request;

const A: &str = "aaaaaaaa-0000-4000-8000-0000000000a1";

#[test]
fn sim_each_device_has_its_own_holders_memory_and_fault() {
    let node = SimNodeBuilder::h100s(2).start();
    let engine = node.engine();
    engine.prepare(&request(A, &["gpu-1"])).unwrap();
    let memory = engine.inventory().gpus[0].info.memory_bytes;

    let view = engine.view();
    let first = view.generation;
    assert_eq!(first, engine.generation());
    let seen: Vec<(&str, &[String], bool, u64)> = (view.devices.iter())
        .map(|d| {
            (
                d.name.as_str(),
                d.holders.as_slice(),
                d.available,
                d.memory_available,
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("gpu-0", [].as_slice(), true, memory),
            ("gpu-1", [A.to_owned()].as_slice(), false, 0)
        ]
    );
    assert!(view.devices.iter().all(|d| d.fault.is_none()));

    let uuid = view.inventory.gpus[0].info.uuid.clone();
    let fault = Fault {
        cause: Cause::Xid(79),
        detail: "test".into(),
        since: 1_748_779_200,
    };
    assert!(engine.health().record(&uuid, 0, Target::Gpu, fault));
    engine.health_changed();
    let view = engine.view();
    assert!(view.generation > first, "a fault is a new generation");
    let gpu_0 = &view.devices[0];
    assert!(!gpu_0.available, "unhealthy");
    assert_eq!(gpu_0.fault.as_ref().map(|f| f.cause), Some(Cause::Xid(79)));
    assert_eq!(gpu_0.memory_available, memory, "nothing promised on it");
    let unhealthy = view.unhealthy_devices();
    assert_eq!(unhealthy.len(), 1);
    assert_eq!(
        (unhealthy[0].device.as_str(), unhealthy[0].gpu_uuid.as_str()),
        ("gpu-0", uuid.as_str())
    );
}

#[test]
fn sim_the_mig_view_shows_each_instance_with_its_device_and_holder() {
    let mig = MigConfig {
        advertise: Some(MigOffering::Layout),
        gpu: vec![MigGpuConfig {
            index: Some(0),
            layout: ["3g.40gb", "1g.10gb"].map(str::to_owned).to_vec(),
            ..MigGpuConfig::default()
        }],
        ..MigConfig::default()
    };
    let node = SimNodeBuilder::h100s(2).mig(mig).start();
    let engine = node.engine();
    let view = engine.view();
    let slice = (view.each_device())
        .find_map(|(device, _)| match device {
            DeviceRef::Mig(m, _) if m.profile.name == "3g.40gb" => Some(m.name.clone()),
            _ => None,
        })
        .unwrap();
    let layout = |engine: &crate::claims::Engine| -> Vec<(String, usize)> {
        (engine.mig_view().iter())
            .map(|g| (g.gpu.name.clone(), g.instances.len()))
            .collect()
    };
    assert_eq!(
        layout(engine),
        [("gpu-0".to_owned(), 0), ("gpu-1".to_owned(), 0)]
    );

    engine.prepare(&request(A, &[&slice])).unwrap();
    let gpus = engine.mig_view();
    let made = &gpus[0].instances;
    assert_eq!(made.len(), 1, "{made:?}");
    assert_eq!(made[0].profile, "3g.40gb");
    assert_eq!(made[0].device.as_deref(), Some(slice.as_str()));
    let holder = made[0].holder.as_ref().unwrap();
    assert_eq!((holder.uid.as_str(), holder.created), (A, true));
    assert!(gpus[1].instances.is_empty(), "not in MIG mode");

    engine.unprepare(A).unwrap();
    assert_eq!(
        layout(engine),
        [("gpu-0".to_owned(), 0), ("gpu-1".to_owned(), 0)]
    );
}
