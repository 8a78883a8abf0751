//! `nvml_*` MIG tests on real GPUs, all `#[ignore]`d: the read-only ones
//! (profiles, placements, instances, modes, compared with the simulator's
//! tables) are safe on any node; the mutating one creates and destroys
//! instances on the GPU named by `GPUSLICE_NVML_MIG_GPU` only, which must have
//! MIG enabled and no instances. None changes the MIG mode.

use nvml_wrapper::enum_wrappers::device::ComputeMode as NvmlComputeMode;

use super::NvmlBackend;
use super::convert::{compute_mode, nvml_compute_mode};
use crate::gpu::sim::SimModel;
use crate::gpu::{
    ComputeMode, GpuBackend, GpuError, MigMode, MigSupport, conformance, mig_conformance,
};

fn open_real() -> NvmlBackend {
    NvmlBackend::open(None).expect("a GPU node with the NVIDIA driver")
}

/// Indices of the GPUs with MIG mode enabled now.
fn mig_enabled(nvml: &NvmlBackend) -> Vec<u32> {
    let on = MigSupport::Supported {
        current: MigMode::Enabled,
        pending: MigMode::Enabled,
    };
    (conformance::all_gpus(nvml).into_iter())
        .filter(|gpu| gpu.mig == on)
        .map(|gpu| gpu.index)
        .collect()
}

#[test]
#[ignore = "needs an NVIDIA GPU and driver"]
fn nvml_mig_read_only() {
    let nvml = open_real();
    for gpu in conformance::all_gpus(&nvml) {
        println!("GPU {} {}: MIG {:?}", gpu.index, gpu.product_name, gpu.mig);
        println!("  compute mode {:?}", nvml.compute_mode(gpu.index));
        match nvml.mig_profiles(gpu.index) {
            Ok(profiles) => {
                for p in &profiles {
                    println!("  {p:?}");
                }
                mig_conformance::profiles_are_consistent(&nvml, gpu.index);
                mig_conformance::instances_are_consistent(&nvml, gpu.index);
            }
            Err(GpuError::NotSupported { what }) => {
                println!("  no profiles: {what}");
                assert!(!mig_enabled(&nvml).contains(&gpu.index), "{what}");
            }
            Err(other) => panic!("GPU {}: {other}", gpu.index),
        }
    }
}

/// Every profile NVML reports, field by field, against the simulator's table
/// for the same product. NVML answers the profile queries whatever the MIG
/// mode, so this runs on every MIG-capable GPU.
#[test]
#[ignore = "needs an NVIDIA GPU and driver"]
fn nvml_mig_profiles_match_the_sim_tables() {
    let nvml = open_real();
    let mut compared = 0;
    for gpu in conformance::all_gpus(&nvml) {
        if gpu.mig == MigSupport::NotSupported {
            continue;
        }
        let Some(model) = SimModel::ALL
            .into_iter()
            .find(|m| m.spec().product_name == gpu.product_name)
        else {
            println!(
                "GPU {} {}: no simulated model to compare",
                gpu.index, gpu.product_name
            );
            continue;
        };
        assert_eq!(
            gpu.memory_bytes,
            model.spec().memory_bytes,
            "{model} memory"
        );
        let mut table = model.spec().mig_profiles();
        table.sort_by_key(|p| p.index);
        let real = nvml.mig_profiles(gpu.index).unwrap();
        assert_eq!(
            real, table,
            "{model}: NVML's profiles differ from the sim table"
        );
        println!(
            "GPU {} {}: {} profiles match {model}",
            gpu.index,
            gpu.product_name,
            real.len()
        );
        compared += 1;
    }
    assert!(compared > 0, "no GPU with a simulated model to compare");
}

/// Each GPU's facts, field by field, against the simulator's model of the
/// same product (H100 and H200 on the lent machines; every model of the
/// fleet where one is run): brand, architecture, compute capability,
/// memory, MIG support, and what gpuslice makes of them (its features). The
/// NVLink links and fabric depend on the machine, not the model: printed,
/// and held only to their own rules (a fabric needs NVLink, a canonical
/// cluster UUID).
#[test]
#[ignore = "needs an NVIDIA GPU and driver"]
fn nvml_device_facts_match_the_sim_models() {
    let nvml = open_real();
    let mut compared = 0;
    for gpu in conformance::all_gpus(&nvml) {
        let Some(model) = SimModel::ALL
            .into_iter()
            .find(|m| m.spec().product_name == gpu.product_name)
        else {
            println!("GPU {} {}: no simulated model", gpu.index, gpu.product_name);
            continue;
        };
        let sim = crate::gpu::sim::SimBackend::new(vec![model], "compare");
        let modelled = sim.device_info(0).expect("the simulated GPU");
        let facts = |g: &crate::gpu::GpuInfo| {
            (
                g.product_name.clone(),
                g.brand.clone(),
                g.architecture.clone(),
                g.compute_capability,
                g.memory_bytes,
                g.mig == MigSupport::NotSupported,
            )
        };
        assert_eq!(
            facts(&gpu),
            facts(&modelled),
            "GPU {} against {model}",
            gpu.index
        );
        let features = crate::features::GpuFeatures::of;
        let (real, sim) = (features(&gpu), features(&modelled));
        assert_eq!(
            (real.mig, real.mps, real.mps_limits),
            (sim.mig, sim.mps, sim.mps_limits),
            "GPU {} features against {model}",
            gpu.index
        );
        println!(
            "GPU {} {}: matches {model}; NVLink links {}, fabric {:?}",
            gpu.index, gpu.product_name, gpu.nvlink_links, gpu.fabric
        );
        compared += 1;
    }
    conformance::capabilities(&nvml);
    assert!(compared > 0, "no GPU with a simulated model to compare");
}

#[test]
#[ignore = "creates and destroys MIG instances on GPU $GPUSLICE_NVML_MIG_GPU (MIG on, empty)"]
fn nvml_mig_mutating() {
    let Some(index) = std::env::var("GPUSLICE_NVML_MIG_GPU")
        .ok()
        .and_then(|v| v.parse().ok())
    else {
        return eprintln!("skipped: set GPUSLICE_NVML_MIG_GPU to an empty MIG-enabled GPU's index");
    };
    mig_conformance::all_mutating(&open_real(), index);
}

#[test]
fn compute_modes_convert_both_ways() {
    for mode in [
        ComputeMode::Default,
        ComputeMode::ExclusiveProcess,
        ComputeMode::Prohibited,
    ] {
        assert_eq!(compute_mode(nvml_compute_mode(mode)), Some(mode));
    }
    assert_eq!(compute_mode(NvmlComputeMode::ExclusiveThread), None);
}
