use proptest::prelude::*;

use super::*;
use crate::advice::node::DeviceAdvice;
use crate::advice::rule::{Advice, CurrentForm};
use crate::gpu::sim::SimModel;

const GIB: u64 = 1 << 30;

fn h100(index: usize, mig_mode: bool) -> GpuState {
    let spec = SimModel::H100_80GB.spec();
    GpuState {
        name: format!("gpu-{index}"),
        product_name: spec.product_name.to_owned(),
        memory_bytes: spec.memory_bytes,
        profiles: spec.mig_profiles(),
        mig_mode,
        held_slices: Vec::new(),
    }
}

fn mig(profile: &str) -> Form {
    let memory_bytes = SimModel::H100_80GB
        .spec()
        .mig_profiles()
        .iter()
        .find(|p| p.name == profile)
        .map_or(0, |p| p.memory_bytes);
    Form::Mig {
        profile: profile.into(),
        memory_bytes,
    }
}

fn claim(name: &str, gpu: &str, form: Form) -> ClaimAdvice {
    ClaimAdvice {
        uid: format!("uid-{name}"),
        namespace: "ml".into(),
        name: name.into(),
        devices: vec![DeviceAdvice {
            device: gpu.into(),
            gpu: gpu.into(),
            current: CurrentForm::Whole,
            advice: Advice {
                form,
                observed_s: 3_600,
                memory_peak: Some(4 * GIB),
                sm_p95: Some(5),
                smallest_mig_fit: None,
                reason: String::new(),
            },
        }],
    }
}

#[test]
fn a_whole_gpu_advised_a_slice_moves_to_the_gpu_running_mig_and_is_freed() {
    let gpus = [h100(0, true), h100(1, false)];
    let out = what_if(&gpus, &[claim("notebook", "gpu-1", mig("1g.10gb"))]);
    assert_eq!(out.gpus_freed, vec!["gpu-1"]);
    assert_eq!(out.moves, vec!["ml/notebook gpu-1 -> gpu-0 mig 1g.10gb"]);
    assert!(out.mig_layouts.is_empty());
    assert_eq!(
        out.summary(),
        "accepting every advice frees 1 of 1 held GPU (gpu-1)"
    );
}

#[test]
fn slices_pack_onto_one_emptied_gpu_that_then_needs_a_layout() {
    let gpus: Vec<GpuState> = (0..3).map(|i| h100(i, false)).collect();
    let claims = [
        claim("a", "gpu-0", mig("1g.10gb")),
        claim("b", "gpu-1", mig("1g.10gb")),
        claim("c", "gpu-2", mig("3g.40gb")),
    ];
    let out = what_if(&gpus, &claims);
    assert_eq!(out.gpus_freed, vec!["gpu-1", "gpu-2"], "{out:?}");
    assert_eq!(out.mig_layouts, vec!["gpu-0 [1g.10gb×2, 3g.40gb]"]);
    assert!(
        out.summary()
            .ends_with("; needs [mig] layouts: gpu-0 [1g.10gb×2, 3g.40gb]")
    );
}

#[test]
fn a_slice_does_not_go_where_the_planner_finds_no_room() {
    let mut full = h100(0, true);
    full.held_slices = vec![("uid-big".into(), 0, Placement { start: 0, size: 8 })];
    let full_id = full
        .profiles
        .iter()
        .find(|p| p.name == "7g.80gb")
        .map(|p| p.id)
        .unwrap();
    full.held_slices[0].1 = full_id;
    let gpus = [full, h100(1, false)];
    let claims = [
        claim("big", "gpu-0", Form::Keep),
        claim("small", "gpu-1", mig("1g.10gb")),
    ];
    let out = what_if(&gpus, &claims);
    assert_eq!(
        out.moves,
        vec!["ml/small gpu-1 -> gpu-1 mig 1g.10gb"],
        "its own GPU, emptied, given a layout"
    );
    assert!(out.gpus_freed.is_empty());
    assert_eq!(out.mig_layouts, vec!["gpu-1 [1g.10gb]"]);
}

#[test]
fn give_backs_free_and_keeps_stay() {
    let gpus = [h100(0, false), h100(1, false), h100(2, false)];
    let claims = [
        claim("idle", "gpu-0", Form::GiveBack),
        claim("busy", "gpu-1", Form::Keep),
        claim("new", "gpu-2", Form::Abstain),
    ];
    let out = what_if(&gpus, &claims);
    assert_eq!(out.gpus_freed, vec!["gpu-0"]);
    assert_eq!(out.gpus_held, 3);
}

#[test]
fn mps_shares_pack_first_fit_by_memory_and_threads() {
    let gpus: Vec<GpuState> = (0..3).map(|i| h100(i, false)).collect();
    let mps = |threads| Form::Mps {
        memory_bytes: 10 * GIB,
        thread_percentage: threads,
    };
    let claims = [
        claim("a", "gpu-0", mps(50)),
        claim("b", "gpu-1", mps(50)),
        claim("c", "gpu-2", mps(10)),
    ];
    let out = what_if(&gpus, &claims);
    assert_eq!(out.gpus_freed.len(), 1, "{out:?}");
    assert_eq!(out.moves.len(), 3);
    let targets: BTreeSet<&str> = out
        .moves
        .iter()
        .filter_map(|m| m.split(" -> ").nth(1)?.split(' ').next())
        .collect();
    assert_eq!(
        targets.len(),
        2,
        "threads over 100 need a second GPU: {out:?}"
    );
}

#[test]
fn nothing_to_do_frees_nothing() {
    let out = what_if(&[h100(0, false)], &[claim("a", "gpu-0", Form::Keep)]);
    assert_eq!(out.summary(), "accepting every advice frees no GPU");
}

fn any_form() -> impl Strategy<Value = Form> {
    prop_oneof![
        Just(Form::Keep),
        Just(Form::Abstain),
        Just(Form::GiveBack),
        prop::sample::select(vec!["1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb"])
            .prop_map(mig),
        (1u64..=80, 1u32..=20).prop_map(|(g, t)| Form::Mps {
            memory_bytes: g * GIB,
            thread_percentage: t * 5,
        }),
        (2u32..=8).prop_map(|k| Form::TimeSlicing {
            sharers: k,
            memory_bytes: 80 * GIB / u64::from(k),
        }),
    ]
}

proptest! {
    #[test]
    fn freed_gpus_are_held_by_leaving_claims_and_layouts_replan(
        mig_modes in prop::collection::vec(any::<bool>(), 1..6),
        forms in prop::collection::vec((0usize..6, any_form()), 0..10),
    ) {
        let gpus: Vec<GpuState> =
            mig_modes.iter().enumerate().map(|(i, &m)| h100(i, m)).collect();
        let claims: Vec<ClaimAdvice> = forms
            .iter()
            .enumerate()
            .map(|(i, (g, f))| claim(&format!("c{i}"), &format!("gpu-{}", g % gpus.len()), f.clone()))
            .collect();
        let out = what_if(&gpus, &claims);
        let staying: BTreeSet<&str> = claims
            .iter()
            .filter(|c| matches!(c.devices[0].advice.form, Form::Keep | Form::Abstain))
            .map(|c| c.devices[0].gpu.as_str())
            .collect();
        let held: BTreeSet<&str> = claims.iter().map(|c| c.devices[0].gpu.as_str()).collect();
        prop_assert!(out.gpus_freed.len() <= held.len());
        for freed in &out.gpus_freed {
            prop_assert!(held.contains(freed.as_str()) && !staying.contains(freed.as_str()));
        }
        // Every GPU's slices after the moves, laid out again from scratch,
        // insert into an empty GPU without error.
        let mut per_gpu: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for line in &out.moves {
            let Some((_, to)) = line.split_once(" -> ") else { continue };
            let mut words = to.split(' ');
            if let (Some(gpu), Some("mig"), Some(profile)) = (words.next(), words.next(), words.next()) {
                per_gpu.entry(gpu).or_default().push(profile);
                prop_assert!(!out.gpus_freed.iter().any(|f| f == gpu));
            }
        }
        let geometry = MigGeometry::new(h100(0, true).profiles).unwrap();
        for (gpu, profiles) in per_gpu {
            let targets = plan_layout(&Occupancy::empty(&geometry), &profiles, ForeignPolicy::Keep);
            prop_assert!(targets.is_ok(), "{gpu}: {profiles:?}");
            let mut occupancy = Occupancy::empty(&geometry);
            for (t, gi_id) in targets.unwrap().into_iter().zip(0u32..) {
                let occupant = Occupant { gi_id, profile_id: t.profile_id, placement: t.placement, ownership: Ownership::Held };
                prop_assert!(occupancy.insert(occupant).is_ok());
            }
        }
    }
}
