//! The per-claim GPU use families from hand-made activity snapshots: values,
//! series that go with their claim, the cardinality cap, the episode
//! counters, and both text formats' rules with activity series present.

use std::collections::BTreeMap;

use super::format_rules::{Sample, check_openmetrics, check_prometheus, samples};
use super::{busy_node, value};
use crate::activity::fixtures::device_activity;
use crate::activity::{
    ActivityHandle, ActivitySnapshot, ClaimActivity, DeviceActivity, EpisodeCounts,
    ProcessActivity, UnclaimedProcess,
};
use crate::claims::NodeUsage;
use crate::metrics::{Format, Metrics, UsageSource};
use crate::state::AccessKind;

const GIB: u64 = 1 << 30;

fn process(pid: u32, memory: u64) -> ProcessActivity {
    ProcessActivity {
        pid,
        name: "python".into(),
        memory_used: Some(memory),
        sm_percent: Some(20),
        mps_client: false,
    }
}

fn device(name: &str, sharing: AccessKind, used: u64, share: Option<u64>) -> DeviceActivity {
    DeviceActivity {
        sm_percent: Some(45),
        processes: vec![process(100, used)],
        ..device_activity(name, sharing, used, share)
    }
}

/// Process 7 ("python", 1 GiB) of claim "a" on gpu-0, ended after 61 s
/// over its share.
pub(super) fn ended_overshare() -> crate::limits::LimitAction {
    crate::limits::LimitAction {
        kind: crate::activity::WarningKind::OverShare,
        mode: "end",
        outcome: "terminated",
        claim_uid: "a".into(),
        device: "gpu-0".into(),
        pid: 7,
        comm: "python".into(),
        memory_used: GIB,
        over_for_s: 61,
        at_ms: 1,
    }
}

fn claim(n: u8, kind: AccessKind, devices: Vec<DeviceActivity>) -> ClaimActivity {
    ClaimActivity {
        uid: format!("00000000-0000-4000-8000-00000000000{n}"),
        namespace: "team".into(),
        name: format!("claim-{n}"),
        kind,
        prepared_at: 1_000,
        last_active: Some(1_700_000_000),
        sampled: true,
        devices,
    }
}

pub(super) fn node() -> ActivitySnapshot {
    let mps = claim(
        1,
        AccessKind::Mps,
        vec![device("gpu-1", AccessKind::Mps, 6 * GIB, Some(4 * GIB))],
    );
    let mut idle = claim(
        2,
        AccessKind::Exclusive,
        vec![device("gpu-2", AccessKind::Exclusive, 0, None)],
    );
    idle.last_active = None;
    idle.devices[0].processes.clear();
    idle.devices[0].sm_percent = None;
    ActivitySnapshot {
        enabled: true,
        interval_ms: 5_000,
        sampled_at_ms: 1_700_000_000_000,
        sample_cpu_us: 1_500,
        claims: vec![mps, idle],
        unclaimed: vec![
            unclaimed_on("gpu-0", 77, GIB),
            unclaimed_on("gpu-0", 78, 2 * GIB),
        ],
        warnings: Vec::new(),
        episodes: EpisodeCounts {
            overshare: BTreeMap::from([(AccessKind::Mps, 2), (AccessKind::TimeSlicing, 0)]),
            unclaimed: 1,
        },
        series_dropped: 0,
        conditions_generation: 0,
    }
}

fn unclaimed_on(gpu: &str, pid: u32, memory: u64) -> UnclaimedProcess {
    UnclaimedProcess {
        gpu: gpu.into(),
        device: gpu.into(),
        process: process(pid, memory),
        reason: "no gpuslice claim in its environment".into(),
    }
}

fn metrics(max: usize) -> (Metrics, ActivityHandle) {
    let handle = ActivityHandle::default();
    (
        Metrics::new("sim")
            .with_activity(handle.clone(), max)
            .with_dra(super::dra()),
        handle,
    )
}

/// An empty node whose claim table holds exactly the claims `held` names
/// (by uid), as the engine's `activity_now` brings a sample up to it.
#[derive(Debug)]
struct Holding(Option<Vec<String>>);

impl UsageSource for Holding {
    fn usage(&self) -> NodeUsage {
        NodeUsage::default()
    }

    fn activity_now(&self, latest: &ActivitySnapshot) -> ActivitySnapshot {
        let mut now = latest.clone();
        if let Some(held) = &self.0 {
            now.claims.retain(|c| held.contains(&c.uid));
        }
        now
    }
}

fn render(metrics: &Metrics) -> (String, Vec<Sample>) {
    render_holding(metrics, Holding(None))
}

fn render_holding(metrics: &Metrics, source: Holding) -> (String, Vec<Sample>) {
    let text = metrics.render(&source, Format::Prometheus).unwrap();
    check_prometheus(&text);
    let all = samples(&text);
    (text, all)
}

fn series<'a>(all: &'a [Sample], name: &str) -> Vec<&'a Sample> {
    all.iter().filter(|s| s.name == name).collect()
}

fn of_claim(n: u8, device: &str, sharing: &str) -> Vec<(&'static str, String)> {
    vec![
        ("namespace", "team".into()),
        ("name", format!("claim-{n}")),
        ("uid", format!("00000000-0000-4000-8000-00000000000{n}")),
        ("device", device.into()),
        ("sharing", sharing.into()),
        ("dra_claim_namespace", "team".into()),
        ("dra_claim_name", format!("claim-{n}")),
        ("dra_device_name", device.into()),
        ("dra_pool_name", "node-1".into()),
        ("dra_driver_name", "gpu.nvidia.com".into()),
    ]
}

fn claim_value(all: &[Sample], name: &str, labels: &[(&'static str, String)]) -> Option<f64> {
    let labels: Vec<(&str, &str)> = labels.iter().map(|(k, v)| (*k, v.as_str())).collect();
    value(all, name, &labels)
}

#[test]
fn each_claim_device_gets_its_use_share_utilization_processes_and_last_activity() {
    let (metrics, handle) = metrics(1024);
    handle.publish(node());
    let (_, all) = render(&metrics);
    let mps = of_claim(1, "gpu-1", "mps");
    let gib = |n: u64| Some((n * GIB) as f64);
    let idle = of_claim(2, "gpu-2", "exclusive");
    for (labels, name, want) in [
        (&mps, "gpuslice_claim_memory_used_bytes", gib(6)),
        (&mps, "gpuslice_claim_memory_share_bytes", gib(4)),
        (&mps, "gpuslice_claim_sm_utilization_ratio", Some(0.45)),
        (&mps, "gpuslice_claim_processes", Some(1.0)),
        (
            &mps,
            "gpuslice_claim_last_active_timestamp_seconds",
            Some(1_700_000_000.0),
        ),
        (&idle, "gpuslice_claim_memory_used_bytes", Some(0.0)),
        (&idle, "gpuslice_claim_processes", Some(0.0)),
    ] {
        assert_eq!(claim_value(&all, name, labels), want, "{name}");
    }
    for absent in [
        "gpuslice_claim_memory_share_bytes",
        "gpuslice_claim_sm_utilization_ratio",
        "gpuslice_claim_last_active_timestamp_seconds",
    ] {
        assert_eq!(claim_value(&all, absent, &idle), None, "{absent}");
    }
    let gpu_0 = super::gpu_labels("gpu-0");
    for (labels, name, want) in [
        (&gpu_0[..], "gpuslice_unclaimed_processes", Some(2.0)),
        (&gpu_0[..], "gpuslice_unclaimed_memory_used_bytes", gib(3)),
        (&[], "gpuslice_activity_sample_cpu_seconds", Some(0.0015)),
        (&[], "gpuslice_activity_series_dropped", Some(0.0)),
    ] {
        assert_eq!(value(&all, name, labels), want, "{name}");
    }
}

#[test]
fn an_unprepared_claim_and_a_gone_unclaimed_process_leave_no_series() {
    let (metrics, handle) = metrics(1024);
    handle.publish(node());
    render(&metrics);
    let mut later = node();
    later.claims.remove(0);
    later.unclaimed.clear();
    handle.publish(later);
    let (text, all) = render(&metrics);
    assert!(!text.contains("claim-1"), "{text}");
    assert!(series(&all, "gpuslice_unclaimed_processes").is_empty());
    assert!(series(&all, "gpuslice_unclaimed_memory_used_bytes").is_empty());
    assert_eq!(series(&all, "gpuslice_claim_memory_used_bytes").len(), 1);
}

#[test]
fn a_claim_unprepared_since_the_sample_has_no_series_at_the_next_scrape() {
    let (metrics, handle) = metrics(1024);
    handle.publish(node());
    let still_held = vec![claim(2, AccessKind::Exclusive, Vec::new()).uid];
    let (text, all) = render_holding(&metrics, Holding(Some(still_held)));
    assert!(!text.contains("claim-1"), "{text}");
    assert_eq!(series(&all, "gpuslice_claim_memory_used_bytes").len(), 1);
    assert_eq!(series(&all, "gpuslice_activity_series_dropped").len(), 1);
}

#[test]
fn a_claim_no_sample_has_read_yet_has_no_series() {
    let (metrics, handle) = metrics(1024);
    let mut snapshot = node();
    snapshot.claims[0].sampled = false;
    handle.publish(snapshot);
    let (text, all) = render(&metrics);
    assert!(!text.contains("claim-1"), "{text}");
    assert_eq!(series(&all, "gpuslice_claim_processes").len(), 1);
    assert_eq!(
        value(&all, "gpuslice_activity_series_dropped", &[]),
        Some(0.0)
    );
}

#[test]
fn claim_series_stop_at_the_cap_and_the_rest_are_counted_as_dropped() {
    let (metrics, handle) = metrics(2);
    let mut snapshot = node();
    snapshot.claims[1]
        .devices
        .push(device("gpu-3", AccessKind::Exclusive, GIB, None));
    snapshot.claims.push(claim(
        3,
        AccessKind::TimeSlicing,
        vec![device(
            "gpu-4",
            AccessKind::TimeSlicing,
            GIB,
            Some(40 * GIB),
        )],
    ));
    handle.publish(snapshot);
    let (text, all) = render(&metrics);
    let mut kept: Vec<&str> = series(&all, "gpuslice_claim_memory_used_bytes")
        .iter()
        .map(|s| s.labels["device"].as_str())
        .collect();
    kept.sort_unstable();
    assert_eq!(kept, ["gpu-1", "gpu-2"], "claims by uid, devices in order");
    assert_eq!(series(&all, "gpuslice_claim_processes").len(), 2);
    assert_eq!(
        value(&all, "gpuslice_activity_series_dropped", &[]),
        Some(2.0)
    );
    assert!(!text.contains("claim-3"), "{text}");
    for s in &all {
        assert!(!s.labels.contains_key("pid"), "a pid label: {s:?}");
    }
}

#[test]
fn the_samplers_own_count_of_dropped_series_is_kept() {
    let (metrics, handle) = metrics(1024);
    let mut snapshot = node();
    snapshot.series_dropped = 1;
    handle.publish(snapshot);
    let (_, all) = render(&metrics);
    let kept = series(&all, "gpuslice_claim_memory_used_bytes");
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].labels["device"], "gpu-1", "the last pairs go");
    assert_eq!(
        value(&all, "gpuslice_activity_series_dropped", &[]),
        Some(1.0)
    );
}

#[test]
fn episodes_are_counters_that_follow_the_snapshot_and_never_fall() {
    let (metrics, handle) = metrics(1024);
    let episodes = |all: &[Sample], kind, sharing| {
        value(
            all,
            "gpuslice_activity_episodes_total",
            &[("kind", kind), ("sharing", sharing)],
        )
    };
    let (text, all) = render(&metrics);
    assert!(
        text.contains("# TYPE gpuslice_activity_episodes_total counter\n"),
        "{text}"
    );
    assert_eq!(
        episodes(&all, "overshare", "mps"),
        Some(0.0),
        "from the start"
    );
    handle.publish(node());
    let (_, all) = render(&metrics);
    assert_eq!(episodes(&all, "overshare", "mps"), Some(2.0));
    assert_eq!(episodes(&all, "overshare", "timeslicing"), Some(0.0));
    assert_eq!(episodes(&all, "unclaimed", "none"), Some(1.0));
    let mut more = node();
    more.episodes.overshare.insert(AccessKind::TimeSlicing, 5);
    handle.publish(more);
    let (_, all) = render(&metrics);
    assert_eq!(episodes(&all, "overshare", "timeslicing"), Some(5.0));
    assert_eq!(episodes(&all, "overshare", "mps"), Some(2.0), "unchanged");
    handle.publish(ActivitySnapshot::default());
    let (_, all) = render(&metrics);
    assert_eq!(episodes(&all, "overshare", "mps"), Some(2.0), "never falls");
}

#[test]
fn both_formats_keep_their_rules_with_activity_series() {
    let (metrics, handle) = metrics(1024);
    let mut snapshot = node();
    // Label values a namespace or name cannot hold, but a test can.
    snapshot.claims[0].name = "a \"quoted\" \\ name".into();
    handle.publish(snapshot);
    let om = metrics.render(&busy_node(), Format::OpenMetrics).unwrap();
    check_openmetrics(&om);
    assert!(
        om.contains("# TYPE gpuslice_activity_episodes counter\n"),
        "{om}"
    );
    let text = metrics.render(&busy_node(), Format::Prometheus).unwrap();
    check_prometheus(&text);
    let all = samples(&text);
    assert!(
        series(&all, "gpuslice_claim_memory_used_bytes")
            .iter()
            .any(|s| s.labels["name"] == "a \"quoted\" \\ name")
    );
}

#[test]
fn limit_actions_are_counters_by_kind_mode_and_outcome_that_never_fall() {
    use crate::activity::WarningKind;
    use crate::limits::{LimitAction, LimitsBoard, LimitsReport};
    let board = LimitsBoard::default();
    let metrics = Metrics::new("sim").with_limits(board.clone());
    let actions = |all: &[Sample], kind, mode, outcome| {
        value(
            all,
            "gpuslice_limit_actions_total",
            &[("kind", kind), ("mode", mode), ("outcome", outcome)],
        )
    };
    let ended = ended_overshare();
    board.ledger().note(ended.clone());
    board.ledger().note(LimitAction {
        pid: 8,
        ..ended.clone()
    });
    board.ledger().note(LimitAction {
        kind: WarningKind::Unclaimed,
        mode: "dry-run",
        outcome: "would-end",
        claim_uid: String::new(),
        ..ended
    });
    let (text, all) = render(&metrics);
    assert!(
        text.contains("# TYPE gpuslice_limit_actions_total counter\n"),
        "{text}"
    );
    assert_eq!(actions(&all, "overshare", "end", "terminated"), Some(2.0));
    assert_eq!(
        actions(&all, "unclaimed", "dry-run", "would-end"),
        Some(1.0)
    );
    assert_eq!(actions(&all, "overshare", "end", "killed"), None);
    for (kind, outcome) in [
        ("overshare", "failed"),
        ("overshare", "not-permitted"),
        ("unclaimed", "failed"),
        ("unclaimed", "not-permitted"),
    ] {
        assert_eq!(
            actions(&all, kind, "end", outcome),
            Some(0.0),
            "{kind} {outcome}: there at 0 before any failure"
        );
    }
    super::super::activity::limit_actions(&metrics.families.activity, &LimitsReport::default());
    let (_, all) = render(&metrics);
    assert_eq!(
        actions(&all, "overshare", "end", "terminated"),
        Some(2.0),
        "never falls"
    );
}
