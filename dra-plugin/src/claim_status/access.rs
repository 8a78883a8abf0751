//! Whether the API server lets us write claim status and keeps it: the
//! access state `Unknown → Enabled | Forbidden(reason) | FieldDropped`,
//! kept across the writer's rounds.
//!
//! Until a verdict, each write is preceded by the dry-run apply of
//! [`crate::probe::claim_status`] (and a re-check every `recheck_s` while
//! Forbidden or FieldDropped): answered with our entries → Enabled;
//! answered without them → FieldDropped (the API server clears
//! `status.devices` with DRAResourceClaimDeviceStatus off, silently);
//! refused as forbidden (401, 403) → Forbidden with the server's message
//! and the identity (a `SelfSubjectReview`; the kubelet's `system:node:*`
//! identity can never write claim status, so the reason names
//! `[claim_status] kubeconfig`). Other refusals concern that claim, not the
//! access (the state stays); what decides nothing (transport errors, 408,
//! 409, 429, 5xx: [`crate::probe::answer`]) is not observed at all. Enabled
//! is kept until a real write answers 401 or 403, or drops our entries,
//! which moves the state as a dry run would. [`Access::observe`] is the
//! pure rule; each change of state is logged once (WARN for Forbidden and
//! FieldDropped, INFO for Enabled).

use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use kube::Api;
use kube::api::PostParams;

use super::plan::Millis;
use crate::probe::answer::first_line;
use crate::probe::{Finding, Verdict};

/// Where the kubelet's identity is told to go instead.
pub const NODE_IDENTITY_HINT: &str = "the kubelet's credentials never may write claim status \
     (Node authorizer); set [claim_status] kubeconfig, see docs/claim-status.md#access";

/// Why nothing is kept when the API server drops what we write.
pub const FIELD_DROPPED: &str =
    "the API server drops ResourceClaim status.devices (DRAResourceClaimDeviceStatus off)";

/// The access state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// Not probed yet.
    Unknown,
    /// Writes are taken and kept.
    Enabled,
    /// Writes are refused; why.
    Forbidden(String),
    /// Writes are taken and `status.devices` dropped.
    FieldDropped,
}

/// The access state and when it last changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    state: State,
    since: Millis,
    recheck: Millis,
}

impl Access {
    /// Not probed yet; a refused or dropped state is probed again after
    /// `recheck` (`[claim_status] recheck_s`).
    pub fn new(recheck: Millis) -> Self {
        Self {
            state: State::Unknown,
            since: 0,
            recheck,
        }
    }

    /// The state.
    pub fn state(&self) -> &State {
        &self.state
    }

    /// Whether the next write must be a dry run first: never probed, or a
    /// refusal or drop old enough to check again.
    pub fn needs_probe(&self, now: Millis) -> bool {
        match self.state {
            State::Unknown => true,
            State::Enabled => false,
            State::Forbidden(_) | State::FieldDropped => {
                now.saturating_sub(self.since) >= self.recheck
            }
        }
    }

    /// Takes a finding of an apply (`identity`: who we are, when a
    /// refusal made us ask); answers the new state when it changed (to log
    /// once), None otherwise. A re-check that finds the same refusal
    /// restarts the recheck clock without a new line.
    pub fn observe(
        &mut self,
        finding: &Finding,
        identity: Option<&str>,
        now: Millis,
    ) -> Option<&State> {
        let next = match finding {
            Finding::Kept => State::Enabled,
            Finding::Dropped => State::FieldDropped,
            Finding::Refused(refusal) if refusal.verdict == Verdict::Forbidden => {
                State::Forbidden(forbidden_reason(&refusal.message, identity))
            }
            Finding::Refused(_) => return None,
        };
        let changed = std::mem::discriminant(&next) != std::mem::discriminant(&self.state);
        self.since = now;
        self.state = next;
        changed.then_some(&self.state)
    }
}

/// The line for a state, as logged and as `gpuslicectl status` shows it
/// once told ([`super::tell`]): `claim status: written | off: <reason> |
/// not checked yet`.
pub fn describe(state: &State) -> String {
    match state {
        State::Unknown => "claim status: not checked yet".to_owned(),
        State::Enabled => "claim status: written".to_owned(),
        State::Forbidden(reason) => format!("claim status: off: {reason}"),
        State::FieldDropped => format!("claim status: off: {FIELD_DROPPED}"),
    }
}

/// Logs a change of state once: INFO when written, WARN when off.
pub fn log(state: &State) {
    match state {
        State::Enabled | State::Unknown => tracing::info!("{}", describe(state)),
        State::Forbidden(_) | State::FieldDropped => tracing::warn!("{}", describe(state)),
    }
}

/// Why the API server refuses, for a person: its message, who we are, and
/// what to do when we are the kubelet.
pub fn forbidden_reason(message: &str, identity: Option<&str>) -> String {
    let first = first_line(message, 300);
    let user = identity
        .map(str::to_owned)
        .or_else(|| user_in_message(message));
    match user {
        Some(user) if user.starts_with("system:node:") => {
            format!("the API server refused the write as {user} ({first}); {NODE_IDENTITY_HINT}")
        }
        Some(user) => format!(
            "the API server refused the write as {user} ({first}); grant it \
             packaging/rbac/claim-status.yaml's role, see docs/claim-status.md#access"
        ),
        None => {
            format!("the API server refused the write ({first}); see docs/claim-status.md#access")
        }
    }
}

/// The user a Kubernetes "forbidden" message names (`User "…" cannot …`).
fn user_in_message(message: &str) -> Option<String> {
    let rest = message.split_once("User \"")?.1;
    Some(rest.split_once('"')?.0.to_owned())
}

/// Who the API server takes us for (`SelfSubjectReview`); None when it
/// cannot say (older servers, or refused).
pub async fn identity(kube: &kube::Client) -> Option<String> {
    let api = Api::<SelfSubjectReview>::all(kube.clone());
    let review = api
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await
        .ok()?;
    review.status?.user_info?.username
}

#[cfg(test)]
mod tests;
