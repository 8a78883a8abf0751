//! GetHealth and ClearHealth: the unhealthy devices with the claims on them,
//! whether events are watched, and an operator's clear. What `gpuslicectl
//! health` shows. The unhealthy devices come from one view of the node
//! ([`Engine::view`]).

use gpuslice_proto::gpuslice::v1 as pb;

use crate::claims::{Cleared, Engine};
use crate::health::Monitor;

/// Every unhealthy device, and the watch's state.
pub fn health_response(engine: &Engine) -> pb::GetHealthResponse {
    let health = engine.health();
    let (watching, not_watching_reason, unwatched) = match health.monitor() {
        Monitor::NotStarted => (false, "the watcher has not started".to_owned(), vec![]),
        Monitor::Failed { reason } => (false, reason, vec![]),
        Monitor::Watching { unmonitored } => (true, String::new(), unmonitored),
    };
    pb::GetHealthResponse {
        watching,
        not_watching_reason,
        unwatched: unwatched
            .into_iter()
            .map(|u| pb::UnwatchedGpu {
                index: u.gpu_index,
                reason: u.reason,
            })
            .collect(),
        ignored_xids: health.ignored_xids(),
        unhealthy: engine
            .view()
            .unhealthy_devices()
            .into_iter()
            .map(|u| pb::UnhealthyDevice {
                device: u.device,
                gpu_uuid: u.gpu_uuid,
                reason: u.fault.reason,
                since: u.fault.since,
                claims: u.claims,
            })
            .collect(),
    }
}

/// The reply to a clear.
pub fn clear_response(cleared: Cleared) -> pb::ClearHealthResponse {
    pb::ClearHealthResponse {
        cleared: u32::try_from(cleared.faults).unwrap_or(u32::MAX),
        still_unhealthy: cleared.still.map(|f| f.reason).unwrap_or_default(),
    }
}
