//! The snapshot → proto conversions, field by field, on a hand-made snapshot.

use std::collections::BTreeMap;

use super::{activity_response, warning_lines};
use crate::activity::{
    ActivitySnapshot, ClaimActivity, DeviceActivity, DeviceSummary, EpisodeCounts, ProcessActivity,
    UnclaimedProcess, Warning, WarningKind,
};
use crate::state::AccessKind;

const GIB: u64 = 1 << 30;

fn process(pid: u32, memory: u64, sm: Option<u32>) -> ProcessActivity {
    ProcessActivity {
        pid,
        name: format!("python{pid}"),
        memory_used: Some(memory),
        sm_percent: sm,
        mps_client: true,
    }
}

fn snapshot() -> ActivitySnapshot {
    let device = DeviceActivity {
        device: "gpu-1".into(),
        gpu: "gpu-1".into(),
        uuid: "GPU-1111".into(),
        sharing: AccessKind::Mps,
        memory_used: 6 * GIB,
        memory_share: Some(4 * GIB),
        memory_total: 80 * GIB,
        device_memory_used: None,
        sm_percent: Some(30),
        processes: vec![
            process(10, 2 * GIB, Some(10)),
            process(11, 4 * GIB, Some(20)),
        ],
        pool: "node-1".into(),
        share_id: "5f0c1b2a-0000-4000-8000-00000000000a".into(),
        summary: Some(DeviceSummary {
            window_s: 300,
            memory_peak: 7 * GIB,
            sm_mean: Some(25),
            sm_peak: Some(60),
            process_count: 2,
            idle_since: None,
            overshare_since: Some(1_950),
            active_since: Some(1_000),
            within_share_since: None,
        }),
    };
    let mps = ClaimActivity {
        uid: "00000000-0000-4000-8000-000000000001".into(),
        namespace: "team-a".into(),
        name: "train".into(),
        kind: AccessKind::Mps,
        prepared_at: 1_000,
        last_active: Some(1_900),
        sampled: true,
        devices: vec![device],
    };
    let idle = ClaimActivity {
        uid: "00000000-0000-4000-8000-000000000002".into(),
        namespace: "team-b".into(),
        name: "notebook".into(),
        kind: AccessKind::Exclusive,
        prepared_at: 500,
        last_active: None,
        sampled: true,
        devices: Vec::new(),
    };
    ActivitySnapshot {
        enabled: true,
        interval_ms: 5_000,
        sampled_at_ms: 1_999_000,
        sample_cpu_us: 250,
        claims: vec![mps, idle],
        unclaimed: vec![UnclaimedProcess {
            gpu: "gpu-0".into(),
            device: "gpu-0".into(),
            process: ProcessActivity {
                mps_client: false,
                sm_percent: None,
                ..process(77, GIB, None)
            },
            reason: "no gpuslice claim in its environment".into(),
        }],
        warnings: vec![
            Warning {
                kind: WarningKind::OverShare,
                since: 1_950,
                claim_uid: "00000000-0000-4000-8000-000000000001".into(),
                device: "gpu-1".into(),
                pid: 0,
                message: "claim team-a/train uses 6.0 GiB of its 4.0 GiB share on gpu-1".into(),
            },
            Warning {
                kind: WarningKind::Unclaimed,
                since: 1_960,
                claim_uid: String::new(),
                device: "gpu-0".into(),
                pid: 77,
                message: "process 77 on gpu-0 belongs to no claim".into(),
            },
        ],
        episodes: EpisodeCounts {
            overshare: BTreeMap::from([(AccessKind::Mps, 3), (AccessKind::TimeSlicing, 1)]),
            unclaimed: 2,
        },
        series_dropped: 0,
        conditions_generation: 7,
    }
}

#[test]
fn every_field_of_the_snapshot_reaches_the_reply() {
    let reply = activity_response(&snapshot(), &crate::limits::LimitsReport::default(), 2_000);
    assert!(reply.enabled);
    assert_eq!(reply.interval_ms, 5_000);
    assert_eq!(reply.sampled_at_ms, 1_999_000);
    assert_eq!(reply.sample_cpu_us, 250);
    assert_eq!(reply.now, 2_000);
    let claim = &reply.claims[0];
    let r = claim.claim.as_ref().unwrap();
    assert_eq!(
        (r.uid.as_str(), r.namespace.as_str(), r.name.as_str()),
        ("00000000-0000-4000-8000-000000000001", "team-a", "train")
    );
    assert_eq!(claim.kind, "mps");
    assert_eq!(claim.prepared_at, 1_000);
    assert_eq!(claim.last_active, Some(1_900));
    assert_eq!(claim.idle_seconds, 100);
    assert!(!claim.not_sampled_yet);
    let d = &claim.devices[0];
    assert_eq!((d.device.as_str(), d.gpu.as_str()), ("gpu-1", "gpu-1"));
    assert_eq!((d.uuid.as_str(), d.sharing.as_str()), ("GPU-1111", "mps"));
    assert_eq!(d.memory_used_bytes, 6 * GIB);
    assert_eq!(d.memory_share_bytes, Some(4 * GIB));
    assert_eq!(d.memory_total_bytes, 80 * GIB);
    assert_eq!(d.device_memory_used_bytes, None);
    assert_eq!(d.sm_percent, Some(30));
    let pids: Vec<u32> = d.processes.iter().map(|p| p.pid).collect();
    assert_eq!(pids, [10, 11]);
    assert_eq!(
        (d.pool.as_str(), d.share_id.as_str()),
        ("node-1", "5f0c1b2a-0000-4000-8000-00000000000a")
    );
    assert_eq!(
        d.summary,
        Some(gpuslice_proto::gpuslice::v1::DeviceUsageSummary {
            window_seconds: 300,
            memory_peak_bytes: 7 * GIB,
            sm_mean_percent: Some(25),
            sm_peak_percent: Some(60),
            idle_since: None,
            overshare_since: Some(1_950),
            process_count: 2,
            active_since: Some(1_000),
            within_share_since: None,
        })
    );
    assert_eq!(reply.conditions_generation, 7);
    let p = &d.processes[1];
    assert_eq!(p.name, "python11");
    assert_eq!(p.memory_used_bytes, Some(4 * GIB));
    assert_eq!(p.sm_percent, Some(20));
    assert!(p.mps_client);
    let u = &reply.unclaimed[0];
    assert_eq!((u.gpu.as_str(), u.device.as_str()), ("gpu-0", "gpu-0"));
    assert_eq!(u.reason, "no gpuslice claim in its environment");
    let up = u.process.as_ref().unwrap();
    assert_eq!((up.pid, up.sm_percent, up.mps_client), (77, None, false));
    let kinds: Vec<&str> = reply.warnings.iter().map(|w| w.kind.as_str()).collect();
    assert_eq!(kinds, ["overshare", "unclaimed"]);
    let w = &reply.warnings[1];
    assert_eq!((w.since, w.pid, w.device.as_str()), (1_960, 77, "gpu-0"));
    assert_eq!(reply.warnings[0].claim_uid, r.uid);
    let e = reply.episodes.unwrap();
    assert_eq!(
        (e.overshare_mps, e.overshare_timeslicing, e.unclaimed),
        (3, 1, 2)
    );
}

#[test]
fn a_claim_never_active_is_idle_since_its_prepare() {
    let reply = activity_response(&snapshot(), &crate::limits::LimitsReport::default(), 2_000);
    let idle = &reply.claims[1];
    assert_eq!(idle.last_active, None);
    assert_eq!(idle.idle_seconds, 1_500);
    assert_eq!(idle.kind, "exclusive");
}

#[test]
fn a_device_not_summarised_has_no_summary() {
    let mut snapshot = snapshot();
    snapshot.claims[0].devices[0].summary = None;
    let reply = activity_response(&snapshot, &crate::limits::LimitsReport::default(), 2_000);
    assert_eq!(reply.claims[0].devices[0].summary, None);
}

#[test]
fn a_claim_not_sampled_yet_says_so() {
    let mut snapshot = snapshot();
    snapshot.claims[1].sampled = false;
    let reply = activity_response(&snapshot, &crate::limits::LimitsReport::default(), 2_000);
    assert!(reply.claims[1].not_sampled_yet);
    assert_eq!(reply.claims[1].idle_seconds, 1_500, "since its prepare");
    assert!(!reply.claims[0].not_sampled_yet);
}

#[test]
fn sampling_off_answers_an_empty_disabled_reply() {
    let reply = activity_response(
        &ActivitySnapshot::default(),
        &crate::limits::LimitsReport::default(),
        42,
    );
    assert!(!reply.enabled);
    assert!(reply.claims.is_empty() && reply.unclaimed.is_empty());
    assert!(reply.warnings.is_empty());
    assert_eq!(reply.episodes.unwrap_or_default(), Default::default());
}

#[test]
fn status_lists_each_open_warning_by_its_message() {
    let lines = warning_lines(&snapshot());
    assert_eq!(
        lines,
        [
            "claim team-a/train uses 6.0 GiB of its 4.0 GiB share on gpu-1",
            "process 77 on gpu-0 belongs to no claim",
        ]
    );
    assert!(warning_lines(&ActivitySnapshot::default()).is_empty());
}

#[test]
fn the_last_limits_action_shows_on_its_claims_device() {
    use crate::activity::WarningKind;
    use crate::limits::{LimitAction, LimitsReport};
    let snapshot = snapshot();
    let mut limits = LimitsReport::default();
    let uid = snapshot.claims[0].uid.clone();
    let action = LimitAction {
        kind: WarningKind::OverShare,
        mode: "end",
        outcome: "terminated",
        claim_uid: uid.clone(),
        device: "gpu-1".into(),
        pid: 11,
        comm: "python11".into(),
        memory_used: 4 * GIB,
        over_for_s: 61,
        at_ms: 1_999_500,
    };
    limits.last.insert((uid, "gpu-1".into()), action.clone());
    let unclaimed = LimitAction {
        kind: WarningKind::Unclaimed,
        claim_uid: String::new(),
        ..action
    };
    limits
        .last
        .insert((String::new(), "gpu-1".into()), unclaimed);
    let reply = activity_response(&snapshot, &limits, 2_000);
    let last = reply.claims[0].devices[0].last_action.as_ref().unwrap();
    assert_eq!(
        (
            last.kind.as_str(),
            last.mode.as_str(),
            last.outcome.as_str()
        ),
        ("overshare", "end", "terminated")
    );
    assert_eq!((last.pid, last.comm.as_str()), (11, "python11"));
    assert_eq!(
        (last.memory_used_bytes, last.over_for_s, last.at_ms),
        (4 * GIB, 61, 1_999_500)
    );
    assert!(
        reply.claims[1].devices.is_empty(),
        "another claim shows no action"
    );
    let plain = activity_response(&self::snapshot(), &LimitsReport::default(), 2_000);
    assert_eq!(plain.claims[0].devices[0].last_action, None);
}
