use super::*;
use crate::gpu::sim::SimModel;
use crate::inventory::mig_device_name;

/// Every (profile, placement) of `models`, GPU after GPU, as the scan lists
/// them before ordering.
fn offered(models: &[SimModel]) -> Vec<MigDevice> {
    let mut slices = Vec::new();
    for (parent, model) in models.iter().enumerate() {
        for profile in model.spec().mig_profiles() {
            for &placement in &profile.placements {
                slices.push(MigDevice {
                    name: mig_device_name(
                        u32::try_from(parent).unwrap(),
                        &profile.name,
                        placement.start,
                    ),
                    parent,
                    profile: profile.clone(),
                    placement,
                    uuid: None,
                });
            }
        }
    }
    slices
}

fn names(slices: &[MigDevice]) -> Vec<&str> {
    slices.iter().map(|s| s.name.as_str()).collect()
}

/// A seeded shuffle (splitmix64), enough to vary the input order.
fn shuffled(mut slices: Vec<MigDevice>, seed: u64) -> Vec<MigDevice> {
    let mut state = seed;
    for i in (1..slices.len()).rev() {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        let j = usize::try_from((z ^ (z >> 31)) % (i as u64 + 1)).unwrap();
        slices.swap(i, j);
    }
    slices
}

#[test]
fn a_profile_is_published_gpu_after_gpu_from_the_highest_start_down() {
    let mut slices = offered(&[SimModel::H100_80GB, SimModel::H100_80GB]);
    publication_order(&mut slices);
    let of = |profile: &str| -> Vec<&str> {
        slices
            .iter()
            .filter(|s| s.profile.name == profile)
            .map(|s| s.name.as_str())
            .collect()
    };
    assert_eq!(
        of("3g.40gb"),
        [
            "gpu-0-mig-3g40gb-4",
            "gpu-0-mig-3g40gb-0",
            "gpu-1-mig-3g40gb-4",
            "gpu-1-mig-3g40gb-0"
        ]
    );
    assert_eq!(
        of("1g.10gb")[..8],
        [
            "gpu-0-mig-1g10gb-6",
            "gpu-0-mig-1g10gb-5",
            "gpu-0-mig-1g10gb-4",
            "gpu-0-mig-1g10gb-3",
            "gpu-0-mig-1g10gb-2",
            "gpu-0-mig-1g10gb-1",
            "gpu-0-mig-1g10gb-0",
            "gpu-1-mig-1g10gb-6",
        ]
    );
    assert_eq!(of("7g.80gb"), ["gpu-0-mig-7g80gb-0", "gpu-1-mig-7g80gb-0"]);
}

/// The rule for all inputs the scan can produce: every model, mixed nodes,
/// any input order. Each profile's devices are one run (so the shim can keep
/// them in one ResourceSlice); within it GPUs ascend and, per GPU, starts
/// descend; the result does not depend on the input order.
#[test]
fn every_model_and_input_order_gives_one_run_per_profile_in_order() {
    let nodes: Vec<Vec<SimModel>> = SimModel::ALL
        .iter()
        .map(|&m| vec![m; 8])
        .chain([SimModel::ALL.to_vec()])
        .collect();
    for models in nodes {
        let mut expected = offered(&models);
        publication_order(&mut expected);
        for seed in 0..20 {
            let mut slices = shuffled(offered(&models), seed);
            publication_order(&mut slices);
            assert_eq!(names(&slices), names(&expected), "{models:?} seed {seed}");
        }
        let mut seen: Vec<&str> = Vec::new();
        for pair in expected.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            if a.profile.name != b.profile.name {
                assert!(!seen.contains(&b.profile.name.as_str()), "{} split", b.name);
                seen.push(a.profile.name.as_str());
                continue;
            }
            let later: (usize, std::cmp::Reverse<u32>) =
                (b.parent, std::cmp::Reverse(b.placement.start));
            assert!(
                (a.parent, std::cmp::Reverse(a.placement.start)) < later,
                "{} before {}",
                a.name,
                b.name
            );
        }
        assert_eq!(expected.len(), offered(&models).len());
    }
}

#[test]
fn no_profile_of_eight_gpus_needs_more_than_one_resource_slice() {
    // 64 devices per slice when devices consume counters (resource.k8s.io/v1).
    for model in SimModel::ALL {
        for profile in model.spec().mig_profiles() {
            assert!(
                profile.placements.len() * 8 <= 64,
                "{model} {}",
                profile.name
            );
        }
    }
}
