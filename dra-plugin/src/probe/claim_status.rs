//! The claim-status question: may we write a claim's status entries, and
//! does the API server keep them? Asked with the very apply the writer
//! sends ([`crate::claim_status::write`]: its body, field manager and
//! force) as a dry run. Answered with our entries: [`Finding::Kept`];
//! without them: [`Finding::Dropped`] (DRAResourceClaimDeviceStatus off
//! clears `status.devices` silently); refused: the refusal, of which the
//! access state ([`crate::claim_status::access`]) takes only a
//! [`super::Verdict::Forbidden`] (the others concern that claim); anything
//! else decides nothing and is retried at the writer's next round.

use k8s_openapi::api::resource::v1::AllocatedDeviceStatus;

use super::Finding;
use crate::claim_status::write::{self, Answer, ClaimRef};

/// The dry-run apply of `entries` as `claim`'s status entries, and what it
/// found; the error when it decides nothing.
pub async fn claim_status(
    kube: &kube::Client,
    claim: &ClaimRef,
    entries: &[AllocatedDeviceStatus],
) -> Result<Finding, kube::Error> {
    let answer = write::send(kube, claim, entries, true).await;
    Finding::of(answer, |answer| {
        write::kept(entries, answer) == Answer::Kept
    })
}
