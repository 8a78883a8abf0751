//! The rule (every configured value, create mode and request), and the
//! switch on a simulated node: both forms served, a claim prepared in one
//! form unprepared and prepared again by name in the other.

use super::{Asked, OfferingSwitch, in_force};
use crate::claims::{DeviceRequest, Engine, PrepareRequest, Prepared, Unprepared};
use crate::config::{MigConfig, MigCreate, MigGpuConfig, MigOffering};
use crate::testkit::{SimNode, SimNodeBuilder};

const A: &str = "aaaaaaaa-0000-4000-8000-00000000000a";
const B: &str = "bbbbbbbb-0000-4000-8000-00000000000b";

fn asked(offering: MigOffering) -> Asked {
    Asked {
        offering,
        reason: "the probe said so".to_owned(),
    }
}

fn mig(advertise: Option<MigOffering>, create: MigCreate) -> MigConfig {
    MigConfig {
        advertise,
        create,
        gpu: vec![MigGpuConfig {
            index: Some(0),
            layout: vec!["3g.40gb".to_owned(), "1g.10gb".to_owned()],
            ..MigGpuConfig::default()
        }],
    }
}

#[test]
fn an_explicit_offering_or_ahead_wins_and_auto_follows_the_plugin() {
    let forms = [
        None,
        Some(MigOffering::Layout),
        Some(MigOffering::Partitionable),
    ];
    for advertise in [
        None,
        Some(MigOffering::Layout),
        Some(MigOffering::Partitionable),
    ] {
        for create in [MigCreate::OnPrepare, MigCreate::Ahead] {
            for form in forms {
                let request = form.map(asked);
                let got = in_force(&mig(advertise, create), request.as_ref());
                let want = match (advertise, create, form) {
                    (Some(MigOffering::Layout), ..) => MigOffering::Layout,
                    (Some(MigOffering::Partitionable), ..) => MigOffering::Partitionable,
                    (None, MigCreate::Ahead, _) | (None, _, None) => MigOffering::Layout,
                    (None, MigCreate::OnPrepare, Some(f)) => f,
                };
                let case = format!("{advertise:?} {create:?} {form:?}: {got:?}");
                assert_eq!(got.offering, want, "{case}");
                assert_eq!(got.configured, advertise, "{case}");
                match (advertise, create, form) {
                    (None, MigCreate::OnPrepare, Some(_)) => {
                        assert_eq!(got.reason, "auto: the probe said so", "{case}");
                    }
                    (None, MigCreate::Ahead, _) => {
                        assert!(got.reason.contains("\"ahead\""), "{case}");
                    }
                    (None, _, None) => {
                        assert!(got.reason.contains("no DRA plugin has asked"), "{case}");
                    }
                    _ => assert_eq!(got.reason, "set in the config", "{case}"),
                }
            }
        }
    }
}

/// Two simulated H100s, gpu-0 selected by `config`, started as gpusliced
/// starts (`Engine::start_up`) with its MIG applied through an offerings.
fn start(config: MigConfig) -> (SimNode, OfferingSwitch) {
    let node = SimNodeBuilder::h100s(2)
        .seed("advertise")
        .mig(config.clone())
        .engine_only()
        .start();
    let offerings = OfferingSwitch::new(config.clone());
    node.engine()
        .start_up(|engine| offerings.apply_config(engine, config))
        .unwrap();
    (node, offerings)
}

fn request(uid: &str, device: &str) -> PrepareRequest {
    PrepareRequest {
        uid: uid.to_owned(),
        namespace: "ns".to_owned(),
        name: "claim".to_owned(),
        devices: vec![DeviceRequest {
            device: device.to_owned(),
            request_names: vec!["gpu".to_owned()],
            pool: "node".to_owned(),
            consumed_memory: None,
            share_id: String::new(),
        }],
        configs: Vec::new(),
    }
}

fn slice_names(engine: &Engine) -> Vec<String> {
    engine
        .inventory()
        .mig
        .iter()
        .map(|m| m.name.clone())
        .collect()
}

#[test]
fn auto_serves_the_layout_until_asked_then_either_form() {
    let (node, offerings) = start(mig(None, MigCreate::OnPrepare));
    let engine = node.engine();
    let layout = slice_names(engine);
    assert_eq!(layout.len(), 2, "{layout:?}");
    assert_eq!(engine.inventory().mig_offering, MigOffering::Layout);
    assert_eq!(offerings.in_force().offering, MigOffering::Layout);

    let before = engine.generation();
    let now = offerings
        .ask(engine, asked(MigOffering::Partitionable))
        .unwrap();
    assert_eq!(now.offering, MigOffering::Partitionable);
    assert_eq!(now.reason, "auto: the probe said so");
    assert_eq!(engine.inventory().mig_offering, MigOffering::Partitionable);
    assert!(engine.generation() > before, "a new generation");
    let every = slice_names(engine);
    assert!(every.len() > layout.len(), "{every:?}");
    for name in &layout {
        assert!(every.contains(name), "{name} keeps its name: {every:?}");
    }

    // The same request again changes nothing.
    let generation = engine.generation();
    offerings
        .ask(engine, asked(MigOffering::Partitionable))
        .unwrap();
    assert_eq!(engine.generation(), generation);

    offerings.ask(engine, asked(MigOffering::Layout)).unwrap();
    assert_eq!(engine.inventory().mig_offering, MigOffering::Layout);
    assert_eq!(slice_names(engine), layout);
}

#[test]
fn claims_outlive_a_switch_by_name() {
    let (node, offerings) = start(mig(None, MigCreate::OnPrepare));
    let engine = node.engine();
    // A layout slice, prepared in layout form.
    let in_layout = slice_names(engine)
        .into_iter()
        .find(|n| n.contains("3g40gb"))
        .unwrap();
    let first = engine.prepare(&request(A, &in_layout)).unwrap();
    offerings
        .ask(engine, asked(MigOffering::Partitionable))
        .unwrap();
    // Prepared again by the kubelet after the switch: the same claim.
    let again = engine.prepare(&request(A, &in_layout)).unwrap();
    assert!(matches!(again, Prepared::AlreadyPrepared(_)), "{again:?}");
    assert_eq!(again.record().devices, first.record().devices);
    // A slice only the partitionable form offers, then back to the layout.
    let only_partitionable = "gpu-0-mig-1g10gb-0";
    assert!(slice_names(engine).iter().any(|n| n == only_partitionable));
    engine.prepare(&request(B, only_partitionable)).unwrap();
    offerings.ask(engine, asked(MigOffering::Layout)).unwrap();
    assert_eq!(engine.unprepare(B).unwrap(), Unprepared::Removed);
    assert_eq!(engine.unprepare(A).unwrap(), Unprepared::Removed);
    assert!(engine.claims().is_empty());
    let left = engine.backend().gpu_instances(0).unwrap();
    assert!(left.is_empty(), "every slice destroyed: {left:?}");
}

#[test]
fn an_explicit_form_ignores_the_plugin() {
    let (node, offerings) = start(mig(Some(MigOffering::Layout), MigCreate::OnPrepare));
    let engine = node.engine();
    let now = offerings
        .ask(engine, asked(MigOffering::Partitionable))
        .unwrap();
    assert_eq!(now.offering, MigOffering::Layout);
    assert_eq!(now.reason, "set in the config");
    assert_eq!(engine.inventory().mig_offering, MigOffering::Layout);
}
