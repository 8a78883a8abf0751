//! The access rule over every kind of finding, logged once per change,
//! and re-checked after `recheck_s`.

use super::{Access, NODE_IDENTITY_HINT, State, describe};
use crate::probe::answer::verdict;
use crate::probe::{Finding, Refusal, Verdict};

const RECHECK: u64 = 3_600_000;

const FORBIDDEN: &str = "resourceclaims.resource.k8s.io \"c\" is forbidden: User \"system:serviceaccount:gpuslice-system:gpuslice-dra-plugin\" cannot patch resource \"resourceclaims/status\"";

/// A refusal as the API answer's reading makes it.
fn refused(code: u16) -> Finding {
    Finding::Refused(Refusal {
        verdict: verdict(code, FORBIDDEN).unwrap_or(Verdict::Gone),
        code,
        message: FORBIDDEN.to_owned(),
    })
}

#[test]
fn a_node_identity_is_told_to_set_the_claim_status_kubeconfig() {
    let mut access = Access::new(RECHECK);
    let state = access
        .observe(&refused(403), Some("system:node:node-1"), 0)
        .cloned();
    let Some(State::Forbidden(reason)) = state else {
        panic!("{state:?}");
    };
    assert!(reason.contains("system:node:node-1"), "{reason}");
    assert!(reason.contains(NODE_IDENTITY_HINT), "{reason}");
    assert!(NODE_IDENTITY_HINT.contains("[claim_status] kubeconfig"));
    // Without a review, the user comes from the server's message.
    let reason = super::forbidden_reason(
        "resourceclaims.resource.k8s.io \"c\" is forbidden: User \"system:node:n\" cannot patch",
        None,
    );
    assert!(reason.contains(NODE_IDENTITY_HINT), "{reason}");
}

#[test]
fn a_service_account_without_the_role_is_pointed_at_the_rbac() {
    let mut access = Access::new(RECHECK);
    let state = access.observe(&refused(403), None, 0).cloned();
    let Some(State::Forbidden(reason)) = state else {
        panic!("{state:?}");
    };
    assert!(
        reason.contains("system:serviceaccount:gpuslice-system:gpuslice-dra-plugin"),
        "{reason}"
    );
    assert!(
        reason.contains("packaging/rbac/claim-status.yaml"),
        "{reason}"
    );
    assert!(!reason.contains("[claim_status] kubeconfig"), "{reason}");
    assert!(!describe(access.state()).contains('\n'));
}

#[test]
fn each_finding_moves_the_state_as_documented() {
    for (finding, want) in [
        (Finding::Kept, Some("Enabled")),
        (Finding::Dropped, Some("FieldDropped")),
        (refused(403), Some("Forbidden")),
        (refused(401), Some("Forbidden")),
        // A claim-level refusal (gone, replaced, not allocated here) says
        // nothing about access. (An answer that decides nothing is no
        // finding: never observed.)
        (refused(404), None),
        (refused(409), None),
        (refused(422), None),
        (refused(400), None),
    ] {
        let mut access = Access::new(RECHECK);
        let got = access.observe(&finding, None, 5).map(|s| match s {
            State::Unknown => "Unknown",
            State::Enabled => "Enabled",
            State::Forbidden(_) => "Forbidden",
            State::FieldDropped => "FieldDropped",
        });
        assert_eq!(got, want, "{finding:?}");
        assert_eq!(access.needs_probe(5), want.is_none(), "{finding:?}");
    }
    assert_eq!(
        describe(&State::FieldDropped),
        "claim status: off: the API server drops ResourceClaim status.devices \
         (DRAResourceClaimDeviceStatus off)"
    );
    assert_eq!(describe(&State::Enabled), "claim status: written");
}

#[test]
fn a_state_is_reported_once_and_rechecked_after_recheck_s() {
    let mut access = Access::new(RECHECK);
    assert!(access.needs_probe(0));
    assert_eq!(
        access.observe(&Finding::Dropped, None, 0),
        Some(&State::FieldDropped)
    );
    assert!(!access.needs_probe(RECHECK - 1));
    assert!(access.needs_probe(RECHECK));
    // The same finding again: no new line, and the clock restarts.
    assert_eq!(access.observe(&Finding::Dropped, None, RECHECK), None);
    assert!(!access.needs_probe(2 * RECHECK - 1));
    // Gate on again: one line, and no more probes.
    assert_eq!(
        access.observe(&Finding::Kept, None, 2 * RECHECK),
        Some(&State::Enabled)
    );
    assert!(!access.needs_probe(10 * RECHECK));
    assert_eq!(access.observe(&Finding::Kept, None, 10 * RECHECK), None);
    // A real write refused later flips it back.
    assert!(matches!(
        access.observe(&refused(403), None, 11 * RECHECK),
        Some(State::Forbidden(_))
    ));
}
