//! The one journal line of each action under `[limits]`: what was done to
//! which process of which claim, why, and how it ended, with the structured
//! fields `kind, claim_uid, device, pid, comm, memory_used, share,
//! over_for_s, mode, outcome`. WARN, except `not-permitted` (ERROR: the
//! unit lost `CAP_KILL`) and `failed` (ERROR).

use std::time::Duration;

use gpuslice_quantity::show::size;

use super::decide::Decision;
use super::enforce::Outcome;
use super::process::ControlError;
use crate::activity::WarningKind;

/// The message of the line (without its fields).
pub fn message(
    decision: &Decision,
    outcome: Outcome,
    term_grace: Duration,
    owner: Option<u32>,
    error: Option<&ControlError>,
) -> String {
    let d = decision;
    let verb = match outcome {
        Outcome::Terminated | Outcome::Killed => "ended",
        Outcome::WouldEnd => "would end",
        _ => "did not end",
    };
    let what = match d.kind {
        WarningKind::OverShare => format!(
            "of claim {} ({}): the claim used {} on {} for {} s, over its {} share of {}",
            d.claim,
            d.claim_uid,
            size(d.claim_memory_used),
            d.device,
            d.over_for_s,
            d.sharing.map_or("", <&str>::from),
            d.share.map_or_else(|| "?".to_owned(), size),
        ),
        WarningKind::Unclaimed => format!(
            "on {}: it belongs to no gpuslice claim, for {} s",
            d.device, d.over_for_s
        ),
    };
    let how = match outcome {
        Outcome::Terminated => "SIGTERM".to_owned(),
        Outcome::Killed if term_grace.is_zero() => "SIGKILL".to_owned(),
        Outcome::Killed => format!(
            "SIGKILL, still running {} s after SIGTERM",
            term_grace.as_secs()
        ),
        Outcome::WouldEnd => "dry-run: nothing sent".to_owned(),
        Outcome::Gone => "it had already exited".to_owned(),
        Outcome::PidReused => {
            "its pid names another process now (start time changed): nothing sent".to_owned()
        }
        Outcome::NotPermitted => format!(
            "gpusliced may not signal process {} (uid {}): it needs CAP_KILL; was the unit \
             changed?",
            d.pid,
            owner.map_or_else(|| "?".to_owned(), |u| u.to_string())
        ),
        Outcome::Failed => match error {
            Some(err) => format!("{err}: {}", source_text(err)),
            None => "failed".to_owned(),
        },
    };
    format!(
        "{verb} process {} ({}, {}) {what} (limits: {} = {}, grace {} s); {how}",
        d.pid,
        d.comm,
        size(d.memory_used),
        d.kind,
        d.mode,
        d.grace_s,
    )
}

fn source_text(err: &ControlError) -> String {
    match err {
        ControlError::Os { source, .. } => source.to_string(),
        ControlError::Stat { source, .. } => source.to_string(),
        other => other.to_string(),
    }
}

/// Writes the line.
pub fn log(
    decision: &Decision,
    outcome: Outcome,
    term_grace: Duration,
    owner: Option<u32>,
    error: Option<&ControlError>,
) {
    let d = decision;
    let line = message(d, outcome, term_grace, owner, error);
    let kind: &str = d.kind.into();
    let mode: &str = d.mode.into();
    let outcome: &str = outcome.into();
    let share = d.share.unwrap_or(0);
    macro_rules! line {
        ($level:ident) => {
            tracing::$level!(
                kind,
                claim_uid = %d.claim_uid,
                device = %d.device,
                pid = d.pid,
                comm = %d.comm,
                memory_used = d.memory_used,
                share,
                over_for_s = d.over_for_s,
                mode,
                outcome,
                "{line}"
            )
        };
    }
    match outcome {
        "not-permitted" | "failed" => line!(error),
        _ => line!(warn),
    }
}

#[cfg(test)]
mod tests;
