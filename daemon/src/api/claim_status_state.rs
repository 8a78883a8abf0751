//! SetClaimStatusState and the `claim_status` of GetStatus: what the DRA
//! plugin last said about writing claim status (written, off and why, not
//! checked yet). gpusliced only shows it: it acts on nothing, keeps it in
//! memory only (a restart forgets it; the plugin says it again each round)
//! and holds one value, the last said.

use std::sync::{Mutex, PoisonError};

use gpuslice_proto::gpuslice::v1 as pb;
use tonic::Status;

/// The longest reason taken: a refusal carries the API server's message,
/// the identity and what to do.
pub const MAX_REASON: usize = 1024;

/// What the plugin said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Said {
    /// Not checked yet.
    Unknown,
    /// Written and kept.
    Written,
    /// Not written; why.
    Off(String),
}

/// The last thing said; none before the first.
#[derive(Debug, Default)]
pub struct Board(Mutex<Option<Said>>);

impl Board {
    /// Keeps `said` in place of what was said before.
    pub fn set(&self, said: Said) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(said);
    }

    /// The last thing said, as the API reports it; None before the first.
    pub fn state(&self) -> Option<pb::ClaimStatusState> {
        let said = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        said.as_ref().map(state)
    }
}

/// The request as the board takes it; INVALID_ARGUMENT for no access, an
/// OFF without a reason, or an overlong or multi-line reason.
pub fn said(request: pb::ClaimStatusState) -> Result<Said, Status> {
    let access = pb::ClaimStatusAccess::try_from(request.access);
    let reason = request.reason.trim();
    match access {
        Ok(pb::ClaimStatusAccess::Unknown) => Ok(Said::Unknown),
        Ok(pb::ClaimStatusAccess::Written) => Ok(Said::Written),
        Ok(pb::ClaimStatusAccess::Off) if reason.is_empty() => Err(Status::invalid_argument(
            "reason: say why claim status is off (CLAIM_STATUS_ACCESS_OFF needs a reason)",
        )),
        Ok(pb::ClaimStatusAccess::Off) if reason.len() > MAX_REASON => {
            Err(Status::invalid_argument(format!(
                "reason: {} bytes; at most {MAX_REASON}, please",
                reason.len()
            )))
        }
        Ok(pb::ClaimStatusAccess::Off) if reason.contains(['\n', '\r']) => Err(
            Status::invalid_argument("reason: one line, please (it has a line break)"),
        ),
        Ok(pb::ClaimStatusAccess::Off) => Ok(Said::Off(reason.to_owned())),
        Ok(pb::ClaimStatusAccess::Unspecified) | Err(_) => Err(Status::invalid_argument(format!(
            "access: {} is none of CLAIM_STATUS_ACCESS_UNKNOWN, CLAIM_STATUS_ACCESS_WRITTEN \
                 and CLAIM_STATUS_ACCESS_OFF",
            request.access
        ))),
    }
}

/// `said` as the API reports it.
pub fn state(said: &Said) -> pb::ClaimStatusState {
    let (access, reason) = match said {
        Said::Unknown => (pb::ClaimStatusAccess::Unknown, String::new()),
        Said::Written => (pb::ClaimStatusAccess::Written, String::new()),
        Said::Off(reason) => (pb::ClaimStatusAccess::Off, reason.clone()),
    };
    pb::ClaimStatusState {
        access: access.into(),
        reason,
    }
}

#[cfg(test)]
mod tests;
