//! Tests of the scan over the simulator: one GPU that cannot be read (its
//! device info, or the MIG state of a GPU the config puts in MIG mode) is
//! left out and listed while the rest is offered; a node-wide failure still
//! fails the scan; what an earlier scan knew of an unreadable GPU is kept.

use super::*;
use crate::config::MigGpuConfig;
use crate::gpu::sim::{SimBackend, SimModel, op};

fn lost() -> GpuError {
    GpuError::GpuLost {
        what: "test".into(),
    }
}

fn scan(sim: &SimBackend, mig: &MigConfig) -> Result<Inventory, GpuError> {
    Inventory::from_backend(sim, mig, &|_, _| Ownership::Foreign)
}

fn names(inventory: &Inventory) -> Vec<&str> {
    inventory.gpus.iter().map(|g| g.name.as_str()).collect()
}

#[test]
fn sim_a_gpu_whose_device_info_fails_is_left_out_and_listed() {
    let sim = SimBackend::new(vec![SimModel::H100_80GB; 3], "scan");
    sim.faults().fail_gpu(op::DEVICE_INFO, 1, lost());
    let inventory = scan(&sim, &MigConfig::default()).unwrap();
    assert_eq!(names(&inventory), ["gpu-0", "gpu-2"]);
    assert!(inventory.device("gpu-1").is_none());
    assert_eq!(inventory.device_names(), ["gpu-0", "gpu-2"]);
    let [gpu] = inventory.unreadable.as_slice() else {
        panic!("{:?}", inventory.unreadable);
    };
    assert_eq!((gpu.index, gpu.name.as_str()), (1, "gpu-1"));
    assert_eq!(
        (gpu.what, &gpu.error, &gpu.uuid),
        ("device info", &lost(), &None)
    );
    assert!(
        gpu.problem()
            .starts_with("gpu-1 (index 1) cannot be read (device info: ")
    );

    sim.faults().heal_gpu(op::DEVICE_INFO, 1);
    let inventory = scan(&sim, &MigConfig::default()).unwrap();
    assert_eq!(names(&inventory), ["gpu-0", "gpu-1", "gpu-2"]);
    assert!(inventory.unreadable.is_empty());
}

#[test]
fn sim_a_mig_gpu_whose_mig_state_fails_is_left_out_and_the_others_keep_their_slices() {
    let sim = SimBackend::new(vec![SimModel::H100_80GB; 2], "scan");
    for index in 0..2 {
        sim.set_mig_mode(index, MigMode::Enabled).unwrap();
    }
    let mig = MigConfig {
        advertise: Some(MigOffering::Partitionable),
        gpu: vec![MigGpuConfig::default()],
        ..MigConfig::default()
    };
    let whole = scan(&sim, &mig).unwrap();
    sim.faults().fail_gpu(op::MIG_PROFILES, 0, lost());
    let inventory = scan(&sim, &mig).unwrap();
    assert_eq!(names(&inventory), ["gpu-1"]);
    let gpu = &inventory.unreadable[0];
    assert_eq!((gpu.index, gpu.what), (0, "MIG profiles and instances"));
    assert_eq!(gpu.uuid.as_deref(), Some(whole.gpus[0].info.uuid.as_str()));
    assert!(!inventory.mig.is_empty());
    for slice in &inventory.mig {
        assert!(slice.name.starts_with("gpu-1-mig-"), "{}", slice.name);
        assert_eq!(inventory.gpus[slice.parent].name, "gpu-1");
    }
    assert_eq!(inventory.mig.len() * 2, whole.mig.len());
}

#[test]
fn sim_a_node_wide_failure_still_fails_the_scan() {
    let sim = SimBackend::new(vec![SimModel::H100_80GB; 2], "scan");
    sim.faults().fail_next(op::DEVICE_COUNT, lost());
    assert_eq!(scan(&sim, &MigConfig::default()), Err(lost()));
    sim.faults().fail_next(op::DRIVER_INFO, lost());
    assert_eq!(scan(&sim, &MigConfig::default()), Err(lost()));
}

#[test]
fn sim_what_an_earlier_scan_knew_of_an_unreadable_gpu_is_kept() {
    let sim = SimBackend::new(vec![SimModel::H100_80GB; 2], "scan");
    let read = scan(&sim, &MigConfig::default()).unwrap();
    sim.faults().fail_gpu(op::DEVICE_INFO, 1, lost());
    let mut first = scan(&sim, &MigConfig::default()).unwrap();
    first.unreadable[0].since = 100;
    first.carry_over_unreadable(&read);
    assert_eq!(
        first.unreadable[0].uuid,
        Some(read.gpus[1].info.uuid.clone())
    );
    let mut second = scan(&sim, &MigConfig::default()).unwrap();
    assert_ne!(second.unreadable[0].since, 100);
    second.carry_over_unreadable(&first);
    assert_eq!(second, first, "an unchanged node is an unchanged inventory");
}

#[test]
fn an_unreadable_gpu_names_its_own_devices_only() {
    let gpu = UnreadableGpu::new(1, None, "device info", lost(), 0);
    assert!(gpu.names_device("gpu-1"));
    assert!(gpu.names_device("gpu-1-mig-1g10gb-3"));
    assert!(!gpu.names_device("gpu-10"));
    assert!(!gpu.names_device("gpu-12-mig-1g10gb-3"));
    assert!(!gpu.names_device("gpu-0"));
}
