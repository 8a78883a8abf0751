//! What an adopted fixture must look like: its files on disk, the claims'
//! CDI ids (listed and prepared again), the MIG slices and their holders,
//! and the MPS daemons under the fixture's key hashes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use gpuslice::state::ClaimRecord;
use gpuslice_proto::gpuslice::v1 as pb;

use super::fixture::Fixture;
use super::survivors::Episode;
use crate::common::queries::Queries;
use crate::harness::{Client, list};
use crate::stand_ins::SharedDaemon;

/// Each file in `want` (relative to `base`) holds exactly its bytes, and
/// the folders they are in hold no other file of ours.
pub fn assert_files(base: &Path, want: &BTreeMap<String, Vec<u8>>, when: &str) {
    for (file, bytes) in want {
        let found = std::fs::read(base.join(file)).unwrap_or_default();
        assert!(
            &found == bytes,
            "{file} {when} differs from the fixture's:\n--- fixture\n{}\n--- now\n{}",
            String::from_utf8_lossy(bytes),
            String::from_utf8_lossy(&found)
        );
    }
    let folders: BTreeSet<&str> = want
        .keys()
        .filter_map(|f| f.rsplit_once('/').map(|(folder, _)| folder))
        .filter(|folder| !folder.starts_with("run/mps/") && *folder != "state")
        .collect();
    for folder in folders {
        let prefix = format!("{folder}/");
        let wanted: Vec<String> = want
            .keys()
            .filter_map(|f| f.strip_prefix(&prefix))
            .filter(|rest| !rest.contains('/'))
            .map(str::to_owned)
            .collect();
        assert_eq!(list(&base.join(folder)), wanted, "{folder} {when}");
    }
}

/// ListClaims gives every claim with the CDI ids of its record.
pub async fn assert_cdi_ids(client: &mut Client, records: &BTreeMap<String, ClaimRecord>) {
    let listed = client
        .list_claims(pb::ListClaimsRequest {})
        .await
        .expect("ListClaims")
        .into_inner();
    let ids: BTreeMap<String, Vec<String>> = listed
        .claims
        .iter()
        .map(|c| {
            let uid = c.claim.as_ref().map(|r| r.uid.clone()).unwrap_or_default();
            (
                uid,
                c.devices
                    .iter()
                    .flat_map(|d| d.cdi_device_ids.clone())
                    .collect(),
            )
        })
        .collect();
    assert_eq!(ids, cdi_ids(records));
    assert!(listed.claims.iter().all(|c| c.phase == "prepared"));
}

fn cdi_ids(records: &BTreeMap<String, ClaimRecord>) -> BTreeMap<String, Vec<String>> {
    records
        .iter()
        .map(|(uid, r)| {
            let ids = r.devices.iter().flat_map(|d| d.cdi_device_ids.clone());
            (uid.clone(), ids.collect())
        })
        .collect()
}

/// Prepares every claim again as the kubelet would after the restart (the
/// same devices and configs): each is already prepared, with its CDI ids.
pub async fn prepare_again(client: &mut Client, records: &BTreeMap<String, ClaimRecord>) {
    for (uid, record) in records {
        let answer = client
            .prepare(request(record))
            .await
            .unwrap_or_else(|e| panic!("prepare {uid} again: {e}"))
            .into_inner();
        assert!(answer.already_prepared, "{uid}");
        let ids: Vec<String> = answer
            .devices
            .iter()
            .flat_map(|d| d.cdi_device_ids.clone())
            .collect();
        assert_eq!(ids, cdi_ids(records)[uid], "{uid}");
    }
}

/// The Prepare request a record was made from.
fn request(record: &ClaimRecord) -> pb::PrepareRequest {
    pb::PrepareRequest {
        claim: Some(pb::ClaimRef {
            uid: record.uid.clone(),
            namespace: record.namespace.clone(),
            name: record.name.clone(),
        }),
        devices: record
            .devices
            .iter()
            .map(|d| pb::AllocatedDevice {
                device: d.device.clone(),
                request_names: d.request_names.clone(),
                pool: d.pool.clone(),
                consumed_memory_bytes: d.consumed_memory.and_then(|m| i64::try_from(m).ok()),
                share_id: d.share_id.clone(),
            })
            .collect(),
        configs: record
            .configs
            .iter()
            .map(|json| pb::OpaqueConfig {
                source: pb::ConfigSource::Claim.into(),
                requests: vec![],
                parameters_json: json.clone(),
            })
            .collect(),
    }
}

/// One MIG slice: GPU index, GPU instance, placement, MIG UUID (`None`
/// where it may be new: a slice made again gets a new one), holder.
pub type Slice = (u32, u32, u32, u32, Option<String>, String);

/// The MIG instances of the fixture's simulated hardware: GPU index, GPU
/// instance, placement start and size, and MIG UUID.
pub fn fixture_instances(fixture: &Fixture) -> Vec<(u32, u32, u32, u32, String)> {
    let hardware: serde_json::Value =
        serde_json::from_slice(&fixture.bytes("sim-hardware.json")).expect("hardware JSON");
    let number = |v: &serde_json::Value| {
        v.as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .expect("a number")
    };
    let gpus = hardware["state"].as_array().expect("GPU states");
    let mut instances = Vec::new();
    for (index, gpu) in (0u32..).zip(gpus) {
        for gi in gpu["gpu_instances"].as_array().expect("instances") {
            let uuid = gi["compute_instances"][0]["uuid"]
                .as_str()
                .expect("MIG UUID");
            instances.push((
                index,
                number(&gi["id"]),
                number(&gi["placement"]["start"]),
                number(&gi["placement"]["size"]),
                uuid.to_owned(),
            ));
        }
    }
    instances
}

/// The fixture's slices with the claims holding them; `same_uuids`: with
/// their MIG UUIDs (a restart in the same boot keeps them).
pub fn expected_slices(fixture: &Fixture, same_uuids: bool) -> BTreeSet<Slice> {
    let records = fixture.records();
    fixture_instances(fixture)
        .into_iter()
        .map(|(index, gi, start, size, uuid)| {
            let holder = records
                .values()
                .find(|r| {
                    r.devices.iter().any(|d| {
                        d.mig
                            .as_ref()
                            .is_some_and(|m| m.mig_uuid.as_deref() == Some(&*uuid))
                    })
                })
                .map(|r| r.uid.clone())
                .unwrap_or_default();
            (index, gi, start, size, same_uuids.then_some(uuid), holder)
        })
        .collect()
}

/// GetMigLayout shows exactly `want` (with the UUIDs if `want` has them),
/// and gpu-1 with MIG off: its whole-GPU claim switched it off.
pub fn assert_mig_layout(layout: &pb::GetMigLayoutResponse, want: &BTreeSet<Slice>) {
    let same_uuids = want.iter().all(|s| s.4.is_some());
    let found: BTreeSet<Slice> = layout
        .gpus
        .iter()
        .flat_map(|gpu| {
            gpu.instances.iter().map(move |i| {
                (
                    gpu.index,
                    i.gpu_instance_id,
                    i.placement_start,
                    i.placement_size,
                    same_uuids.then(|| i.uuid.clone()),
                    i.holder.clone(),
                )
            })
        })
        .collect();
    assert_eq!(&found, want);
    let gpu1 = layout.gpus.iter().find(|g| g.index == 1).expect("gpu-1");
    assert_eq!(gpu1.mig_mode, "disabled", "held whole");
}

/// The fixture's MPS daemon keys (their CUDA_VISIBLE_DEVICES) by hash.
pub fn fixture_keys(fixture: &Fixture) -> BTreeMap<String, String> {
    let keys: BTreeMap<String, String> = fixture
        .files()
        .iter()
        .filter_map(|f| {
            let hash = f.strip_prefix("run/mps/")?.strip_suffix("/key")?;
            let key = String::from_utf8(fixture.bytes(f)).expect("key text");
            Some((hash.to_owned(), key))
        })
        .collect();
    assert_eq!(keys.len(), 2, "{keys:?}");
    keys
}

/// The MPS daemons run under `keys` (hash → CUDA_VISIBLE_DEVICES): those
/// folders and no other, each daemon started once by this gpusliced with
/// its key, running, serving the pipe dir in its folder.
pub async fn assert_mps_daemons(node: &SharedDaemon, keys: &BTreeMap<String, String>) {
    let mps_dir = node.path().join("run/mps");
    assert_eq!(list(&mps_dir), keys.keys().cloned().collect::<Vec<_>>());
    let started: Vec<String> = node
        .mps_lines()
        .iter()
        .filter_map(|l| l.strip_prefix("start CUDA_VISIBLE_DEVICES="))
        .filter_map(|rest| rest.split_once(' ').map(|(key, _)| key.to_owned()))
        .collect();
    let mut wanted_starts: Vec<String> = keys.values().cloned().collect();
    wanted_starts.sort();
    let mut sorted = started.clone();
    sorted.sort();
    assert_eq!(sorted, wanted_starts, "started once each: {started:?}");
    let sharing = node.sharing().await;
    let running: BTreeSet<(String, String)> = sharing
        .gpus
        .iter()
        .flat_map(|g| &g.mps_daemons)
        .map(|d| (d.pipe_dir.clone(), d.state.clone()))
        .collect();
    let wanted: BTreeSet<(String, String)> = keys
        .keys()
        .map(|hash| {
            let pipe = mps_dir.join(hash).join("pipe");
            (pipe.display().to_string(), "running".to_owned())
        })
        .collect();
    assert_eq!(running, wanted);
}

/// Every fault of the fixture is reported with the time it began.
pub async fn assert_faults_kept(client: &mut Client, fixture: &Fixture) {
    let file: serde_json::Value =
        serde_json::from_slice(&fixture.bytes("state/health.json")).expect("health JSON");
    let mut wanted: Vec<i64> = Vec::new();
    for gpu in file["gpus"].as_object().expect("gpus").values() {
        wanted.extend(gpu["whole"]["since"].as_i64());
        for instance in gpu["instances"].as_object().expect("instances").values() {
            wanted.extend(instance["fault"]["since"].as_i64());
        }
    }
    let health = client.health().await;
    let reported = |xid: &str, holder: &str| {
        health.unhealthy.iter().any(|d| {
            d.reason.contains(xid)
                && d.claims.iter().any(|c| c == holder)
                && wanted.contains(&d.since)
        })
    };
    assert_eq!(wanted.len(), 2, "{file}");
    assert!(
        reported("XID 48", "11111111-1111-4111-8111-111111111111"),
        "gpu-0's fault: {:?}",
        health.unhealthy
    );
    assert!(
        reported("XID 94", "33333333-3333-4333-8333-333333333333"),
        "the slice's fault: {:?}",
        health.unhealthy
    );
}

/// The fixture's open episodes go on from where they were (their first
/// sample, the unclaimed one on the process that stands for its own), and
/// none began again: nothing is counted or warned of anew.
pub async fn assert_episodes_go_on(
    client: &mut Client,
    episodes: &[Episode],
    unclaimed_pid: u32,
    log: &str,
) {
    let activity = client.activity(true).await;
    let mut open: Vec<(String, String, u32, i64)> = activity
        .warnings
        .iter()
        .map(|w| (w.kind.clone(), w.claim_uid.clone(), w.pid, w.since))
        .collect();
    open.sort();
    let [overshare, unclaimed] = episodes else {
        panic!("two episodes in the fixture")
    };
    let kept = vec![
        (
            "overshare".to_owned(),
            overshare.claim_uid.clone(),
            overshare.pid,
            overshare.since,
        ),
        (
            "unclaimed".to_owned(),
            String::new(),
            unclaimed_pid,
            unclaimed.since,
        ),
    ];
    assert_eq!(open, kept, "the open episodes go on");
    let counts = activity.episodes.expect("episode counts");
    assert_eq!(
        (counts.overshare_mps, counts.unclaimed),
        (0, 0),
        "none begun again; log:\n{log}"
    );
}
