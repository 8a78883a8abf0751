//! Tells gpusliced whether claim status is written (`SetClaimStatusState`),
//! so `gpuslicectl status` shows it: the writer's access state after each
//! round, or, with `[claim_status] mode = "off"`, that it is off, each time
//! gpusliced's inventory watch delivers (its first message on every
//! connection: gpusliced keeps the state in memory only, so a restarted one
//! hears it again). Cheap and idempotent; an error is logged at debug and
//! never stops the writer.

use gpuslice_proto::gpuslice::v1 as pb;
use tokio::sync::watch;
use tracing::debug;

use super::access::{FIELD_DROPPED, State};
use crate::gpusliced::GpuSlice;

/// The reason given with `[claim_status] mode = "off"`.
pub const MODE_OFF: &str = "[claim_status] mode = \"off\"";

/// The longest reason gpusliced takes (bytes).
pub const MAX_REASON: usize = 1024;

/// The access state as gpusliced takes it: Enabled → WRITTEN; Forbidden
/// and FieldDropped → OFF with why; Unknown → UNKNOWN (not checked yet).
pub fn state_of(access: &State) -> pb::ClaimStatusState {
    match access {
        State::Unknown => said(pb::ClaimStatusAccess::Unknown, ""),
        State::Enabled => said(pb::ClaimStatusAccess::Written, ""),
        State::Forbidden(reason) => said(pb::ClaimStatusAccess::Off, reason),
        State::FieldDropped => said(pb::ClaimStatusAccess::Off, FIELD_DROPPED),
    }
}

/// Off, with `[claim_status] mode = "off"` as the reason.
pub fn mode_off() -> pb::ClaimStatusState {
    said(pb::ClaimStatusAccess::Off, MODE_OFF)
}

/// `access` with `reason` made one line of at most [`MAX_REASON`] bytes.
fn said(access: pb::ClaimStatusAccess, reason: &str) -> pb::ClaimStatusState {
    let mut line = reason.replace(['\n', '\r'], " ");
    if line.len() > MAX_REASON {
        let cut = (0..=MAX_REASON - 3)
            .rev()
            .find(|&i| line.is_char_boundary(i))
            .unwrap_or(0);
        line.truncate(cut);
        line.push_str("...");
    }
    pb::ClaimStatusState {
        access: access.into(),
        reason: line,
    }
}

/// Sends `state`; a failure is logged at debug and otherwise ignored.
pub async fn tell(gpusliced: &mut GpuSlice, state: pb::ClaimStatusState) {
    if let Err(status) = gpusliced.set_claim_status_state(state).await {
        debug!(code = ?status.code(), error = %status.message(),
               "cannot tell gpusliced the claim status state");
    }
}

/// With `[claim_status] mode = "off"`: tells gpusliced so on each message
/// of its inventory watch (`inventory`), until `shutdown` turns true.
pub async fn mode_off_until_shutdown(
    mut gpusliced: GpuSlice,
    mut inventory: watch::Receiver<u64>,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            _ = shutdown.wait_for(|stop| *stop) => return,
            changed = inventory.changed() => if changed.is_err() { return },
        }
        tell(&mut gpusliced, mode_off()).await;
    }
}

#[cfg(test)]
mod tests;
