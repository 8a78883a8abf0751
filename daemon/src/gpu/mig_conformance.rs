//! MIG test bodies every backend must pass, written against `&dyn GpuBackend`
//! and one GPU index. The sim runs them on every model (`sim::tests::mig`); the
//! NVML backend runs them `#[ignore]`d where a GPU is lent.
//!
//! Read-only bodies (`profiles_are_consistent`, `instances_are_consistent`)
//! may run on any node. The others create and destroy instances: they need a
//! GPU with MIG enabled and no instances, and leave it that way; none changes
//! the MIG mode.

use super::{GpuBackend, GpuError, GpuInstance, MigProfile, Placement};

/// Memory slices of the GPU: the end of the furthest placement.
fn total_slices(profiles: &[MigProfile]) -> u32 {
    (profiles.iter())
        .flat_map(|p| p.placements.iter())
        .map(|p| p.start + p.size)
        .max()
        .unwrap_or(0)
}

/// Profiles ascending by index, each with placements of its own size inside
/// the GPU, ascending, plausible counts and "Ng.Xgb" names.
pub(crate) fn profiles_are_consistent(backend: &dyn GpuBackend, index: u32) {
    let profiles = backend.mig_profiles(index).unwrap();
    assert!(!profiles.is_empty(), "GPU {index}: no MIG profiles");
    assert!(
        profiles.windows(2).all(|w| w[0].index < w[1].index),
        "{profiles:?}"
    );
    let total = total_slices(&profiles);
    assert!(
        total == 4 || total == 8,
        "GPU {index}: {total} memory slices"
    );
    for p in &profiles {
        let (g, rest) = p.name.split_once("g.").unwrap_or(("", ""));
        assert_eq!(g.parse::<u32>().ok(), Some(p.compute_slices), "{}", p.name);
        assert!(rest.contains("gb"), "{}", p.name);
        assert!(
            p.max_count >= 1 && p.multiprocessors > 0 && p.memory_bytes > 0,
            "{p:?}"
        );
        if p.media_extensions() {
            assert_eq!(p.max_count, 1, "{}", p.name);
        }
        assert!(!p.placements.is_empty(), "{}: no placements", p.name);
        assert!(
            p.placements.windows(2).all(|w| w[0].start < w[1].start),
            "{p:?}"
        );
        for at in &p.placements {
            assert_eq!(at.size, p.memory_slices, "{}: {at:?}", p.name);
            assert!(at.start + at.size <= total, "{}: {at:?}", p.name);
        }
    }
}

/// Instances ascending by id, on allowed placements, never overlapping, each
/// with compute instances ascending by id and MIG- UUIDs.
pub(crate) fn instances_are_consistent(backend: &dyn GpuBackend, index: u32) {
    let profiles = backend.mig_profiles(index).unwrap();
    let instances = backend.gpu_instances(index).unwrap();
    assert!(
        instances.windows(2).all(|w| w[0].id < w[1].id),
        "{instances:?}"
    );
    for (n, gi) in instances.iter().enumerate() {
        let profile = profiles.iter().find(|p| p.id == gi.profile_id);
        let profile = profile.unwrap_or_else(|| panic!("GI {}: unknown profile", gi.id));
        assert!(profile.placements.contains(&gi.placement), "GI {gi:?}");
        for other in &instances[n + 1..] {
            assert!(!gi.placement.overlaps(other.placement), "{gi:?} {other:?}");
        }
        let cis = &gi.compute_instances;
        assert!(cis.windows(2).all(|w| w[0].id < w[1].id), "{cis:?}");
        for ci in cis {
            let uuid = ci.uuid.strip_prefix("MIG-").unwrap_or("");
            assert!(uuid::Uuid::try_parse(uuid).is_ok(), "CI uuid {}", ci.uuid);
        }
    }
}

fn assert_empty(backend: &dyn GpuBackend, index: u32) {
    assert_eq!(
        backend.gpu_instances(index).unwrap(),
        Vec::<GpuInstance>::new()
    );
}

/// Destroys every instance on the GPU, compute instances first.
pub(crate) fn clear(backend: &dyn GpuBackend, index: u32) {
    for gi in backend.gpu_instances(index).unwrap() {
        for ci in &gi.compute_instances {
            backend
                .destroy_compute_instance(index, gi.id, ci.id)
                .unwrap();
        }
        backend.destroy_gpu_instance(index, gi.id).unwrap();
    }
}

/// Every profile at every placement on an empty GPU: create the GI, then its
/// CI; the GI refuses to go while the CI exists; destroy CI, then GI.
pub(crate) fn every_profile_at_every_placement(backend: &dyn GpuBackend, index: u32) {
    assert_empty(backend, index);
    for p in backend.mig_profiles(index).unwrap() {
        for &at in &p.placements {
            let gi = backend.create_gpu_instance(index, p.id, at).unwrap();
            assert_eq!((gi.profile_id, gi.placement), (p.id, at), "{}", p.name);
            assert!(gi.compute_instances.is_empty());
            let ci = backend.create_compute_instance(index, gi.id).unwrap();
            let listed = backend.gpu_instances(index).unwrap();
            assert_eq!(listed.len(), 1);
            assert_eq!(listed[0].compute_instances, vec![ci.clone()]);
            instances_are_consistent(backend, index);
            let busy = backend.destroy_gpu_instance(index, gi.id);
            assert!(matches!(busy, Err(GpuError::InUse { .. })), "{busy:?}");
            backend
                .destroy_compute_instance(index, gi.id, ci.id)
                .unwrap();
            backend.destroy_gpu_instance(index, gi.id).unwrap();
            assert_empty(backend, index);
        }
    }
}

/// With one instance at a placement, every overlapping create is refused
/// INSUFFICIENT_RESOURCES and leaves the GPU as it was.
pub(crate) fn overlaps_refused(backend: &dyn GpuBackend, index: u32) {
    let profiles = backend.mig_profiles(index).unwrap();
    for first in &profiles {
        for &at in &first.placements {
            let gi = backend.create_gpu_instance(index, first.id, at).unwrap();
            for second in &profiles {
                for &other in second.placements.iter().filter(|o| o.overlaps(at)) {
                    let refused = backend.create_gpu_instance(index, second.id, other);
                    assert!(
                        matches!(refused, Err(GpuError::InsufficientResources { .. })),
                        "{} at {other:?} over {} at {at:?}: {refused:?}",
                        second.name,
                        first.name
                    );
                }
            }
            assert_eq!(backend.gpu_instances(index).unwrap(), vec![gi.clone()]);
            backend.destroy_gpu_instance(index, gi.id).unwrap();
        }
    }
}

/// Placements of `profile` that do not overlap each other, first-fit.
fn disjoint(profile: &MigProfile) -> Vec<Placement> {
    let mut taken: Vec<Placement> = Vec::new();
    for &at in &profile.placements {
        if taken.iter().all(|t| !t.overlaps(at)) {
            taken.push(at);
        }
    }
    taken
}

/// Each profile can be created `max_count` times, never more; a "+me"
/// profile once per GPU, whichever "+me" profile it is.
pub(crate) fn max_counts(backend: &dyn GpuBackend, index: u32) {
    let profiles = backend.mig_profiles(index).unwrap();
    for p in &profiles {
        let places = disjoint(p);
        let mut made = 0;
        for &at in &places {
            match backend.create_gpu_instance(index, p.id, at) {
                Ok(_) => made += 1,
                Err(GpuError::InsufficientResources { .. }) => break,
                Err(other) => panic!("{} at {at:?}: {other:?}", p.name),
            }
        }
        let placeable = u32::try_from(places.len()).unwrap();
        assert_eq!(made, p.max_count.min(placeable), "{}", p.name);
        if p.media_extensions() {
            for other in profiles.iter().filter(|o| o.media_extensions()) {
                let free = other.placements.iter().find(|at| {
                    let listed = backend.gpu_instances(index).unwrap();
                    listed.iter().all(|gi| !gi.placement.overlaps(**at))
                });
                if let Some(&at) = free {
                    let refused = backend.create_gpu_instance(index, other.id, at);
                    assert!(
                        matches!(refused, Err(GpuError::InsufficientResources { .. })),
                        "second +me {} after {}: {refused:?}",
                        other.name,
                        p.name
                    );
                }
            }
        }
        clear(backend, index);
    }
}

/// A placement the profile does not list, an unknown profile, an unknown GI
/// or CI: refused, nothing created.
pub(crate) fn invalid_requests_refused(backend: &dyn GpuBackend, index: u32) {
    let profiles = backend.mig_profiles(index).unwrap();
    let total = total_slices(&profiles);
    for p in &profiles {
        let wrong = (0..total)
            .map(|start| Placement {
                start,
                size: p.memory_slices,
            })
            .find(|at| !p.placements.contains(at));
        if let Some(at) = wrong {
            let refused = backend.create_gpu_instance(index, p.id, at);
            assert!(
                matches!(refused, Err(GpuError::Nvml { .. })),
                "{}: {refused:?}",
                p.name
            );
        }
    }
    let unknown = profiles.iter().map(|p| p.id).max().unwrap_or(0) + 100;
    let at = Placement { start: 0, size: 1 };
    let refused = backend.create_gpu_instance(index, unknown, at);
    assert!(matches!(refused, Err(GpuError::Nvml { .. })), "{refused:?}");
    let missing = backend.create_compute_instance(index, 99);
    assert!(
        matches!(missing, Err(GpuError::NotFound { .. })),
        "{missing:?}"
    );
    let missing = backend.destroy_gpu_instance(index, 99);
    assert!(
        matches!(missing, Err(GpuError::NotFound { .. })),
        "{missing:?}"
    );
    assert_empty(backend, index);
}

/// A GI holds one full compute instance; a second is refused.
pub(crate) fn one_compute_instance_per_gpu_instance(backend: &dyn GpuBackend, index: u32) {
    let p = &backend.mig_profiles(index).unwrap()[0];
    let gi = backend
        .create_gpu_instance(index, p.id, p.placements[0])
        .unwrap();
    let ci = backend.create_compute_instance(index, gi.id).unwrap();
    assert_eq!(ci.id, 0);
    let second = backend.create_compute_instance(index, gi.id);
    assert!(
        matches!(second, Err(GpuError::InsufficientResources { .. })),
        "{second:?}"
    );
    let missing = backend.destroy_compute_instance(index, gi.id, ci.id + 1);
    assert!(
        matches!(missing, Err(GpuError::NotFound { .. })),
        "{missing:?}"
    );
    clear(backend, index);
}

/// All mutating bodies, on an empty MIG-enabled GPU.
pub(crate) fn all_mutating(backend: &dyn GpuBackend, index: u32) {
    profiles_are_consistent(backend, index);
    every_profile_at_every_placement(backend, index);
    overlaps_refused(backend, index);
    max_counts(backend, index);
    invalid_requests_refused(backend, index);
    one_compute_instance_per_gpu_instance(backend, index);
}
