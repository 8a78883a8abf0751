//! The claim status writer's API calls ([`write`] and its dry run,
//! [`gpuslice_dra_plugin::probe::claim_status`]) against
//! the fake API server's rules ([`crate::claim_status_rules`]), driven
//! directly (nothing prepared; the claims are seeded in the server): what
//! it writes is kept next to another driver's entry and dropped by an
//! empty apply; a claim of node-2 is refused and recorded; with
//! DRAResourceClaimDeviceStatus off the probe finds the field dropped, once;
//! with the kubelet's identity it is forbidden and told to set
//! `[claim_status] kubeconfig`. Rounds of the writer ([`Writer`]): one
//! write, silence while nothing changes, one removal; a forbidden writer
//! logs once and sends nothing until the recheck.

use gpuslice_dra_plugin::claim_status::entries::{
    Context, DeviceUsage, Idleness, Memory, Sharing, entry,
};
use std::collections::BTreeMap;

use gpuslice_dra_plugin::claim_status::access::{self, Access, State as Access_};
use gpuslice_dra_plugin::claim_status::plan::WriteBudget;
use gpuslice_dra_plugin::claim_status::round::{ClaimEntries, RoundReport, Writer};
use gpuslice_dra_plugin::claim_status::write::{self, Answer, ClaimRef, FIELD_MANAGER};
use gpuslice_dra_plugin::probe;
use k8s_openapi::api::resource::v1::AllocatedDeviceStatus;
use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

use crate::claim_status_rules::{ClaimStatusSwitches, Identity};
use crate::fake_apiserver::FakeApiServer;
use crate::{NODE, NODE_UID, uid};

const DRIVER: &str = "gpu.nvidia.com";

/// A claim allocated `gpu-0` of `node`'s pool on `node`, with another
/// driver's status entry written by another manager.
fn seeded_claim(name: &str, uid: &str, node: &str) -> Value {
    json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
           "metadata": {"namespace": "ml", "name": name, "uid": uid},
           "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}},
           "status": {
               "allocation": {
                   "devices": {"results": [
                       {"request": "gpu", "driver": DRIVER, "pool": node, "device": "gpu-0"},
                       {"request": "nic", "driver": "other.example.com", "pool": node, "device": "nic-0"}]},
                   "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                       {"key": "metadata.name", "operator": "In", "values": [node]}]}]}},
               "devices": [{"driver": "other.example.com", "pool": node, "device": "nic-0",
                            "conditions": [{"type": "Ready", "status": "True", "reason": "Up",
                                            "message": "", "lastTransitionTime": "2026-09-01T09:00:00Z"}]}]}})
}

pub(crate) fn server(switches: ClaimStatusSwitches) -> FakeApiServer {
    let server = FakeApiServer::start(NODE, NODE_UID);
    server.mutate(|state| {
        state.claim_status = switches;
        state
            .claim_status_log
            .owners
            .insert(("ml".into(), "a".into()), other_owner(NODE));
        state
            .claim_status_log
            .owners
            .insert(("ml".into(), "b".into()), other_owner("node-2"));
    });
    server.put_claim(seeded_claim("a", &uid(901), NODE));
    server.put_claim(seeded_claim("b", &uid(902), "node-2"));
    server.put_claim(seeded_claim("c", &uid(903), NODE));
    server
}

fn other_owner(node: &str) -> BTreeMap<crate::claim_status_rules::EntryKey, String> {
    BTreeMap::from([(
        (
            "other.example.com".to_owned(),
            node.to_owned(),
            "nic-0".to_owned(),
            String::new(),
        ),
        "other-manager".to_owned(),
    )])
}

pub(crate) fn bound_account() -> ClaimStatusSwitches {
    ClaimStatusSwitches {
        identity: Identity::ServiceAccount {
            node: Some(NODE.to_owned()),
            drivers: vec![DRIVER.to_owned()],
        },
        ..ClaimStatusSwitches::default()
    }
}

fn our_entry(pool: &str) -> AllocatedDeviceStatus {
    let at: Timestamp = "2026-09-01T09:00:00Z".parse().expect("time");
    let usage = DeviceUsage {
        pool: pool.to_owned(),
        device: "gpu-0".to_owned(),
        share_id: None,
        sharing: Sharing::Exclusive,
        prepared_at: at,
        sampled_at: Some(at),
        window_seconds: 300,
        memory: Memory {
            used: Some(4 << 30),
            ..Memory::default()
        },
        sm_mean_percent: Some(3),
        sm_peak_percent: Some(9),
        processes: Some(1),
        last_active: Some(at),
        thread_percentage: None,
        idleness: Idleness::Idle { since: at },
        overshare: None,
        advice: None,
        last_action: None,
    };
    let context = Context {
        driver: DRIVER.to_owned(),
        node: NODE.to_owned(),
        refresh_s: 300,
    };
    entry(&context, &usage)
}

fn claim_ref(name: &str, n: u32) -> ClaimRef {
    ClaimRef {
        namespace: "ml".to_owned(),
        name: name.to_owned(),
        uid: uid(n),
    }
}

fn drivers_stored(server: &FakeApiServer, name: &str) -> Vec<String> {
    let state = server.state();
    let claim = &state.claims[&("ml".to_owned(), name.to_owned())];
    claim["status"]["devices"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| e["driver"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn written_entries_are_kept_beside_other_drivers_and_dropped_by_an_empty_apply() {
    let server = server(bound_account());
    let mut access = Access::new(3_600_000);
    server.with_client(async |kube| {
        let a = claim_ref("a", 901);
        let sent = [our_entry(NODE)];
        let probed = probe::claim_status(&kube, &a, &sent)
            .await
            .expect("a finding");
        assert_eq!(access.observe(&probed, None, 0), Some(&Access_::Enabled));
        assert_eq!(
            drivers_stored(&server, "a"),
            ["other.example.com"],
            "dry run stores nothing"
        );
        assert_eq!(
            write::apply(&kube, &a, &sent).await.expect("apply"),
            Answer::Kept
        );
        assert_eq!(drivers_stored(&server, "a"), ["other.example.com", DRIVER]);
        // Again, identical: kept, still one entry of ours.
        write::apply(&kube, &a, &sent).await.expect("apply again");
        assert_eq!(drivers_stored(&server, "a"), ["other.example.com", DRIVER]);
        // Unprepared: the empty list drops ours, and only ours.
        write::apply(&kube, &a, &[]).await.expect("empty apply");
        assert_eq!(drivers_stored(&server, "a"), ["other.example.com"]);
    });
    let state = server.state();
    assert_eq!(state.claim_status_log.refusals, Vec::<String>::new());
    assert_eq!(
        state.claim_status_log.applies,
        ["dry-run ml/a", "ml/a", "ml/a", "ml/a"]
    );
    let owners = &state.claim_status_log.owners[&("ml".to_owned(), "a".to_owned())];
    assert!(owners.values().all(|m| m == "other-manager"), "{owners:?}");
    assert_eq!(FIELD_MANAGER, "gpuslice-dra-plugin");
}

#[test]
fn a_claim_allocated_on_another_node_is_refused_and_recorded() {
    let server = server(bound_account());
    server.with_client(async |kube| {
        let err = write::apply(&kube, &claim_ref("b", 902), &[our_entry("node-2")])
            .await
            .expect_err("node-2's claim");
        assert!(err.to_string().contains("403"), "{err}");
        assert!(err.to_string().contains("resourceclaims/driver"), "{err}");
        // An entry for a device not in the allocation, and a stale uid.
        let err = write::apply(&kube, &claim_ref("a", 901), &[our_entry("node-9")])
            .await
            .expect_err("not allocated");
        assert!(
            err.to_string().contains("must be an allocated device"),
            "{err}"
        );
        let err = write::apply(&kube, &claim_ref("a", 999), &[our_entry(NODE)])
            .await
            .expect_err("replaced claim");
        assert_eq!(
            err.outcome(),
            gpuslice_dra_plugin::claim_status::plan::Outcome::Done
        );
    });
    assert_eq!(drivers_stored(&server, "b"), ["other.example.com"]);
    let refusals = server.state().claim_status_log.refusals.clone();
    assert_eq!(refusals.len(), 3, "{refusals:?}");
    assert!(refusals[0].starts_with("ml/b: 403"), "{refusals:?}");
    assert!(refusals[1].starts_with("ml/a: 422"), "{refusals:?}");
    assert!(refusals[2].starts_with("ml/a: 409"), "{refusals:?}");
}

#[test]
fn with_the_gate_off_the_probe_finds_the_field_dropped_once() {
    let server = server(ClaimStatusSwitches {
        gate_off: true,
        ..bound_account()
    });
    let mut access = Access::new(3_600_000);
    let mut lines = Vec::new();
    server.with_client(async |kube| {
        for at in [0, 3_600_000] {
            let probed = probe::claim_status(&kube, &claim_ref("a", 901), &[our_entry(NODE)])
                .await
                .expect("a finding");
            assert!(access.needs_probe(at));
            if let Some(state) = access.observe(&probed, None, at) {
                lines.push(access::describe(state));
            }
        }
    });
    assert_eq!(
        lines,
        [
            "claim status: off: the API server drops ResourceClaim status.devices \
          (DRAResourceClaimDeviceStatus off)"
        ]
    );
    assert!(server.state().claim_status_log.refusals.is_empty());
}

#[test]
fn with_the_kubelets_identity_the_probe_names_the_claim_status_kubeconfig() {
    let server = server(ClaimStatusSwitches {
        identity: Identity::Node(NODE.to_owned()),
        ..ClaimStatusSwitches::default()
    });
    let mut access = Access::new(3_600_000);
    let line = server.with_client(async |kube| {
        let probed = probe::claim_status(&kube, &claim_ref("a", 901), &[our_entry(NODE)])
            .await
            .expect("a finding");
        let me = access::identity(&kube).await;
        assert_eq!(me.as_deref(), Some("system:node:node-1"));
        access
            .observe(&probed, me.as_deref(), 0)
            .map(access::describe)
    });
    let line = line.expect("a change of state");
    assert!(
        line.contains("as system:node:node-1") && line.contains("set [claim_status] kubeconfig"),
        "{line}"
    );
    assert_eq!(drivers_stored(&server, "a"), ["other.example.com"]);
    assert_eq!(server.state().claim_status_log.refusals.len(), 1);
}

pub(crate) fn prepared(names: &[(&str, u32)]) -> BTreeMap<String, ClaimEntries> {
    names
        .iter()
        .map(|(name, n)| {
            (
                uid(*n),
                ClaimEntries {
                    claim: claim_ref(name, *n),
                    entries: vec![our_entry(NODE)],
                },
            )
        })
        .collect()
}

pub(crate) fn limits() -> WriteBudget {
    WriteBudget {
        refresh: 300_000,
        max_writes_per_minute: 60,
    }
}

#[test]
fn rounds_write_once_stay_quiet_and_remove_once() {
    let server = server(bound_account());
    let mut writer = Writer::new(limits(), 3_600_000);
    server.with_client(async |kube| {
        let claims = prepared(&[("a", 901)]);
        let first = writer.round(&kube, &claims, 0).await;
        assert_eq!(first.applied, 1);
        assert_eq!(
            first.access_changed.as_deref(),
            Some("claim status: written")
        );
        assert_eq!(drivers_stored(&server, "a"), ["other.example.com", DRIVER]);
        // Nothing changed: nothing sent, however late.
        for now in [5_000, 600_000, 3_600_000] {
            assert_eq!(
                writer.round(&kube, &claims, now).await,
                RoundReport::default()
            );
        }
        // Unprepared: one empty apply, then silence.
        let gone = writer.round(&kube, &BTreeMap::new(), 3_700_000).await;
        assert_eq!((gone.requests, gone.applied), (1, 1));
        assert_eq!(drivers_stored(&server, "a"), ["other.example.com"]);
        assert_eq!(
            writer.round(&kube, &BTreeMap::new(), 3_800_000).await,
            RoundReport::default()
        );
    });
    assert_eq!(
        server.state().claim_status_log.applies,
        ["dry-run ml/a", "ml/a", "ml/a"]
    );
}

#[test]
fn a_forbidden_writer_says_so_once_and_sends_nothing_until_the_recheck() {
    let server = server(ClaimStatusSwitches {
        identity: Identity::Node(NODE.to_owned()),
        ..ClaimStatusSwitches::default()
    });
    let mut writer = Writer::new(limits(), 3_600_000);
    server.with_client(async |kube| {
        // Two claims due at once: the first probe's refusal stops the round.
        let claims = prepared(&[("a", 901), ("c", 903)]);
        let first = writer.round(&kube, &claims, 0).await;
        let line = first.access_changed.expect("one line");
        assert!(line.contains("set [claim_status] kubeconfig"), "{line}");
        assert_eq!((first.requests, first.applied), (1, 0));
        for now in [60_000, 3_599_999] {
            assert_eq!(
                writer.round(&kube, &claims, now).await,
                RoundReport::default()
            );
        }
        // The recheck probes again: same verdict, no new line.
        let again = writer.round(&kube, &claims, 3_600_000).await;
        assert_eq!((again.requests, again.access_changed), (1, None));
        assert!(matches!(writer.access(), Access_::Forbidden(_)));
    });
    assert_eq!(server.state().claim_status_log.refusals.len(), 2);
}
