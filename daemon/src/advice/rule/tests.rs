use proptest::prelude::*;

use super::*;
use crate::advice::history::{ClaimFigures, DeviceFigures, History, HistorySettings};
use crate::gpu::sim::SimModel;

const GIB: u64 = 1 << 30;
const HOUR: u64 = 3600;
const SETTINGS: RuleSettings = RuleSettings {
    min_observed_s: HOUR,
    headroom_percent: 15,
};
const ALL: Offer = Offer {
    mig: true,
    mps: true,
    timeslice: true,
};

/// A device watched every 5 s for `seconds`, at `memory` bytes and `sm` %.
fn watched(seconds: u64, memory: Option<u64>, sm: Option<u32>) -> DeviceHistory {
    let mut h = History::new(HistorySettings {
        interval_s: 5,
        half_life_s: 86_400,
        max_claims: 4,
    });
    let steps = i64::try_from(seconds / 5).unwrap();
    for step in 0..=steps {
        h.observe(
            1_800_000_000 + step * 5,
            &[ClaimFigures {
                uid: "u".into(),
                namespace: "ml".into(),
                name: "c".into(),
                devices: vec![DeviceFigures {
                    device: "gpu-0".into(),
                    memory_used: memory,
                    sm_percent: sm,
                    // As the sampler judges: SM above 0, or (MIG) any process.
                    active: sm.map_or(memory.is_some(), |s| s > 0),
                }],
            }],
        );
    }
    h.device("u", "gpu-0").unwrap().clone()
}

fn advise_on(
    sim: SimModel,
    history: &DeviceHistory,
    current: &CurrentForm,
    offer: Offer,
) -> Advice {
    let spec = sim.spec();
    let profiles = spec.mig_profiles();
    let model = GpuModel {
        product_name: spec.product_name,
        memory_bytes: spec.memory_bytes,
        mig_profiles: &profiles,
    };
    advise(history, current, &model, offer, SETTINGS)
}

#[test]
fn a_whole_gpu_using_a_few_gib_gets_the_smallest_slice_of_each_model() {
    for (sim, memory, profile) in [
        (SimModel::A100_40GB, 3 * GIB, "1g.5gb"),
        (SimModel::A100_80GB, 4 * GIB, "1g.10gb"),
        (SimModel::A30_24GB, 4 * GIB, "1g.6gb"),
        (SimModel::H100_80GB, 4 * GIB, "1g.10gb"),
        (SimModel::H100_NVL_94GB, 4 * GIB, "1g.12gb"),
        (SimModel::H200_141GB, 4 * GIB, "1g.18gb"),
    ] {
        let history = watched(HOUR, Some(memory), Some(5));
        let advice = advise_on(sim, &history, &CurrentForm::Whole, ALL);
        let Form::Mig {
            profile: got,
            memory_bytes,
        } = &advice.form
        else {
            panic!("{sim}: {advice:?}");
        };
        assert_eq!(got, profile, "{sim}: {}", advice.reason);
        assert!(*memory_bytes >= memory * 115 / 100);
        assert_eq!(advice.smallest_mig_fit.as_deref(), Some(profile));
        assert_eq!(advice.sm_p95, Some(10), "5% falls in the 5–10% bucket");
        assert_eq!(advice.observed_s, HOUR);
    }
    let history = watched(HOUR, Some(4 * GIB), Some(5));
    let advice = advise_on(SimModel::H100_80GB, &history, &CurrentForm::Whole, ALL);
    assert_eq!(
        advice.reason,
        "peak 4.0 GiB (4.6 GiB with headroom) and SM p95 10% (11.5%) fit MIG 1g.10gb (9.8 GiB)"
    );
}

#[test]
fn more_sm_than_one_slice_gives_asks_for_more_compute_slices() {
    // p95 bucket end 30% × 1.15 = 34.5%: 3 of 7 slices (42.9%).
    let history = watched(HOUR, Some(4 * GIB), Some(27));
    let advice = advise_on(SimModel::H100_80GB, &history, &CurrentForm::Whole, ALL);
    let memory = SimModel::H100_80GB
        .spec()
        .profile("3g.40gb")
        .unwrap()
        .memory_mib
        << 20;
    assert_eq!(
        advice.form,
        Form::Mig {
            profile: "3g.40gb".into(),
            memory_bytes: memory
        }
    );
}

#[test]
fn too_little_observed_or_too_many_gaps_abstains_and_says_how_much() {
    let history = watched(1200, Some(GIB), Some(5));
    let advice = advise_on(SimModel::H100_80GB, &history, &CurrentForm::Whole, ALL);
    assert_eq!(advice.form, Form::Abstain);
    assert_eq!(advice.reason, "observed 20m of the 60m needed");
    let mut gappy = watched(HOUR, Some(GIB), Some(5));
    gappy.last += 3 * 3600;
    let advice = advise_on(SimModel::H100_80GB, &gappy, &CurrentForm::Whole, ALL);
    assert_eq!(advice.form, Form::Abstain);
    assert!(
        advice
            .reason
            .starts_with("sampled 60m of the 4h since first seen; needs at least half"),
        "{}",
        advice.reason
    );
    let unknown = watched(HOUR, None, Some(5));
    let advice = advise_on(SimModel::H100_80GB, &unknown, &CurrentForm::Whole, ALL);
    assert_eq!(advice.form, Form::Abstain);
    assert_eq!(
        advice.reason,
        "no memory figure was reported for this device"
    );
}

#[test]
fn never_active_gives_it_back() {
    let history = watched(2 * HOUR, Some(300 << 20), Some(0));
    let advice = advise_on(SimModel::H100_80GB, &history, &CurrentForm::Whole, ALL);
    assert_eq!(advice.form, Form::GiveBack);
    assert_eq!(advice.reason, "never active in 2h observed");
}

#[test]
fn without_mig_on_this_model_an_mps_share_with_the_slice_that_would_fit() {
    let history = watched(HOUR, Some(4 * GIB), Some(5));
    let offer = Offer { mig: false, ..ALL };
    let advice = advise_on(SimModel::H100_80GB, &history, &CurrentForm::Whole, offer);
    assert_eq!(
        advice.form,
        Form::Mps {
            memory_bytes: 5 * GIB,
            thread_percentage: 15
        }
    );
    assert_eq!(advice.smallest_mig_fit.as_deref(), Some("1g.10gb"));
    assert!(
        advice
            .reason
            .ends_with("; would fit 1g.10gb, but no NVIDIA H100 80GB HBM3 runs MIG on this node"),
        "{}",
        advice.reason
    );
    let only_timeslice = Offer {
        timeslice: true,
        ..Offer::default()
    };
    let advice = advise_on(
        SimModel::H100_80GB,
        &history,
        &CurrentForm::Whole,
        only_timeslice,
    );
    // 80 GiB / 4.6 GiB = 17 by memory, 100 / 11.5 = 8 by SM.
    assert_eq!(
        advice.form,
        Form::TimeSlicing {
            sharers: 8,
            memory_bytes: 85_520_809_984 / 8
        }
    );
    let nothing = advise_on(
        SimModel::H100_80GB,
        &history,
        &CurrentForm::Whole,
        Offer::default(),
    );
    assert_eq!(nothing.form, Form::Keep);
}

#[test]
fn on_a_mig_slice_sm_is_unknown_and_compute_never_shrinks() {
    // 3 GiB on a 3g.40gb slice: 3g.40gb is the smallest with 3 compute slices.
    let history = watched(HOUR, Some(3 * GIB), None);
    let current = CurrentForm::Mig {
        profile: "3g.40gb".into(),
    };
    let advice = advise_on(SimModel::H100_80GB, &history, &current, ALL);
    assert_eq!(advice.sm_p95, None);
    assert_eq!(advice.form, Form::Keep, "{}", advice.reason);
    assert!(advice.reason.contains("SM unknown"), "{}", advice.reason);
    // On a 4g.40gb slice (cost 4/7 > 3g's 4/8 and 3/7): the 3g would shrink compute.
    let current = CurrentForm::Mig {
        profile: "4g.40gb".into(),
    };
    let advice = advise_on(SimModel::H100_80GB, &history, &current, ALL);
    assert_eq!(advice.form, Form::Keep);
    // A 7g slice with a tiny claim: still nothing with fewer compute slices.
    let current = CurrentForm::Mig {
        profile: "7g.80gb".into(),
    };
    assert_eq!(
        advise_on(SimModel::H100_80GB, &history, &current, ALL).form,
        Form::Keep
    );
}

#[test]
fn already_the_smallest_form_keeps_it() {
    let history = watched(HOUR, Some(4 * GIB), Some(5));
    let current = CurrentForm::Mps {
        memory_bytes: Some(5 * GIB),
        thread_percentage: Some(15),
    };
    let mps_only = Offer {
        mps: true,
        ..Offer::default()
    };
    let advice = advise_on(SimModel::H100_80GB, &history, &current, mps_only);
    assert_eq!(advice.form, Form::Keep);
    assert!(
        advice
            .reason
            .contains("already the smallest fitting form (15% of the GPU)"),
        "{}",
        advice.reason
    );
}

#[test]
fn a_peak_above_every_profile_fits_no_slice() {
    let history = watched(HOUR, Some(79 * GIB), Some(90));
    let advice = advise_on(SimModel::H100_80GB, &history, &CurrentForm::Whole, ALL);
    assert_eq!(advice.smallest_mig_fit, None);
    assert_eq!(advice.form, Form::Keep);
}

fn any_current() -> impl Strategy<Value = CurrentForm> {
    prop_oneof![
        Just(CurrentForm::Whole),
        prop::sample::select(vec![
            "1g.10gb",
            "1g.20gb",
            "2g.20gb",
            "3g.40gb",
            "4g.40gb",
            "7g.80gb",
            "1g.10gb+me"
        ])
        .prop_map(|p| CurrentForm::Mig {
            profile: p.to_owned()
        }),
        (prop::option::of(1u64..=80), prop::option::of(1u32..=100)).prop_map(|(m, t)| {
            CurrentForm::Mps {
                memory_bytes: m.map(|m| m * GIB),
                thread_percentage: t,
            }
        }),
        (1u32..10).prop_map(|sharers| CurrentForm::TimeSlicing { sharers }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// No advised form gives less memory than the exact peak plus headroom.
    #[test]
    fn never_below_the_peak(
        peak in 1u64..(90 * GIB),
        sm in prop::option::of(0u32..=100),
        current in any_current(),
        offer in (any::<bool>(), any::<bool>(), any::<bool>()).prop_map(|(mig, mps, timeslice)| Offer { mig, mps, timeslice }),
        headroom in 0u32..=100,
        sim in prop::sample::select(SimModel::ALL.to_vec()),
    ) {
        let history = watched(600, Some(peak), sm);
        let spec = sim.spec();
        let profiles = spec.mig_profiles();
        let model = GpuModel { product_name: spec.product_name, memory_bytes: spec.memory_bytes, mig_profiles: &profiles };
        let settings = RuleSettings { min_observed_s: 600, headroom_percent: headroom };
        let advice = advise(&history, &current, &model, offer, settings);
        let need = u128::from(peak) * u128::from(100 + headroom) / 100;
        if let Some(memory) = advice.form.memory_bytes() {
            prop_assert!(u128::from(memory) >= need, "{:?} below {} ({})", advice.form, need, advice.reason);
        }
        if let Some(fit) = &advice.smallest_mig_fit {
            let p = profiles.iter().find(|p| &p.name == fit).unwrap();
            prop_assert!(u128::from(p.memory_bytes) >= need);
        }
    }
}
