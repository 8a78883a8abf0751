//! The plugin's one dry-run probe ([`gpuslice_dra_plugin::probe`]) against
//! the fake API server's fault mode ([`crate::fake_faults`]), driven in
//! process (no plugin binary, no gpusliced) with kube's own retries of 429
//! and 503 off, so every answer reaches the plugin's reading:
//! - the MIG-form question: an answer that decides nothing (408, 409, 429,
//!   500, 503) at either dry run fails the call and keeps what was found,
//!   so the retry sends only the dry runs still open and reaches the
//!   fault-free verdict; a refusal (400, 401, 403, 404, 422) is a verdict,
//!   the layout with the refusal as the reason; a verdict is answered again
//!   without a request until it is forgotten;
//! - the claim-status question, through the writer's rounds: an answer
//!   that decides nothing leaves the access Unknown and the claim planned
//!   again, and the next round writes it; a 403 is the Forbidden verdict; a
//!   422 ends that claim and leaves the access alone.

use gpuslice_dra_plugin::advertise::{CONSUMES, Form, SHARED};
use gpuslice_dra_plugin::claim_status::access::State;
use gpuslice_dra_plugin::claim_status::round::Writer;
use gpuslice_dra_plugin::probe::{MigFormProbe, ProbeError, ProbeTarget};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

use crate::claim_status::{bound_account, limits, prepared, server};
use crate::fake_apiserver::FakeApiServer;
use crate::{NODE, NODE_UID};

/// The answers that decide nothing.
const UNDECIDED: [u16; 5] = [408, 409, 429, 500, 503];
/// The refusals, each a verdict.
const REFUSALS: [u16; 5] = [400, 401, 403, 404, 422];
const RECHECK: u64 = 3_600_000;

fn owner() -> OwnerReference {
    OwnerReference {
        api_version: "v1".to_owned(),
        kind: "Node".to_owned(),
        name: NODE.to_owned(),
        uid: NODE_UID.to_owned(),
        controller: Some(true),
        block_owner_deletion: None,
    }
}

/// The probe of [`NODE`]'s GPU driver, its slices owned by `owner`.
fn gpu_driver_target(owner: &OwnerReference) -> ProbeTarget<'_> {
    ProbeTarget {
        node: NODE,
        driver: "gpu.nvidia.com",
        owner,
    }
}

/// A fake API server with the gate on whose next writes get `script`
/// (None: served).
fn faulty(script: &[Option<u16>]) -> FakeApiServer {
    let server = FakeApiServer::start_with_gate(NODE, NODE_UID, true);
    server.mutate(|s| s.faults.script = script.iter().copied().collect());
    server
}

#[test]
fn an_answer_that_decides_nothing_is_retried_and_what_was_found_is_kept() {
    let owner = owner();
    let target = gpu_driver_target(&owner);
    for code in UNDECIDED {
        for (step, field) in [SHARED, CONSUMES].into_iter().enumerate() {
            let mut script = vec![None; step];
            script.push(Some(code));
            let server = faulty(&script);
            let mut probe = MigFormProbe::default();
            server.with_client_no_retries(async |kube| {
                let failed = probe.decide(&kube, &target).await;
                assert!(
                    matches!(&failed, Err(ProbeError::DryRun { field: f, .. }) if *f == field),
                    "{code} at {field}: {failed:?}"
                );
                assert_eq!(probe.decision(), None, "{code}: no verdict");
                let decision = probe.decide(&kube, &target).await.expect("the retry");
                assert_eq!(decision.form, Form::Partitionable, "{code} at {field}");
                let again = probe.decide(&kube, &target).await.expect("kept");
                assert_eq!(again, decision);
            });
            let state = server.state();
            assert_eq!(
                state.dry_runs.len(),
                2,
                "{code} at {field}: each taken once"
            );
            assert_eq!(
                (state.faults.writes, state.faults.failed.len()),
                (3, 1),
                "{code} at {field}: the failed one, then only what was open; {:?}",
                state.faults.failed
            );
        }
    }
}

#[test]
fn a_refusal_is_a_verdict_kept_until_forgotten() {
    let owner = owner();
    let target = gpu_driver_target(&owner);
    for code in REFUSALS {
        let server = faulty(&[Some(code)]);
        let mut probe = MigFormProbe::default();
        server.with_client_no_retries(async |kube| {
            let decision = probe.decide(&kube, &target).await.expect("a verdict");
            assert_eq!(decision.form, Form::Layout, "{code}");
            assert!(
                decision.reason.starts_with(
                    "the API server refused the dry-run create of a ResourceSlice with \
                     sharedCounters"
                ) && decision.reason.contains(&format!("({code}: ")),
                "{code}: {}",
                decision.reason
            );
            assert_eq!(probe.decide(&kube, &target).await.ok(), Some(decision));
            assert_eq!(server.state().faults.writes, 2, "{code}: kept, not asked");
            // Forgotten (a relist, say): asked from the start, and the
            // refusal has passed.
            probe.forget();
            let fresh = probe.decide(&kube, &target).await.expect("a verdict");
            assert_eq!(fresh.form, Form::Partitionable, "{code}");
        });
        assert_eq!(server.state().faults.writes, 4, "{code}");
    }
}

#[test]
fn a_status_dry_run_that_decides_nothing_leaves_the_claim_to_the_next_round() {
    for code in UNDECIDED {
        let server = server(bound_account());
        server.mutate(|s| s.faults.script = [Some(code)].into());
        let mut writer = Writer::new(limits(), RECHECK);
        let claims = prepared(&[("a", 901)]);
        server.with_client_no_retries(async |kube| {
            let first = writer.round(&kube, &claims, 0).await;
            assert_eq!(
                (first.requests, first.applied, first.access_changed),
                (1, 0, None),
                "{code}"
            );
            assert_eq!(writer.access(), &State::Unknown, "{code}");
            let next = writer.round(&kube, &claims, 5_000).await;
            assert_eq!((next.requests, next.applied), (2, 1), "{code}");
            assert_eq!(writer.access(), &State::Enabled, "{code}");
        });
        let state = server.state();
        assert_eq!(
            state.claim_status_log.applies,
            ["dry-run ml/a", "ml/a"],
            "{code}"
        );
    }
}

#[test]
fn a_status_dry_run_refused_is_a_verdict_on_the_access_or_on_the_claim() {
    for (code, access) in [(403, "Forbidden"), (401, "Forbidden"), (422, "Unknown")] {
        let server = server(bound_account());
        server.mutate(|s| s.faults.script = [Some(code)].into());
        let mut writer = Writer::new(limits(), RECHECK);
        let claims = prepared(&[("a", 901)]);
        server.with_client_no_retries(async |kube| {
            writer.round(&kube, &claims, 0).await;
            let got = match writer.access() {
                State::Unknown => "Unknown",
                State::Enabled => "Enabled",
                State::Forbidden(_) => "Forbidden",
                State::FieldDropped => "FieldDropped",
            };
            assert_eq!(got, access, "{code}");
            // Forbidden: nothing until the recheck. 422: that claim is
            // done, never sent again under its uid.
            let later = writer.round(&kube, &claims, 5_000).await;
            assert_eq!(later.requests, 0, "{code}");
        });
        assert!(server.state().claim_status_log.applies.is_empty(), "{code}");
    }
}
