//! What one sample gives the usage history ([`crate::advice::history`]):
//! per prepared claim and device, the memory its processes use (`None`
//! when processes run there and none reported a figure; 0 when none runs),
//! their SM percent where the driver samples it, and whether the claim was
//! active there. A device on a GPU the sample could not read is left out, so
//! the gap is not counted as observed time. Pure.

use std::collections::BTreeSet;

use super::snapshot::{ClaimActivity, DeviceActivity};
use crate::advice::{ClaimFigures, DeviceFigures};

/// The figures of `claims`, leaving out devices of the `unread` GPUs.
pub fn figures(claims: &[ClaimActivity], unread: &BTreeSet<String>) -> Vec<ClaimFigures> {
    claims
        .iter()
        .map(|c| ClaimFigures {
            uid: c.uid.clone(),
            namespace: c.namespace.clone(),
            name: c.name.clone(),
            devices: c
                .devices
                .iter()
                .filter(|d| !unread.contains(&d.gpu))
                .map(device)
                .collect(),
        })
        .collect()
}

fn device(d: &DeviceActivity) -> DeviceFigures {
    let reported = d.processes.iter().any(|p| p.memory_used.is_some());
    DeviceFigures {
        device: d.device.clone(),
        memory_used: (d.processes.is_empty() || reported).then_some(d.memory_used),
        sm_percent: d.sm_percent,
        // As the attribution judges a claim active (see `attribute`).
        active: d
            .processes
            .iter()
            .any(|p| p.sm_percent.is_none_or(|sm| sm > 0)),
    }
}

#[cfg(test)]
mod tests;
