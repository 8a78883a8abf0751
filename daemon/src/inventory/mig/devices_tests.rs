//! Tests of MIG device naming, attributes and counters over every modelled GPU.

use super::*;
use crate::gpu::sim::SimModel;
use crate::gpu::{GpuInfo, MediaUse, MigMode, MigSupport};

fn mig_of(model: SimModel) -> GpuMig {
    GpuMig::new(model.spec().mig_profiles())
}

fn parent(model: SimModel) -> GpuDevice {
    let spec = model.spec();
    let info = GpuInfo {
        index: 0,
        uuid: "GPU-00000000-0000-4000-8000-000000000000".into(),
        product_name: spec.product_name.into(),
        brand: spec.brand.into(),
        architecture: spec.architecture.into(),
        compute_capability: spec.compute_capability,
        memory_bytes: spec.memory_bytes,
        pci_bus_id: "0000:18:00.0".into(),
        pcie_root: Some("pci0000:17".into()),
        numa_node: Some(1),
        minor: 0,
        mig: MigSupport::Supported {
            current: MigMode::Enabled,
            pending: MigMode::Enabled,
        },
        nvlink_links: 0,
        fabric: None,
    };
    GpuDevice {
        mig: Some(mig_of(model)),
        ..GpuDevice::new(info, spec.mig_profiles())
    }
}

fn driver() -> DriverInfo {
    DriverInfo {
        driver_version: "580.95.05".into(),
        cuda_driver_version: (13, 0),
    }
}

fn every_slice(model: SimModel) -> Vec<MigDevice> {
    let mig = mig_of(model);
    mig.profiles
        .iter()
        .flat_map(|p| {
            p.placements.iter().map(|pl| MigDevice {
                name: mig_device_name(0, &p.name, pl.start),
                parent: 0,
                profile: p.clone(),
                placement: *pl,
                uuid: None,
            })
        })
        .collect()
}

fn fits(budget: &BTreeMap<String, i64>, used: &[BTreeMap<String, i64>]) -> bool {
    budget.iter().all(|(k, v)| {
        let sum: i64 = used.iter().filter_map(|u| u.get(k)).sum();
        sum <= *v
    }) && used
        .iter()
        .all(|u| u.keys().all(|k| budget.contains_key(k)))
}

#[test]
fn names_are_unique_dns_labels() {
    for model in SimModel::with_mig() {
        let slices = every_slice(model);
        let mut names: Vec<&str> = slices.iter().map(|s| s.name.as_str()).collect();
        for name in &names {
            assert!(name.len() <= 63, "{name}");
            assert!(
                name.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
                "{name}"
            );
        }
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(before, names.len(), "{model}: names collide");
    }
}

#[test]
fn attributes_say_what_nvidia_selectors_read() {
    let model = SimModel::H100_80GB;
    let gpu = parent(model);
    for slice in every_slice(model) {
        let attrs = mig_attributes(&slice, &gpu, &driver());
        assert_eq!(attrs.get("type"), Some(&AttrValue::Str("mig".into())));
        assert_eq!(
            attrs.get("profile"),
            Some(&AttrValue::Str(slice.profile.name.clone()))
        );
        assert_eq!(
            attrs.get("parentUUID"),
            Some(&AttrValue::Str(gpu.info.uuid.clone()))
        );
        assert!(attrs.contains_key("productName"));
        // A slice sits where its GPU does.
        assert_eq!(
            attrs.get("resource.kubernetes.io/pcieRoot"),
            Some(&AttrValue::Str("pci0000:17".into()))
        );
        assert_eq!(
            attrs.get("resource.kubernetes.io/numaNode"),
            Some(&AttrValue::Int(1))
        );
        assert!(
            !attrs.contains_key("uuid"),
            "no uuid before the slice exists"
        );
        let capacity = mig_capacity(&slice.profile);
        assert!(attrs.len() + capacity.len() <= 32, "{}", slice.name);
        assert_eq!(
            capacity.get("memory"),
            Some(&i64::try_from(slice.profile.memory_bytes).unwrap())
        );
    }
}

/// Two slices fit the counters together exactly when NVML would make both:
/// apart, within the compute slices, and their media engines allowed
/// together (one "+me"; beside a "+me.all" only "-me").
#[test]
fn counters_admit_a_pair_of_slices_exactly_when_nvml_would() {
    for model in SimModel::with_mig() {
        let mig = mig_of(model);
        let budget = gpu_counters(&mig);
        let slices = every_slice(model);
        let compute = mig.profiles.iter().map(|p| p.compute_slices).max().unwrap();
        for a in &slices {
            let ua = slice_consumption(&mig, &a.profile, a.placement);
            assert!(fits(&budget, std::slice::from_ref(&ua)), "{}", a.name);
            for b in &slices {
                let ub = slice_consumption(&mig, &b.profile, b.placement);
                let both = fits(&budget, &[ua.clone(), ub]);
                let media = (MediaUse::NONE.with(a.profile.media()))
                    .refusal(b.profile.media())
                    .is_some();
                let nvml = !a.placement.overlaps(b.placement)
                    && !media
                    && a.profile.compute_slices + b.profile.compute_slices <= compute;
                assert_eq!(both, nvml, "{model}: {} and {}", a.name, b.name);
            }
        }
    }
}

#[test]
fn the_whole_gpu_consumes_every_counter() {
    let mig = mig_of(SimModel::A30_24GB);
    assert_eq!(mig.memory_slices, 4);
    let budget = gpu_counters(&mig);
    for slice in every_slice(SimModel::A30_24GB) {
        let used = slice_consumption(&mig, &slice.profile, slice.placement);
        assert!(!fits(&budget, &[budget.clone(), used]));
    }
}

#[test]
fn foreign_instances_leave_the_counter_set_and_the_whole_gpu_cannot_fit() {
    for model in SimModel::with_mig() {
        let mut mig = mig_of(model);
        assert_eq!(free_counters(&mig), gpu_counters(&mig), "{model:?}");
        let profile = mig.profiles[0].clone();
        let placement = profile.placements[0];
        mig.foreign = vec![(profile.id, placement)];
        let free = free_counters(&mig);
        for (name, used) in slice_consumption(&mig, &profile, placement) {
            assert_eq!(
                free[&name],
                gpu_counters(&mig)[&name] - used,
                "{model:?} {name}"
            );
        }
        let whole_fits = gpu_counters(&mig).iter().all(|(k, v)| free[k] >= *v);
        assert!(!whole_fits, "{model:?}: the whole GPU still fits");
        let overlapping = slice_consumption(&mig, &profile, placement);
        assert!(
            overlapping.iter().any(|(k, v)| free[k] < *v),
            "{model:?}: a slice on the foreign one still fits"
        );
    }
}
