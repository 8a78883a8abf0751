//! The usage snapshot on the simulated backend: claim kinds, MIG slices held,
//! free, made ahead and foreign, and the overlap rule for free slices.

use std::collections::{BTreeMap, HashSet};

use super::{SliceState, SliceUse};
use crate::claims::Engine;
use crate::claims::access::mig::unheld_slices;
use crate::config::{MigConfig, MigCreate, MigGpuConfig, MigOffering};
use crate::gpu::{GpuBackend, GpuInstance, Placement};
use crate::state::AccessKind;
use crate::testkit::requests::request as req;
use crate::testkit::{SimNode, SimNodeBuilder};

const A: &str = "aaaaaaaa-0000-4000-8000-00000000000a";
const B: &str = "bbbbbbbb-0000-4000-8000-00000000000b";
const LAYOUT: [&str; 4] = ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"];

/// Two H100s; gpu-0 in MIG mode with [`LAYOUT`], gpu-1 whole.
fn start(create: MigCreate) -> SimNode {
    let mig = MigConfig {
        advertise: Some(MigOffering::Layout),
        create,
        gpu: vec![MigGpuConfig {
            index: Some(0),
            layout: LAYOUT.iter().map(|s| (*s).to_owned()).collect(),
            ..MigGpuConfig::default()
        }],
    };
    SimNodeBuilder::h100s(2)
        .seed("usage")
        .boot("b1")
        .mig(mig)
        .start()
}

/// (profile, state) → count, for gpu-0.
fn slices(engine: &Engine) -> BTreeMap<(String, SliceState), usize> {
    let mut out = BTreeMap::new();
    for s in engine.usage().mig_slices {
        assert_eq!(s.gpu, "gpu-0", "only gpu-0 is in MIG mode");
        *out.entry((s.profile, s.state)).or_default() += 1;
    }
    out
}

fn key(profile: &str, state: SliceState) -> (String, SliceState) {
    (profile.to_owned(), state)
}

#[test]
fn claims_are_counted_by_kind_and_slices_move_from_free_to_held() {
    let node = start(MigCreate::OnPrepare);
    let engine = node.engine();
    let before = slices(engine);
    assert_eq!(before.get(&key("1g.10gb", SliceState::Free)), Some(&2));
    assert_eq!(before.get(&key("3g.40gb", SliceState::Free)), Some(&1));
    assert_eq!(before.values().sum::<usize>(), 4, "{before:?}");

    engine.prepare(&req(A, &["gpu-1"])).unwrap();
    engine.prepare(&req(B, &["gpu-0-mig-3g40gb-4"])).unwrap();
    let usage = engine.usage();
    let mut kinds = usage.claims.clone();
    kinds.sort();
    assert_eq!(kinds, vec![AccessKind::Exclusive, AccessKind::Mig]);
    assert_eq!(usage.gpus, 2);
    assert!(
        usage.mps_daemons.is_empty(),
        "no MPS view in the engine yet"
    );
    let after = slices(engine);
    assert_eq!(after.get(&key("3g.40gb", SliceState::Held)), Some(&1));
    assert_eq!(after.get(&key("3g.40gb", SliceState::Free)), None);
    assert_eq!(after.get(&key("1g.10gb", SliceState::Free)), Some(&2));

    engine.unprepare(B).unwrap();
    assert_eq!(slices(engine), before, "the slice is free again");
}

#[test]
fn slices_made_ahead_are_idle_until_a_claim_holds_one() {
    let node = start(MigCreate::Ahead);
    let engine = node.engine();
    let idle = slices(engine);
    assert_eq!(idle.get(&key("1g.10gb", SliceState::MadeAhead)), Some(&2));
    assert_eq!(idle.values().sum::<usize>(), 4, "{idle:?}");
    let name = engine
        .inventory()
        .mig
        .iter()
        .find(|m| m.profile.name == "2g.20gb")
        .map(|m| m.name.clone())
        .unwrap();
    engine.prepare(&req(A, &[&name])).unwrap();
    let now = slices(engine);
    assert_eq!(now.get(&key("2g.20gb", SliceState::Held)), Some(&1));
    assert_eq!(now.get(&key("2g.20gb", SliceState::MadeAhead)), None);
    assert_eq!(now.get(&key("1g.10gb", SliceState::MadeAhead)), Some(&2));
}

#[test]
fn an_instance_gpusliced_did_not_make_is_foreign_and_blocks_the_free_slice_under_it() {
    let node = start(MigCreate::OnPrepare);
    let (backend, engine) = (&node.sim, node.engine());
    let profile = engine.inventory().gpus[0]
        .mig
        .as_ref()
        .and_then(|m| m.profile("3g.40gb").cloned())
        .unwrap();
    // Where the layout offers its 3g.40gb: slices 4-7.
    let placement = Placement { start: 4, size: 4 };
    backend
        .create_gpu_instance(0, profile.id, placement)
        .unwrap();
    let now = slices(engine);
    assert_eq!(now.get(&key("3g.40gb", SliceState::Foreign)), Some(&1));
    assert_eq!(now.get(&key("3g.40gb", SliceState::Free)), None, "{now:?}");
}

fn gi_at(profile_id: u32, start: u32) -> GpuInstance {
    GpuInstance {
        id: 9,
        profile_id,
        placement: Placement { start, size: 1 },
        compute_instances: vec![],
    }
}

#[test]
fn free_slices_exclude_placements_that_overlap_an_instance() {
    let node = start(MigCreate::OnPrepare);
    let engine = node.engine();
    let inventory = engine.inventory();
    let mig = inventory.gpus[0].mig.as_ref().unwrap();
    let one = mig.profile("1g.10gb").unwrap();
    let gi = gi_at(one.id, 1);
    let open = [
        ("2g.20gb", Placement { start: 0, size: 2 }),
        ("1g.10gb", Placement { start: 2, size: 1 }),
    ];
    let got = unheld_slices("gpu-0", mig, &[gi], &HashSet::new(), &|_| true, &open);
    let expect = |profile: &str, state| SliceUse {
        gpu: "gpu-0".into(),
        profile: profile.into(),
        state,
    };
    assert_eq!(
        got,
        vec![
            expect("1g.10gb", SliceState::MadeAhead),
            expect("1g.10gb", SliceState::Free),
        ]
    );
    let held: HashSet<Placement> = [Placement { start: 1, size: 1 }].into();
    let got = unheld_slices("gpu-0", mig, &[gi_at(one.id, 1)], &held, &|_| true, &open);
    assert_eq!(
        got,
        vec![expect("1g.10gb", SliceState::Free)],
        "a held instance is the table's to count; it still blocks what overlaps it"
    );
}
