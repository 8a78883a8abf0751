//! On a simulated node with a real engine: gpu-0 and gpu-1 whole (shared
//! with the fake tools), gpu-2 running MIG under a `[mig]` layout.

use super::*;
use crate::advice::history::{ClaimFigures, DeviceFigures, HistorySettings};
use crate::advice::offer::{Usable, node_offer};
use crate::config::{MigConfig, MigGpuConfig};
use crate::testkit::{SimNode, SimNodeBuilder, requests};

const A: &str = "aaaaaaaa-0000-4000-8000-000000000001";
const B: &str = "bbbbbbbb-0000-4000-8000-000000000002";
const GIB: u64 = 1 << 30;
const SETTINGS: RuleSettings = RuleSettings {
    min_observed_s: 60,
    headroom_percent: 15,
};

fn node() -> SimNode {
    let mig = MigConfig {
        gpu: vec![MigGpuConfig {
            index: Some(2),
            layout: vec!["3g.40gb".into(), "1g.10gb".into()],
            ..MigGpuConfig::default()
        }],
        ..MigConfig::default()
    };
    SimNodeBuilder::h100s(3).mig(mig).fake_tools().start()
}

/// The node, claim A holding gpu-0 whole.
fn a_on_gpu_0() -> SimNode {
    let node = node();
    node.engine()
        .prepare(&requests::request(A, &["gpu-0"]))
        .unwrap();
    node
}

/// `uid`'s `device` seen for two minutes at `memory` and `sm` percent.
fn watched(history: &mut History, uid: &str, device: &str, memory: u64, sm: u32) {
    for step in 0..=24 {
        history.observe(
            1_800_000_000 + step * 5,
            &[ClaimFigures {
                uid: uid.into(),
                namespace: "ml".into(),
                name: "c".into(),
                devices: vec![DeviceFigures {
                    device: device.into(),
                    memory_used: Some(memory),
                    sm_percent: Some(sm),
                    active: sm > 0,
                }],
            }],
        );
    }
}

fn empty_history() -> History {
    History::new(HistorySettings {
        interval_s: 5,
        half_life_s: 86_400,
        max_claims: 16,
    })
}

fn advice_of(node: &SimNode, history: &History, usable: Usable) -> Vec<ClaimAdvice> {
    let engine = node.engine();
    let inventory = engine.inventory();
    let offer = node_offer(&inventory, usable);
    node_advice(&engine.claims(), &inventory, history, &offer, SETTINGS)
}

#[test]
fn sim_a_whole_h100_using_4_gib_gets_a_1g_10gb_slice() {
    let node = a_on_gpu_0();
    let mut history = empty_history();
    watched(&mut history, A, "gpu-0", 4 * GIB, 5);
    let claims = advice_of(&node, &history, Usable::default());
    let device = &claims[0].devices[0];
    assert_eq!(
        (device.device.as_str(), device.gpu.as_str()),
        ("gpu-0", "gpu-0")
    );
    assert_eq!(device.current, CurrentForm::Whole);
    let Form::Mig { profile, .. } = &device.advice.form else {
        panic!("{device:?}");
    };
    assert_eq!(profile, "1g.10gb");
    assert_eq!(device_class(&device.advice.form), Some("mig.nvidia.com"));
    assert_eq!(device.advice.observed_s, 120);
}

#[test]
fn sim_a_claim_without_history_abstains() {
    let node = a_on_gpu_0();
    let claims = advice_of(&node, &empty_history(), Usable::default());
    assert_eq!(claims[0].devices[0].advice.form, Form::Abstain);
    assert_eq!(claims[0].devices[0].advice.reason, "not observed yet");
}

#[test]
fn sim_current_forms_come_from_the_records() {
    let node = node();
    let engine = node.engine();
    let slice = node.slice("3g.40gb");
    engine.prepare(&requests::request(A, &[&slice])).unwrap();
    for uid in [B, "cccccccc-0000-4000-8000-000000000003"] {
        let ts = requests::timeslicing("Default");
        engine
            .prepare(&requests::request_with(uid, &["gpu-1"], &[ts]))
            .unwrap();
    }
    let claims = advice_of(&node, &empty_history(), Usable::default());
    assert_eq!(
        claims[0].devices[0].current,
        CurrentForm::Mig {
            profile: "3g.40gb".into()
        }
    );
    assert_eq!(claims[0].devices[0].gpu, "gpu-2");
    for claim in &claims[1..] {
        assert_eq!(
            claim.devices[0].current,
            CurrentForm::TimeSlicing { sharers: 2 }
        );
    }
}

#[test]
fn sim_an_mps_claim_is_read_with_its_threads() {
    let node = node();
    node.engine()
        .prepare(&requests::request_with(A, &["gpu-0"], &[requests::mps(40)]))
        .unwrap();
    let claims = advice_of(&node, &empty_history(), Usable::default());
    let CurrentForm::Mps {
        thread_percentage, ..
    } = &claims[0].devices[0].current
    else {
        panic!("{:?}", claims[0].devices[0]);
    };
    assert_eq!(*thread_percentage, Some(40));
}
