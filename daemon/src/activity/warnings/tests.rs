use super::conditions;
use crate::activity::attribute::{Attribution, OverShare};
use crate::activity::episodes::Counter;
use crate::activity::fixtures::{A, GIB, device_activity};
use crate::activity::snapshot::{
    ClaimActivity, DeviceActivity, ProcessActivity, UnclaimedProcess, WarningKind,
};
use crate::state::AccessKind;

fn device(sharing: AccessKind, used: u64, share: Option<u64>) -> DeviceActivity {
    device_activity("gpu-0", sharing, used, share)
}

fn claim(devices: Vec<DeviceActivity>) -> ClaimActivity {
    ClaimActivity {
        uid: A.to_owned(),
        namespace: "team".to_owned(),
        name: "notebook".to_owned(),
        kind: AccessKind::Mps,
        prepared_at: 0,
        last_active: None,
        sampled: true,
        devices,
    }
}

#[test]
fn an_over_share_names_the_claim_its_use_and_share_and_what_to_do() {
    let attribution = Attribution {
        claims: vec![claim(vec![
            device(AccessKind::Mps, 6 * GIB + GIB / 2, Some(4 * GIB)),
            device(AccessKind::TimeSlicing, 50 * GIB, Some(40 * GIB)),
        ])],
        overshares: vec![
            OverShare {
                claim: 0,
                device: 0,
            },
            OverShare {
                claim: 0,
                device: 1,
            },
        ],
        ..Attribution::default()
    };
    let found = conditions(&attribution);
    assert_eq!(found.len(), 2);
    let c = &found[0];
    assert_eq!(
        (c.kind, c.counter),
        (WarningKind::OverShare, Counter::OverShare(AccessKind::Mps))
    );
    assert_eq!(
        (c.claim_uid.as_str(), c.scope.as_str(), c.pid),
        (A, "gpu-0", 0)
    );
    assert!(
        c.message.starts_with(&format!(
            "claim team/notebook ({A}) uses 6.5 GiB of GPU memory on gpu-0, over its mps share of 4.0 GiB"
        )),
        "{}",
        c.message
    );
    assert!(c.message.contains("give the claim a larger share"));
    assert_eq!(
        found[1].counter,
        Counter::OverShare(AccessKind::TimeSlicing)
    );
}

#[test]
fn an_unclaimed_process_says_why_and_what_to_do() {
    let attribution = Attribution {
        unclaimed: vec![UnclaimedProcess {
            gpu: "gpu-1".to_owned(),
            device: "gpu-1".to_owned(),
            process: ProcessActivity {
                pid: 4242,
                name: "python".to_owned(),
                memory_used: Some(512 << 20),
                sm_percent: Some(10),
                mps_client: false,
            },
            reason: "no gpuslice claim in its environment".to_owned(),
        }],
        ..Attribution::default()
    };
    let found = conditions(&attribution);
    assert_eq!(found.len(), 1);
    let c = &found[0];
    assert_eq!(
        (c.kind, c.counter),
        (WarningKind::Unclaimed, Counter::Unclaimed)
    );
    assert_eq!(
        (c.scope.as_str(), c.pid, c.claim_uid.as_str()),
        ("gpu-1", 4242, "")
    );
    assert_eq!(
        c.message,
        "process 4242 (python) on gpu-1, using 512 MiB, belongs to no gpuslice claim (no \
         gpuslice claim in its environment); it bypasses the scheduler: run it through a \
         ResourceClaim, or stop it"
    );
}
