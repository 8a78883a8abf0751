//! A reload (SIGHUP) among claims in flight, found by the load test: its MIG
//! set-up and spec repair read the claim table, the hardware and the CDI dir
//! together, so they must never see a claim half-way. Before, a reload
//! during the load removed the specs of claims being prepared as strays,
//! wrote back the specs of claims being unprepared, and dropped a MIG GPU's
//! offer when a slice was made between reading the held slices and the
//! hardware; and, quiet or not, reported every held slice of an on-prepare
//! layout as one the layout "removes", and dropped the slices of a MIG GPU
//! that a whole-GPU claim held (MIG switched off) for good.

use super::requests::{request, request_with as req};
use crate::claims::ClaimError;
use crate::claims::access::shared_gpu::node::Node;
use crate::config::{MigConfig, MigGpuConfig, MigOffering};
use crate::gpu::{GpuBackend, MigMode, MigSupport};

const A: &str = "aaaaaaaa-0000-4000-8000-0000000000a1";
const B: &str = "bbbbbbbb-0000-4000-8000-0000000000b2";

const MPS: &str = r#"{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"MPS"}}"#;

#[test]
fn sim_a_reload_waits_for_a_prepare_in_flight() {
    let node = Node::gated(1);
    let engine = node.engine();
    let gate = node.gate.as_ref().unwrap();
    std::thread::scope(|s| {
        let preparing = s.spawn(|| engine.prepare(&req(A, &["gpu-0"], &[MPS])));
        // The prepare is under way once its daemon's start is held.
        gate.wait_started();
        assert!(
            engine.quiet.try_write().is_err(),
            "a reload step cannot start while a prepare runs"
        );
        gate.open();
        preparing.join().unwrap().unwrap();
    });
    let report = engine.refresh().unwrap();
    assert_eq!((report.specs_written, report.specs_removed), (0, 0));
    assert!(node.spec(A).is_some());
}

fn layout_node() -> (Node, MigConfig) {
    node_advertising(Some(MigOffering::Layout))
}

fn node_advertising(advertise: Option<MigOffering>) -> (Node, MigConfig) {
    let mig = MigConfig {
        advertise,
        gpu: vec![MigGpuConfig {
            layout: ["4g.40gb", "1g.20gb", "1g.10gb", "1g.10gb"]
                .map(str::to_owned)
                .to_vec(),
            ..MigGpuConfig::default()
        }],
        ..MigConfig::default()
    };
    (Node::new(1, &mig, false), mig)
}

fn offered(engine: &crate::claims::Engine) -> Vec<String> {
    let mut names: Vec<String> = engine
        .inventory()
        .mig
        .iter()
        .map(|m| m.name.clone())
        .collect();
    names.sort();
    names
}

#[test]
fn sim_a_reload_in_on_prepare_mode_keeps_held_slices_without_a_problem() {
    let (node, mig) = layout_node();
    let engine = node.engine();
    let offered = || offered(engine);
    let before = offered();
    engine
        .prepare(&request(A, &["gpu-0-mig-4g40gb-0"]))
        .unwrap();
    engine
        .prepare(&request(B, &["gpu-0-mig-1g10gb-5"]))
        .unwrap();
    assert_eq!(engine.setup_mig(&mig).unwrap(), Vec::<String>::new());
    assert_eq!(offered(), before);
    assert_eq!(
        node.backend.gpu_instances(0).unwrap().len(),
        2,
        "held slices stay"
    );
}

#[test]
fn sim_a_reload_while_a_mig_gpu_is_held_whole_keeps_its_slices_offered() {
    // Offered whole only with shared counters (partitionable mode).
    let (node, mig) = node_advertising(Some(MigOffering::Partitionable));
    let engine = node.engine();
    let before = offered(engine);
    engine.prepare(&request(A, &["gpu-0"])).unwrap();
    assert!(matches!(
        node.backend.device_info(0).unwrap().mig,
        MigSupport::Supported {
            current: MigMode::Disabled,
            ..
        }
    ));
    assert_eq!(engine.setup_mig(&mig).unwrap(), Vec::<String>::new());
    assert_eq!(offered(engine), before, "the slices keep their names");
    let slice = engine
        .view()
        .devices
        .into_iter()
        .find(|d| d.name == "gpu-0-mig-1g10gb-4")
        .unwrap();
    assert_eq!((slice.available, slice.holders), (false, vec![]));
    engine.unprepare(A).unwrap();
    engine
        .prepare(&request(B, &["gpu-0-mig-1g10gb-4"]))
        .unwrap();
}

#[test]
fn sim_layout_mode_refuses_a_mig_gpu_whole_and_touches_nothing() {
    let (node, _) = layout_node();
    let engine = node.engine();
    let err = engine.prepare(&request(A, &["gpu-0"])).unwrap_err();
    assert!(matches!(err, ClaimError::NotOfferedWhole { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("gpu-0 is not offered whole") && text.contains("gpu-0-mig-4g40gb-0"),
        "{text}"
    );
    assert!(engine.claims().is_empty());
    assert!(matches!(
        node.backend.device_info(0).unwrap().mig,
        MigSupport::Supported {
            current: MigMode::Enabled,
            ..
        }
    ));
    engine
        .prepare(&request(B, &["gpu-0-mig-4g40gb-0"]))
        .unwrap();
}
