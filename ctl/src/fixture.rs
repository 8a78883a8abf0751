//! A hand-made GetActivity reply the render tests share: two claims (an MPS
//! claim over its share, an idle whole GPU), one unclaimed process, two
//! open warnings, at `NOW`.

use gpuslice_proto::gpuslice::v1 as pb;

pub const NOW: i64 = 1_700_000_000;
pub const GIB: u64 = 1 << 30;
pub const MPS_UID: &str = "00000000-0000-4000-8000-000000000001";
pub const IDLE_UID: &str = "00000000-0000-4000-8000-000000000002";

fn process(pid: u32, memory: u64, sm: u32) -> pb::ProcessActivity {
    pb::ProcessActivity {
        pid,
        name: "python".into(),
        memory_used_bytes: Some(memory),
        sm_percent: Some(sm),
        mps_client: true,
    }
}

fn claim_ref(uid: &str, namespace: &str, name: &str) -> Option<pb::ClaimRef> {
    Some(pb::ClaimRef {
        uid: uid.into(),
        namespace: namespace.into(),
        name: name.into(),
    })
}

pub fn reply() -> pb::GetActivityResponse {
    let mps = pb::ClaimActivity {
        claim: claim_ref(MPS_UID, "team-a", "train"),
        kind: "mps".into(),
        prepared_at: NOW - 3_600,
        last_active: Some(NOW - 12),
        idle_seconds: 12,
        not_sampled_yet: false,
        devices: vec![pb::DeviceActivity {
            device: "gpu-1".into(),
            gpu: "gpu-1".into(),
            uuid: "GPU-1111".into(),
            sharing: "mps".into(),
            memory_used_bytes: 6 * GIB,
            memory_share_bytes: Some(4 * GIB),
            memory_total_bytes: 80 * GIB,
            device_memory_used_bytes: None,
            sm_percent: Some(30),
            processes: vec![process(10, 2 * GIB, 10), process(11, 4 * GIB, 20)],
            pool: "node-1".into(),
            share_id: String::new(),
            summary: Some(pb::DeviceUsageSummary {
                window_seconds: 300,
                memory_peak_bytes: 7 * GIB,
                sm_mean_percent: Some(25),
                sm_peak_percent: Some(60),
                idle_since: None,
                overshare_since: Some(NOW - 60),
                process_count: 2,
                active_since: Some(NOW - 600),
                within_share_since: None,
            }),
            last_action: None,
        }],
    };
    let idle = pb::ClaimActivity {
        claim: claim_ref(IDLE_UID, "team-b", "notebook"),
        kind: "exclusive".into(),
        prepared_at: NOW - 7_200,
        last_active: None,
        idle_seconds: 7_200,
        not_sampled_yet: false,
        devices: vec![pb::DeviceActivity {
            device: "gpu-2".into(),
            gpu: "gpu-2".into(),
            uuid: "GPU-2222".into(),
            sharing: "exclusive".into(),
            memory_total_bytes: 80 * GIB,
            pool: "node-1".into(),
            summary: Some(pb::DeviceUsageSummary {
                window_seconds: 300,
                idle_since: Some(NOW - 7_200),
                ..Default::default()
            }),
            ..Default::default()
        }],
    };
    pb::GetActivityResponse {
        enabled: true,
        interval_ms: 5_000,
        sampled_at_ms: (NOW - 2) * 1000,
        sample_cpu_us: 300,
        claims: vec![mps, idle],
        unclaimed: vec![pb::UnclaimedProcess {
            gpu: "gpu-0".into(),
            device: "gpu-0".into(),
            process: Some(pb::ProcessActivity {
                name: "miner".into(),
                mps_client: false,
                ..process(77, GIB, 90)
            }),
            reason: "no gpuslice claim in its environment".into(),
        }],
        warnings: vec![
            pb::ActivityWarning {
                kind: "overshare".into(),
                since: NOW - 60,
                claim_uid: MPS_UID.into(),
                device: "gpu-1".into(),
                pid: 0,
                message: "claim team-a/train uses 6.0 GiB on gpu-1, over its 4.0 GiB share".into(),
            },
            pb::ActivityWarning {
                kind: "unclaimed".into(),
                since: NOW - 30,
                claim_uid: String::new(),
                device: "gpu-0".into(),
                pid: 77,
                message: "process 77 (miner) on gpu-0 belongs to no claim".into(),
            },
        ],
        episodes: Some(pb::EpisodeCounts {
            overshare_mps: 1,
            overshare_timeslicing: 0,
            unclaimed: 1,
        }),
        now: NOW,
        conditions_generation: 3,
    }
}
