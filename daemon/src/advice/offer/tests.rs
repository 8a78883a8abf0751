use super::*;
use crate::config::{MigConfig, MigGpuConfig};
use crate::gpu::GpuBackend;
use crate::gpu::sim::{SimBackend, SimModel};

const H100: &str = "NVIDIA H100 80GB HBM3";
const BOTH: Usable = Usable {
    mps: true,
    timeslice: true,
};

const BOTH_OFFER: Offer = Offer {
    mig: false,
    mps: true,
    timeslice: true,
};

/// The inventory of these models, the GPUs at `mig` in MIG mode with a
/// `[mig]` entry each.
fn inventory(models: &[SimModel], mig: &[u32]) -> Inventory {
    let backend = SimBackend::new(models.to_vec(), "offer");
    for &index in mig {
        backend.set_mig_mode(index, MigMode::Enabled).unwrap();
    }
    let config = MigConfig {
        gpu: mig
            .iter()
            .map(|&index| MigGpuConfig {
                index: Some(index),
                layout: vec!["7g.80gb".into()],
                ..MigGpuConfig::default()
            })
            .collect(),
        ..MigConfig::default()
    };
    Inventory::from_backend(&backend, &config, &|_, _| crate::mig::Ownership::Foreign).unwrap()
}

#[test]
fn a_node_of_whole_gpus_offers_the_sharing_tools_it_has_and_no_mig() {
    let inv = inventory(&[SimModel::H100_80GB; 2], &[]);
    for (usable, mps, timeslice) in [
        (BOTH, true, true),
        (Usable::default(), false, false),
        (
            Usable {
                mps: true,
                timeslice: false,
            },
            true,
            false,
        ),
    ] {
        let offer = node_offer(&inv, usable);
        let h100 = &offer.models[H100];
        assert_eq!(
            h100.offer,
            Offer {
                mig: false,
                mps,
                timeslice
            }
        );
        assert_eq!(h100.memory_bytes, inv.gpus[0].info.memory_bytes);
    }
}

#[test]
fn one_gpu_of_the_model_in_mig_mode_offers_mig_and_its_table_for_all() {
    let inv = inventory(&[SimModel::H100_80GB; 2], &[0]);
    let offer = node_offer(&inv, BOTH);
    let h100 = offer.of_gpu(&inv, "gpu-1").expect("gpu-1's model");
    assert_eq!(
        h100.offer,
        Offer {
            mig: true,
            ..BOTH_OFFER
        }
    );
    let names: Vec<&str> = h100.mig_profiles.iter().map(|p| p.name.as_str()).collect();
    assert!(names.contains(&"1g.10gb"), "{names:?}");
    assert_eq!(h100.gpu_model().product_name, H100);
}

#[test]
fn every_gpu_in_mig_mode_offers_no_whole_gpu_sharing() {
    let inv = inventory(&[SimModel::H100_80GB], &[0]);
    let h100 = &node_offer(&inv, BOTH).models[H100];
    assert_eq!(
        h100.offer,
        Offer {
            mig: true,
            mps: false,
            timeslice: false
        }
    );
}

#[test]
fn models_are_told_apart() {
    let inv = inventory(&[SimModel::H100_80GB, SimModel::A100_40GB], &[1]);
    let offer = node_offer(&inv, Usable::default());
    assert_eq!(offer.models.len(), 2);
    assert!(!offer.of_gpu(&inv, "gpu-0").unwrap().offer.mig);
    let a100 = offer.of_gpu(&inv, "gpu-1").unwrap();
    assert!(a100.offer.mig);
    assert!(a100.mig_profiles.iter().any(|p| p.name == "1g.5gb"));
    assert!(offer.of_gpu(&inv, "gpu-9").is_none());
}

/// The model's table comes from the model, not from the node's MIG state:
/// an H100 of a node that runs no MIG still knows its profiles (the rule's
/// "would fit ..., but no ... runs MIG" note), an L4 has none and is never
/// offered MIG, and both are offered MPS and time-slicing.
#[test]
fn a_model_knows_its_forms_from_the_model_whatever_the_node_runs() {
    let inv = inventory(&[SimModel::H100_80GB, SimModel::L4_24GB], &[]);
    let offer = node_offer(&inv, BOTH);
    let h100 = offer.of_gpu(&inv, "gpu-0").unwrap();
    assert_eq!(h100.offer, BOTH_OFFER);
    assert!(h100.mig_profiles.iter().any(|p| p.name == "1g.10gb"));
    let l4 = offer.of_gpu(&inv, "gpu-1").unwrap();
    assert_eq!(l4.offer, BOTH_OFFER);
    assert!(l4.mig_profiles.is_empty());
}
