//! The simulator's tests. This module owns the `sim_*` tests: the shared
//! backend bodies on every model, plus what only the simulator promises
//! (determinism, table-driven facts, injected faults) in this file; MIG
//! ([`mig`]), health events ([`health`]), the hardware state file
//! ([`persist`]), the per-model tables' invariants ([`tables`]), and fake
//! GPU processes ([`processes`] in memory, [`process_folder`] from files)
//! beside it. Built only under `cargo test`; nothing here may change what the
//! simulator answers.

mod health;
mod mig;
mod persist;
mod process_folder;
mod processes;
mod tables;

use super::{SimBackend, SimModel, op};
use crate::gpu::{GpuBackend, GpuError, MigMode, MigSupport, conformance};

const SEED: &str = "node-a";

/// Appends `text` to the file at `path` (made when missing), as a writer of
/// the simulator's event files does.
pub(crate) fn append(path: &std::path::Path, text: &str) {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    std::io::Write::write_all(&mut file, text.as_bytes()).unwrap();
}

/// A two-GPU node of one model passes the shared bodies and shows the table's facts.
fn model_node(model: SimModel) {
    let sim = SimBackend::new(vec![model, model], SEED);
    conformance::all(&sim);
    let spec = model.spec();
    for gpu in conformance::all_gpus(&sim) {
        assert_eq!(gpu.product_name, spec.product_name);
        assert_eq!(gpu.brand, "Nvidia");
        assert_eq!(gpu.architecture, spec.architecture);
        assert_eq!(gpu.compute_capability, spec.compute_capability);
        assert_eq!(gpu.memory_bytes, spec.memory_bytes);
        assert_eq!(gpu.minor, gpu.index);
        let disabled = MigSupport::Supported {
            current: MigMode::Disabled,
            pending: MigMode::Disabled,
        };
        let mig = if spec.has_mig() {
            disabled
        } else {
            MigSupport::NotSupported
        };
        assert_eq!(gpu.mig, mig);
        // A list of models is a plain PCIe node: no NVLink, no fabric.
        assert_eq!((gpu.nvlink_links, gpu.fabric), (0, None));
        assert_eq!(sim.model(gpu.index), Ok(model));
    }
}

macro_rules! sim_model_tests {
    ($($name:ident => $model:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                model_node(SimModel::$model);
            }
        )*
    };
}

sim_model_tests! {
    sim_a100_40gb_node => A100_40GB,
    sim_a100_80gb_node => A100_80GB,
    sim_a30_24gb_node => A30_24GB,
    sim_h100_80gb_node => H100_80GB,
    sim_h100_nvl_94gb_node => H100_NVL_94GB,
    sim_h200_141gb_node => H200_141GB,
    sim_h20_96gb_node => H20_96GB,
    sim_b200_180gb_node => B200_180GB,
    sim_b300_288gb_node => B300_288GB,
    sim_gb200_186gb_node => GB200_186GB,
    sim_gb300_288gb_node => GB300_288GB,
    sim_rtx_pro_6000_96gb_node => RTX_PRO_6000_96GB,
    sim_l40s_48gb_node => L40S_48GB,
    sim_l4_24gb_node => L4_24GB,
    sim_a10g_24gb_node => A10G_24GB,
    sim_t4_16gb_node => T4_16GB,
    sim_t4g_16gb_node => T4G_16GB,
}

#[test]
fn sim_mixed_node_of_every_model() {
    let sim = SimBackend::new(SimModel::ALL.to_vec(), SEED);
    conformance::all(&sim);
    let every = u32::try_from(SimModel::ALL.len()).unwrap();
    assert_eq!(sim.device_count(), Ok(every));
    assert_eq!(sim.name(), "sim");
}

/// GPU `index`'s PCI bus id, PCIe root and NUMA node.
fn address(sim: &SimBackend, index: u32) -> (String, String, Option<u32>) {
    let gpu = sim.device_info(index).unwrap();
    (gpu.pci_bus_id, gpu.pcie_root.unwrap(), gpu.numa_node)
}

#[test]
fn sim_many_gpus_keep_distinct_addresses() {
    let sim = SimBackend::new(vec![SimModel::H100_80GB; 100], SEED);
    conformance::identity(&sim);
    assert_eq!(
        address(&sim, 99),
        ("0006:06:00.0".into(), "pci0006:00".into(), Some(0))
    );
}

#[test]
fn sim_empty_node() {
    let sim = SimBackend::new(Vec::new(), SEED);
    assert_eq!(sim.device_count(), Ok(0));
    conformance::out_of_range(&sim);
}

#[test]
fn sim_addresses_are_lowercase_and_stable() {
    let sim = SimBackend::new(vec![SimModel::A100_80GB; 2], SEED);
    assert_eq!(
        address(&sim, 1),
        ("0000:04:00.0".into(), "pci0000:00".into(), Some(0))
    );
}

#[test]
fn sim_eight_gpus_sit_on_two_roots_and_numa_nodes_unless_told_otherwise() {
    let place = |sim: &SimBackend, i: u32| {
        let (_, root, numa) = address(sim, i);
        (root, numa)
    };
    let sim = SimBackend::new(vec![SimModel::H100_80GB; 8], SEED);
    assert_eq!(place(&sim, 3), ("pci0000:00".to_owned(), Some(0)));
    assert_eq!(place(&sim, 4), ("pci0000:80".to_owned(), Some(1)));
    let sim = SimBackend::new(vec![SimModel::H100_80GB; 8], SEED).with_numa_nodes(0);
    assert_eq!(place(&sim, 4), ("pci0000:80".to_owned(), None));
    conformance::identity(&sim);
}

#[test]
fn sim_uuids_are_deterministic() {
    let uuids = |seed: &str, models: Vec<SimModel>| -> Vec<String> {
        let sim = SimBackend::new(models, seed);
        conformance::all_gpus(&sim)
            .into_iter()
            .map(|g| g.uuid)
            .collect()
    };
    let node = SimModel::ALL.to_vec();
    assert_eq!(uuids(SEED, node.clone()), uuids(SEED, node.clone()));
    let other_node = uuids("node-b", node.clone());
    assert!(uuids(SEED, node).iter().all(|u| !other_node.contains(u)));
    // The model is part of the name: swapping a card changes its UUID.
    let a = uuids(SEED, vec![SimModel::A30_24GB]);
    let b = uuids(SEED, vec![SimModel::H200_141GB]);
    assert_ne!(a, b);
}

#[test]
fn sim_driver_info() {
    let sim = SimBackend::new(vec![SimModel::H200_141GB], SEED);
    let info = sim.driver_info().unwrap();
    assert_eq!(info.driver_version, "580.95.05");
    assert_eq!(info.cuda_driver_version, (13, 0));
}

#[test]
fn sim_fault_on_device_count() {
    let sim = SimBackend::new(vec![SimModel::A30_24GB], SEED);
    let lost = GpuError::GpuLost {
        what: "node".into(),
    };
    sim.faults().fail_next(op::DEVICE_COUNT, lost.clone());
    assert_eq!(sim.device_count(), Err(lost));
    assert_eq!(sim.device_count(), Ok(1));
}

#[test]
fn sim_fault_on_nth_device_info() {
    let sim = SimBackend::new(vec![SimModel::H100_NVL_94GB; 4], SEED);
    let injected = GpuError::Injected {
        call: op::DEVICE_INFO,
    };
    sim.faults().fail_nth(op::DEVICE_INFO, 3, injected.clone());
    sim.device_info(0).unwrap();
    sim.device_info(1).unwrap();
    assert_eq!(sim.device_info(2), Err(injected));
    sim.device_info(2).unwrap();
    assert_eq!(sim.faults().calls(op::DEVICE_INFO), 4);
}

#[test]
fn sim_fault_on_driver_info() {
    let sim = SimBackend::new(vec![SimModel::A100_40GB], SEED);
    let unloaded = GpuError::DriverNotLoaded {
        reason: "test".into(),
    };
    sim.faults().fail_next(op::DRIVER_INFO, unloaded.clone());
    assert_eq!(sim.driver_info(), Err(unloaded));
}

#[test]
fn sim_backend_is_shareable() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<SimBackend>();
    let shared: std::sync::Arc<dyn GpuBackend> =
        std::sync::Arc::new(SimBackend::new(vec![SimModel::H100_80GB], SEED));
    conformance::all(shared.as_ref());
}
