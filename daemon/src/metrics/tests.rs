//! The families, the snapshot mapping, both text formats checked against the
//! rules their parsers enforce, and the event metrics.

mod activity;
mod advice;
mod exporters;
mod format_rules;

use std::collections::BTreeMap;
use std::time::Duration;

use super::{Format, Metrics, Outcome, UsageSource};
use crate::claims::mps_daemon::DaemonState;
use crate::claims::{NodeUsage, SliceState, SliceUse};
use crate::state::AccessKind;
use format_rules::{Sample, check_openmetrics, check_prometheus, samples};

/// A source that always answers the same snapshot.
#[derive(Debug)]
pub(super) struct Fixed(pub(super) NodeUsage);

impl UsageSource for Fixed {
    fn usage(&self) -> NodeUsage {
        self.0.clone()
    }
}

/// A snapshot is its own source, for the tests that render one.
impl UsageSource for NodeUsage {
    fn usage(&self) -> NodeUsage {
        self.clone()
    }
}

fn slice(gpu: &str, profile: &str, state: SliceState) -> SliceUse {
    SliceUse {
        gpu: gpu.into(),
        profile: profile.into(),
        state,
    }
}

pub(super) fn busy_node() -> NodeUsage {
    NodeUsage {
        claims: vec![AccessKind::Exclusive, AccessKind::Mig, AccessKind::Mig],
        mig_slices: vec![
            slice("gpu-0", "1g.10gb", SliceState::Held),
            slice("gpu-0", "1g.10gb", SliceState::Free),
            slice("gpu-0", "1g.10gb", SliceState::Free),
            slice("gpu-0", "3g.40gb", SliceState::Held),
            slice("gpu-1", "7g.80gb", SliceState::Foreign),
        ],
        mps_daemons: vec![DaemonState::Running, DaemonState::Failed],
        gpus: 2,
        problems: 1,
        unhealthy: vec![("gpu-1".to_owned(), "xid")],
    }
}

/// The pool and driver the tests label devices with.
pub(super) fn dra() -> super::DraNames {
    super::DraNames {
        pool: "node-1".to_owned(),
        driver: "gpu.nvidia.com".to_owned(),
    }
}

/// The labels of a per-GPU series of `gpu` in [`dra`]'s pool.
pub(super) fn gpu_labels(gpu: &str) -> [(&str, &str); 4] {
    [
        ("gpu", gpu),
        ("dra_device_name", gpu),
        ("dra_pool_name", "node-1"),
        ("dra_driver_name", "gpu.nvidia.com"),
    ]
}

pub(super) fn value(all: &[Sample], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    all.iter()
        .find(|s| {
            s.name == name
                && s.labels.len() == labels.len()
                && labels
                    .iter()
                    .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
        })
        .map(|s| s.value)
}

#[test]
fn the_snapshot_sets_every_gauge_with_zeros_for_absent_values() {
    let metrics = Metrics::new("sim");
    let text = metrics.render(&busy_node(), Format::Prometheus).unwrap();
    check_prometheus(&text);
    let all = samples(&text);
    let claims = |kind| value(&all, "gpuslice_claims", &[("kind", kind)]);
    assert_eq!(claims("exclusive"), Some(1.0));
    assert_eq!(claims("mig"), Some(2.0));
    assert_eq!(claims("mps"), Some(0.0));
    assert_eq!(claims("timeslicing"), Some(0.0));
    let mig = |gpu, profile, state| {
        value(
            &all,
            "gpuslice_mig_slices",
            &[("gpu", gpu), ("profile", profile), ("state", state)],
        )
    };
    assert_eq!(mig("gpu-0", "1g.10gb", "held"), Some(1.0));
    assert_eq!(mig("gpu-0", "1g.10gb", "free"), Some(2.0));
    assert_eq!(mig("gpu-0", "1g.10gb", "made_ahead"), Some(0.0));
    assert_eq!(mig("gpu-0", "3g.40gb", "foreign"), Some(0.0));
    assert_eq!(mig("gpu-1", "7g.80gb", "foreign"), Some(1.0));
    assert_eq!(
        mig("gpu-1", "1g.10gb", "free"),
        None,
        "no such slice on gpu-1"
    );
    let mps = |state| value(&all, "gpuslice_mps_daemons", &[("state", state)]);
    assert_eq!(mps("running"), Some(1.0));
    assert_eq!(mps("failed"), Some(1.0));
    assert_eq!(mps("restarting"), Some(0.0));
    assert_eq!(value(&all, "gpuslice_gpus", &[]), Some(2.0));
    assert_eq!(value(&all, "gpuslice_problems", &[]), Some(1.0));
    let unhealthy = [
        ("device", "gpu-1"),
        ("cause", "xid"),
        ("dra_device_name", "gpu-1"),
        ("dra_pool_name", ""),
        ("dra_driver_name", "gpu.nvidia.com"),
    ];
    assert_eq!(
        value(&all, "gpuslice_device_unhealthy", &unhealthy),
        Some(1.0),
        "{text}"
    );
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(
        value(
            &all,
            "gpuslice_build_info",
            &[("version", version), ("backend", "sim")]
        ),
        Some(1.0)
    );
}

#[test]
fn slices_that_are_gone_leave_no_series_behind() {
    let metrics = Metrics::new("sim");
    metrics.render(&busy_node(), Format::Prometheus).unwrap();
    let idle = NodeUsage {
        gpus: 2,
        ..NodeUsage::default()
    };
    let text = metrics.render(&idle, Format::Prometheus).unwrap();
    check_prometheus(&text);
    let all = samples(&text);
    for gone in ["gpuslice_mig_slices", "gpuslice_device_unhealthy"] {
        assert!(all.iter().all(|s| s.name != gone), "{gone}: {text}");
    }
    assert_eq!(
        value(&all, "gpuslice_claims", &[("kind", "mig")]),
        Some(0.0)
    );
}

#[test]
fn calls_feed_the_histograms_and_errors_by_code() {
    let metrics = Metrics::new("sim");
    let ms = Duration::from_millis;
    metrics.observe("Prepare", Some(Outcome::Prepared), ms(2));
    metrics.observe("Prepare", Some(Outcome::Prepared), ms(3_000));
    metrics.observe("Prepare", Some(Outcome::AlreadyPrepared), ms(0));
    metrics.observe("Prepare", None, ms(1));
    metrics.observe("Unprepare", Some(Outcome::Unprepared), ms(4));
    metrics.observe("GetStatus", Some(Outcome::Prepared), ms(1));
    metrics.count_error("Prepare", tonic::Code::FailedPrecondition);
    metrics.count_error("Prepare", tonic::Code::FailedPrecondition);
    metrics.count_error("Unprepare", tonic::Code::InvalidArgument);
    let text = metrics
        .render(&NodeUsage::default(), Format::Prometheus)
        .unwrap();
    check_prometheus(&text);
    let all = samples(&text);
    let count = |name, outcome| value(&all, name, &[("outcome", outcome)]);
    let prepare = "gpuslice_prepare_duration_seconds_count";
    assert_eq!(count(prepare, "prepared"), Some(2.0));
    assert_eq!(count(prepare, "already_prepared"), Some(1.0));
    assert_eq!(count(prepare, "error"), Some(1.0));
    let unprepare = "gpuslice_unprepare_duration_seconds_count";
    assert_eq!(count(unprepare, "unprepared"), Some(1.0));
    assert_eq!(
        count(unprepare, "not_prepared"),
        Some(0.0),
        "present from the start"
    );
    let le = |bound| {
        value(
            &all,
            "gpuslice_prepare_duration_seconds_bucket",
            &[("outcome", "prepared"), ("le", bound)],
        )
    };
    assert_eq!(le("0.002"), Some(1.0), "2 ms lands in the 2 ms bucket");
    assert_eq!(le("2.5"), Some(1.0));
    assert_eq!(le("5.0"), Some(2.0), "3 s lands in the 5 s bucket");
    assert_eq!(le("+Inf"), Some(2.0));
    let errors = |rpc, code| {
        value(
            &all,
            "gpuslice_errors_total",
            &[("rpc", rpc), ("code", code)],
        )
    };
    assert_eq!(errors("Prepare", "FAILED_PRECONDITION"), Some(2.0));
    assert_eq!(errors("Unprepare", "INVALID_ARGUMENT"), Some(1.0));
}

#[test]
fn openmetrics_keeps_its_own_counter_naming_and_ends_with_eof() {
    let metrics = Metrics::new("nvml");
    metrics.count_error("Prepare", tonic::Code::Unavailable);
    let text = metrics.render(&busy_node(), Format::OpenMetrics).unwrap();
    check_openmetrics(&text);
    assert!(text.contains("# TYPE gpuslice_errors counter\n"), "{text}");
    assert!(text.contains("gpuslice_errors_total{"), "{text}");
    let plain = metrics.render(&busy_node(), Format::Prometheus).unwrap();
    assert!(
        plain.contains("# TYPE gpuslice_errors_total counter\n"),
        "{plain}"
    );
    assert!(!plain.contains("# EOF"), "{plain}");
}

#[test]
fn every_family_has_help_and_follows_the_naming_rules() {
    let handle = crate::activity::ActivityHandle::default();
    handle.publish(activity::node());
    let board = crate::limits::LimitsBoard::default();
    board.ledger().note(activity::ended_overshare());
    let metrics = Metrics::new("sim")
        .with_activity(handle, 1024)
        .with_limits(board);
    metrics.observe("Prepare", Some(Outcome::Prepared), Duration::from_millis(1));
    metrics.count_error("Prepare", tonic::Code::Internal);
    let text = metrics.render(&busy_node(), Format::Prometheus).unwrap();
    let families = check_prometheus(&text);
    let names: BTreeMap<&str, &str> = families
        .iter()
        .map(|f| (f.name.as_str(), f.kind.as_str()))
        .collect();
    let expected = [
        ("gpuslice_activity_episodes_total", "counter"),
        ("gpuslice_activity_history_bytes", "gauge"),
        ("gpuslice_activity_sample_cpu_seconds", "gauge"),
        ("gpuslice_activity_series_dropped", "gauge"),
        ("gpuslice_build_info", "gauge"),
        ("gpuslice_claim_last_active_timestamp_seconds", "gauge"),
        ("gpuslice_claim_memory_share_bytes", "gauge"),
        ("gpuslice_claim_memory_used_bytes", "gauge"),
        ("gpuslice_claim_processes", "gauge"),
        ("gpuslice_claim_sm_utilization_ratio", "gauge"),
        ("gpuslice_claims", "gauge"),
        ("gpuslice_device_unhealthy", "gauge"),
        ("gpuslice_errors_total", "counter"),
        ("gpuslice_gpus", "gauge"),
        ("gpuslice_limit_actions_total", "counter"),
        ("gpuslice_mig_slices", "gauge"),
        ("gpuslice_mps_daemons", "gauge"),
        ("gpuslice_node_advice_gpus_freed", "gauge"),
        ("gpuslice_prepare_duration_seconds", "histogram"),
        ("gpuslice_problems", "gauge"),
        ("gpuslice_unclaimed_memory_used_bytes", "gauge"),
        ("gpuslice_unclaimed_processes", "gauge"),
        ("gpuslice_unprepare_duration_seconds", "histogram"),
    ];
    assert_eq!(names, expected.into_iter().collect::<BTreeMap<_, _>>());
    for family in &families {
        assert!(family.name.starts_with("gpuslice_"), "{}", family.name);
        assert!(
            family.help.len() > 10 && family.help.ends_with('.'),
            "{}: {:?}",
            family.name,
            family.help
        );
        assert!(
            !family.help.contains('\\'),
            "HELP escapes differ between the formats: {:?}",
            family.help
        );
    }
}
