//! The right-sizing families from hand-made advice: values, labels, the
//! series cap, nothing without a history, and the text format's rules.

use super::format_rules::{Sample, check_prometheus, samples};
use super::value;
use crate::activity::ActivityHandle;
use crate::advice::history::{History, HistorySettings};
use crate::advice::keeper::SharedHistory;
use crate::advice::node::{ClaimAdvice, DeviceAdvice};
use crate::advice::view::{AdviceSettings, NodeAdvice};
use crate::advice::whatif::WhatIf;
use crate::advice::{Advice, CurrentForm, Form};
use crate::claims::NodeUsage;
use crate::metrics::{Format, Metrics, UsageSource};

const GIB: u64 = 1 << 30;

#[derive(Debug)]
struct Advised(NodeAdvice);

impl UsageSource for Advised {
    fn usage(&self) -> NodeUsage {
        NodeUsage::default()
    }

    fn advice_now(&self, _: &SharedHistory, _: AdviceSettings) -> Option<NodeAdvice> {
        Some(self.0.clone())
    }
}

fn device(name: &str, form: Form) -> DeviceAdvice {
    DeviceAdvice {
        device: name.into(),
        gpu: name.into(),
        current: CurrentForm::Whole,
        advice: Advice {
            form,
            observed_s: 600,
            memory_peak: Some(4 * GIB),
            sm_p95: Some(5),
            smallest_mig_fit: None,
            reason: String::new(),
        },
    }
}

fn node() -> NodeAdvice {
    NodeAdvice {
        claims: vec![ClaimAdvice {
            uid: "u1".into(),
            namespace: "ml".into(),
            name: "notebook".into(),
            devices: vec![
                device(
                    "gpu-3",
                    Form::Mig {
                        profile: "1g.10gb".into(),
                        memory_bytes: 10 * GIB,
                    },
                ),
                device("gpu-4", Form::Abstain),
            ],
        }],
        what_if: WhatIf {
            gpus_freed: vec!["gpu-3".into()],
            ..WhatIf::default()
        },
    }
}

fn metrics(max: usize, history: bool) -> Metrics {
    let mut handle = ActivityHandle::default();
    if history {
        handle = handle.with_history(SharedHistory::new(History::new(HistorySettings {
            interval_s: 5,
            half_life_s: 86_400,
            max_claims: 4,
        })));
    }
    Metrics::new("sim")
        .with_activity(handle, max)
        .with_advice(AdviceSettings::default())
        .with_dra(super::dra())
}

/// The Prometheus text of `metrics(max, history)` over the advised node,
/// and its samples.
fn render(max: usize, history: bool) -> (String, Vec<Sample>) {
    let text = metrics(max, history)
        .render(&Advised(node()), Format::Prometheus)
        .unwrap();
    let all = samples(&text);
    (text, all)
}

#[test]
fn each_device_has_its_advice_observed_time_and_peak() {
    let (text, all) = render(16, true);
    check_prometheus(&text);
    let claim = [
        ("namespace", "ml"),
        ("name", "notebook"),
        ("uid", "u1"),
        ("dra_claim_namespace", "ml"),
        ("dra_claim_name", "notebook"),
        ("dra_pool_name", "node-1"),
        ("dra_driver_name", "gpu.nvidia.com"),
    ];
    let mig = [
        claim.as_slice(),
        &[("device", "gpu-3"), ("form", "mig"), ("profile", "1g.10gb")],
        &[("dra_device_name", "gpu-3")],
    ]
    .concat();
    assert_eq!(
        value(&all, "gpuslice_claim_advice", &mig),
        Some(1.0),
        "{text}"
    );
    let abstain = [
        claim.as_slice(),
        &[("device", "gpu-4"), ("form", "abstain"), ("profile", "")],
        &[("dra_device_name", "gpu-4")],
    ]
    .concat();
    assert_eq!(value(&all, "gpuslice_claim_advice", &abstain), Some(1.0));
    let gpu3 = [
        claim.as_slice(),
        &[("device", "gpu-3"), ("dra_device_name", "gpu-3")],
    ]
    .concat();
    assert_eq!(
        value(&all, "gpuslice_claim_observed_seconds", &gpu3),
        Some(600.0)
    );
    let peak = value(&all, "gpuslice_claim_memory_peak_bytes", &gpu3);
    assert_eq!(peak, Some((4 * GIB) as f64));
    assert_eq!(
        value(&all, "gpuslice_node_advice_gpus_freed", &[]),
        Some(1.0)
    );
    assert_eq!(
        value(&all, "gpuslice_activity_history_bytes", &[]),
        Some(0.0)
    );
}

#[test]
fn the_series_are_capped_like_the_activity_ones() {
    let (text, all) = render(1, true);
    let advice: Vec<_> = all
        .iter()
        .filter(|s| s.name == "gpuslice_claim_advice")
        .collect();
    assert_eq!(advice.len(), 1, "{text}");
}

#[test]
fn without_a_history_there_is_no_advice() {
    let (text, all) = render(16, false);
    assert!(
        all.iter().all(|s| s.name != "gpuslice_claim_advice"),
        "{text}"
    );
    assert_eq!(
        value(&all, "gpuslice_node_advice_gpus_freed", &[]),
        Some(0.0)
    );
}
