//! The usage history the advice reads ([`crate::advice::history`]) as a
//! subscriber of the samples ([`HistoryFeed`]), and what one sample gives
//! it ([`figures`], pure): per prepared claim and device, the memory its
//! processes use (`None` when processes run there and none reported a
//! figure; 0 when none runs), their SM percent where the driver samples it,
//! and whether the claim was active there. A device on a GPU the sample
//! could not read is left out, so the gap is not counted as observed time.

use std::collections::BTreeSet;

use super::publish::{Sample, SampleSubscriber};
use super::snapshot::{ClaimActivity, DeviceActivity};
use crate::advice::keeper::HistoryKeeper;
use crate::advice::{ClaimFigures, DeviceFigures};

/// Feeds each sample to the usage history, and saves it when sampling
/// stops.
#[derive(Debug)]
pub struct HistoryFeed(HistoryKeeper);

impl HistoryFeed {
    /// Feeds `history`.
    pub fn new(history: HistoryKeeper) -> Self {
        Self(history)
    }
}

impl SampleSubscriber for HistoryFeed {
    fn on_sample(&mut self, sample: &Sample<'_>) {
        let claims = figures(&sample.attribution.claims, sample.unread);
        self.0.record(sample.now, &claims);
    }

    fn flush(&mut self, now: i64) {
        self.0.flush(now);
    }
}

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
