//! The apply of one claim's entries: a server-side apply of the claim's
//! status with field manager `gpuslice-dra-plugin`, forced, whose body
//! holds only what identifies the claim (`metadata.name`, `namespace`,
//! `uid`) and our `status.devices` entries (all devices of the claim; an
//! empty list drops them). `status.devices` is a list-map keyed by driver,
//! pool, device and share id, so the apply owns exactly our entries and
//! leaves other drivers' alone. The uid makes the API server refuse (409)
//! an apply meant for an earlier claim of the same name. Never sends
//! `allocation` or `reservedFor` (those need `resourceclaims/binding`).
//!
//! The same apply as a dry run is the access probe
//! ([`crate::probe::claim_status`]); both read the API server's answer with
//! [`crate::probe::answer`].
//!
//! Needs `patch` on `resourceclaims/status` and, from Kubernetes 1.36,
//! `associated-node:patch` on `resourceclaims/driver` for our driver
//! (packaging/rbac/claim-status.yaml).

use k8s_openapi::api::resource::v1::{AllocatedDeviceStatus, ResourceClaim};
use kube::Api;
use kube::api::{Patch, PatchParams};

use super::entries::entry_key;
use super::plan::Outcome;
use crate::probe::{Finding, Refusal, Verdict, refusal};

/// The field manager of every apply.
pub const FIELD_MANAGER: &str = "gpuslice-dra-plugin";

/// The claim a write is for.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ClaimRef {
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.uid`.
    pub uid: String,
}

/// What the API server answered to an apply it took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// Its answer holds every entry we sent.
    Kept,
    /// Its answer lacks some: it dropped `status.devices`
    /// (DRAResourceClaimDeviceStatus off).
    Dropped,
}

/// An apply that was not taken.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The API server refused it for good ([`crate::probe::answer`]).
    #[error(
        "the API server refused the status of claim {namespace}/{name} ({code}: {message})",
        code = refusal.code,
        message = refusal.message
    )]
    Refused {
        /// The claim's namespace.
        namespace: String,
        /// The claim's name.
        name: String,
        /// The refusal.
        refusal: Refusal,
    },
    /// It may pass (transport, 408, 409 but a uid precondition, 429, 5xx).
    #[error("cannot apply the status of claim {namespace}/{name}")]
    Failed {
        /// The claim's namespace.
        namespace: String,
        /// The claim's name.
        name: String,
        /// kube's error.
        #[source]
        error: kube::Error,
    },
}

impl WriteError {
    /// The planner's view: a refusal of this claim's write (404 gone, 409
    /// replaced, 400 or 422 entries it will never take) is done; 401 and
    /// 403 are the access state's business and, like anything that may
    /// pass, tried again.
    pub fn outcome(&self) -> Outcome {
        match self {
            Self::Refused { refusal, .. } if refusal.verdict != Verdict::Forbidden => Outcome::Done,
            Self::Refused { .. } | Self::Failed { .. } => Outcome::Failed,
        }
    }
}

/// An apply's result as the access state reads it (None: it decided
/// nothing).
pub fn finding(result: &Result<Answer, WriteError>) -> Option<Finding> {
    match result {
        Ok(Answer::Kept) => Some(Finding::Kept),
        Ok(Answer::Dropped) => Some(Finding::Dropped),
        Err(WriteError::Refused { refusal, .. }) => Some(Finding::Refused(refusal.clone())),
        Err(WriteError::Failed { .. }) => None,
    }
}

/// The apply's body: identity and our entries, nothing else.
pub fn body(claim: &ClaimRef, entries: &[AllocatedDeviceStatus]) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "name": claim.name,
            "namespace": claim.namespace,
            "uid": claim.uid,
        },
        "status": { "devices": entries },
    })
}

/// Applies `entries` as the claim's status entries of our driver.
pub async fn apply(
    kube: &kube::Client,
    claim: &ClaimRef,
    entries: &[AllocatedDeviceStatus],
) -> Result<Answer, WriteError> {
    match send(kube, claim, entries, false).await {
        Ok(answer) => Ok(kept(entries, &answer)),
        Err(error) => Err(match refusal(&error) {
            Some(refusal) => WriteError::Refused {
                namespace: claim.namespace.clone(),
                name: claim.name.clone(),
                refusal,
            },
            None => WriteError::Failed {
                namespace: claim.namespace.clone(),
                name: claim.name.clone(),
                error,
            },
        }),
    }
}

/// Sends the apply (`dry_run`: validated, authorised and answered, nothing
/// stored) and hands back the API server's answer as it came.
pub(crate) async fn send(
    kube: &kube::Client,
    claim: &ClaimRef,
    entries: &[AllocatedDeviceStatus],
    dry_run: bool,
) -> Result<ResourceClaim, kube::Error> {
    let api = Api::<ResourceClaim>::namespaced(kube.clone(), &claim.namespace);
    let mut params = PatchParams::apply(FIELD_MANAGER).force();
    params.dry_run = dry_run;
    api.patch_status(&claim.name, &params, &Patch::Apply(body(claim, entries)))
        .await
}

/// Whether the answer holds every entry sent (by driver and key).
pub fn kept(sent: &[AllocatedDeviceStatus], answer: &ResourceClaim) -> Answer {
    let held: Vec<(&str, String)> = answer
        .status
        .iter()
        .flat_map(|s| s.devices.iter().flatten())
        .map(|e| (e.driver.as_str(), entry_key(e)))
        .collect();
    let all = sent
        .iter()
        .all(|e| held.contains(&(e.driver.as_str(), entry_key(e))));
    if all { Answer::Kept } else { Answer::Dropped }
}

#[cfg(test)]
mod tests;
