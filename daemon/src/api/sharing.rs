//! GetSharing: per whole GPU, its sharing mode, time-slice, MPS daemons,
//! claims and memory promised: what `gpuslicectl sharing` shows.

use gpuslice_proto::gpuslice::v1 as pb;

use crate::claims::{DaemonView, Engine, GpuSharingView};

/// The sharing of every whole GPU.
pub fn sharing_response(engine: &Engine) -> pb::GetSharingResponse {
    pb::GetSharingResponse {
        gpus: engine.sharing_view().into_iter().map(gpu).collect(),
    }
}

fn bytes(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn gpu(view: GpuSharingView) -> pb::GpuSharing {
    pb::GpuSharing {
        device: view.device,
        uuid: view.uuid,
        mode: view
            .mode
            .map_or_else(|| "none".to_owned(), |kind| kind.to_string()),
        compute_mode: view
            .compute_mode
            .map(|mode| mode.to_string())
            .unwrap_or_default()
            .to_owned(),
        interval: view.interval.map(|i| i.to_string()).unwrap_or_default(),
        interval_state: view.interval_state,
        mps_daemons: view.daemons.into_iter().map(daemon).collect(),
        claims: view.claims,
        memory_total: bytes(view.memory_total),
        memory_promised: bytes(view.memory_promised),
        problems: view.problems,
    }
}

fn daemon(view: DaemonView) -> pb::MpsDaemon {
    pb::MpsDaemon {
        uuids: view.uuids,
        pid: view.pid.unwrap_or(0),
        supervisor: view.supervisor.to_owned(),
        unit: view.unit.unwrap_or_default(),
        state: view.state.to_string(),
        restarts: view.restarts,
        pipe_dir: view.pipe_dir,
        claims: view.claims,
        active_thread_percentage: view.limits.active_thread_percentage.map_or(0, u32::from),
        pinned_memory_limits: view
            .limits
            .pinned_memory_limits
            .into_iter()
            .map(|(uuid, b)| (uuid, bytes(b)))
            .collect(),
    }
}
