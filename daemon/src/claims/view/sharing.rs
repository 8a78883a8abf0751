//! What an operator sees of sharing (GetSharing): per GPU, its mode,
//! interval, the MPS daemons covering it, the claims and the memory
//! promised. Read-only; the problems of a claim's daemons and GPUs are its
//! kinds' (`claim_health.rs`).

use std::collections::BTreeMap;

use crate::claims::access::mps::view::DaemonView;
use crate::claims::access::shared_gpu::TimeSliceOutcome;
use crate::claims::{Engine, lock};
use crate::gpu::ComputeMode;
use crate::opaque::TimeSliceInterval;
use crate::state::AccessKind;

/// How one whole GPU is shared now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuSharingView {
    /// Inventory name.
    pub device: String,
    /// GPU UUID.
    pub uuid: String,
    /// How it is shared: MPS or time-slicing; `None`: not shared.
    pub mode: Option<AccessKind>,
    /// The compute mode, when it could be read.
    pub compute_mode: Option<ComputeMode>,
    /// The time-slice asked for, when time-sliced.
    pub interval: Option<TimeSliceInterval>,
    /// "applied", or "not supported: …" (a warning).
    pub interval_state: String,
    /// The MPS daemons covering the GPU or its MIG slices.
    pub daemons: Vec<DaemonView>,
    /// The claims sharing it (or running MPS on its slices).
    pub claims: Vec<String>,
    /// Its memory.
    pub memory_total: u64,
    /// Memory promised to claims through memory shares.
    pub memory_promised: u64,
    /// Why it is degraded, if it is.
    pub problems: Vec<String>,
}

impl Engine {
    /// Every whole GPU's sharing, in inventory order.
    pub(crate) fn sharing_view(&self) -> Vec<GpuSharingView> {
        let inventory = self.inventory();
        let daemons = self.kinds.mps.daemon_views(&self.cx());
        // MIG UUID → parent GPU UUID, from the claims that hold the slices.
        let parent_of: BTreeMap<String, String> = self
            .claims()
            .iter()
            .flat_map(|r| &r.devices)
            .filter_map(|d| Some((d.mig.as_ref()?.mig_uuid.clone()?, d.uuid.clone())))
            .collect();
        let state = lock(&self.kinds.shared.books);
        inventory
            .gpus
            .iter()
            .map(|gpu| {
                let uuid = &gpu.info.uuid;
                let covers = |u: &String| u == uuid || parent_of.get(u) == Some(uuid);
                let on_gpu: Vec<DaemonView> = daemons
                    .iter()
                    .filter(|d| d.uuids.iter().any(covers))
                    .cloned()
                    .collect();
                let interval = state.policy.interval(uuid);
                let mut claims = state.policy.claims(uuid);
                for d in &on_gpu {
                    claims.extend(d.claims.iter().cloned());
                }
                claims.sort();
                claims.dedup();
                let mode = match (interval, on_gpu.is_empty()) {
                    (Some(_), _) => Some(AccessKind::TimeSlicing),
                    (None, false) => Some(AccessKind::Mps),
                    (None, true) => None,
                };
                GpuSharingView {
                    device: gpu.name.clone(),
                    uuid: uuid.clone(),
                    mode,
                    compute_mode: self.env.backend.compute_mode(gpu.info.index).ok(),
                    interval,
                    interval_state: interval_words(state.timeslice.get(uuid)),
                    daemons: on_gpu,
                    claims,
                    memory_total: gpu.info.memory_bytes,
                    memory_promised: state.promised_on(uuid),
                    problems: state.degraded.get(uuid).cloned().into_iter().collect(),
                }
            })
            .collect()
    }
}

fn interval_words(outcome: Option<&TimeSliceOutcome>) -> String {
    match outcome {
        None => String::new(),
        Some(TimeSliceOutcome::Applied(_)) => "applied".to_owned(),
        Some(TimeSliceOutcome::NotSupported { message, .. }) => {
            format!("not supported: {message}")
        }
    }
}
