//! The episode conditions of one attribution, pure: each shared device over
//! its share and each unclaimed process, with the line logged when its
//! episode begins, which says what is wrong and what to do.

use gpuslice_quantity::show::size;

use super::attribute::Attribution;
use super::episodes::{Condition, Counter};
use super::snapshot::{ClaimActivity, UnclaimedProcess, WarningKind};

/// Every condition `attribution` shows.
pub fn conditions(attribution: &Attribution) -> Vec<Condition> {
    let mut conditions: Vec<Condition> = attribution
        .overshares
        .iter()
        .filter_map(|o| overshare(attribution.claims.get(o.claim)?, o.device))
        .collect();
    conditions.extend(attribution.unclaimed.iter().map(unclaimed));
    conditions
}

fn overshare(claim: &ClaimActivity, device: usize) -> Option<Condition> {
    let d = claim.devices.get(device)?;
    let share = d.memory_share?;
    Some(Condition {
        kind: WarningKind::OverShare,
        counter: Counter::OverShare(d.sharing),
        claim_uid: claim.uid.clone(),
        scope: d.device.clone(),
        device: d.device.clone(),
        gpu: d.gpu.clone(),
        pid: 0,
        message: format!(
            "claim {}/{} ({}) uses {} of GPU memory on {}, over its {} share of {}; the \
             claims sharing this GPU may run out of memory: lower the workload's memory use \
             or give the claim a larger share (MPS memory limit, or a GPU of its own)",
            claim.namespace,
            claim.name,
            claim.uid,
            size(d.memory_used),
            d.device,
            d.sharing,
            size(share),
        ),
    })
}

fn unclaimed(u: &UnclaimedProcess) -> Condition {
    let name = match u.process.name.as_str() {
        "" => String::new(),
        name => format!(" ({name})"),
    };
    let memory = u
        .process
        .memory_used
        .map_or_else(String::new, |m| format!(", using {},", size(m)));
    Condition {
        kind: WarningKind::Unclaimed,
        counter: Counter::Unclaimed,
        claim_uid: String::new(),
        scope: u.gpu.clone(),
        device: u.device.clone(),
        gpu: u.gpu.clone(),
        pid: u.process.pid,
        message: format!(
            "process {}{name} on {}{memory} belongs to no gpuslice claim ({}); it bypasses \
             the scheduler: run it through a ResourceClaim, or stop it",
            u.process.pid, u.device, u.reason
        ),
    }
}

#[cfg(test)]
mod tests;
