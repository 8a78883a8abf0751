//! A GPU's membership of an NVLink fabric, as NVML's GPU fabric-info query
//! (`nvmlDeviceGetGpuFabricInfoV`) reports it: the cluster UUID, the clique
//! id within it, the registration state and its outcome. GB200 NVL72 GPUs
//! report a cluster and clique (multi-node NVLink through IMEX); HGX systems
//! with NVSwitch (B200, B300) report a completed registration with a zero
//! cluster UUID; GPUs without an NVLink fabric answer NOT_SUPPORTED, which
//! the boundary carries as no fabric at all. Plain data, no I/O.

/// The registration state (`NVML_GPU_FABRIC_STATE_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[derive(serde::Deserialize, strum::Display)]
#[strum(serialize_all = "kebab-case")]
#[serde(rename_all = "kebab-case")]
pub enum FabricState {
    /// The GPU reports no fabric state (`NOT_SUPPORTED`, 0).
    NotSupported,
    /// Registration with the fabric manager has not started (1).
    NotStarted,
    /// Registration is under way (2).
    InProgress,
    /// Registration finished; `status` says how (3).
    Completed,
}

/// What NVML's fabric-info query answered for one GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuFabric {
    /// The cluster UUID, canonical lowercase; all zeros where the GPU is in
    /// no multi-node cluster (an NVSwitch system).
    pub cluster_uuid: String,
    /// The clique id within the cluster.
    pub clique_id: u32,
    /// The registration state.
    pub state: FabricState,
    /// The registration's error, once `state` is `Completed`; `None` when it
    /// succeeded.
    pub error: Option<String>,
}

/// The cluster UUID of a GPU in no multi-node cluster.
pub const ZERO_CLUSTER_UUID: &str = "00000000-0000-0000-0000-000000000000";

impl GpuFabric {
    /// The GPU's clique as NVIDIA's DRA driver names it,
    /// `<cluster UUID>.<clique id>` (the id in decimal), when the GPU is
    /// attached to a multi-node fabric: registration completed without an
    /// error and a non-zero cluster UUID. `None` otherwise, as NVIDIA's
    /// driver falls back to "no clique".
    pub fn clique(&self) -> Option<String> {
        let attached = self.state == FabricState::Completed
            && self.error.is_none()
            && self.cluster_uuid != ZERO_CLUSTER_UUID;
        attached.then(|| format!("{}.{}", self.cluster_uuid, self.clique_id))
    }
}

#[cfg(test)]
mod tests {
    use super::{FabricState, GpuFabric, ZERO_CLUSTER_UUID};

    const CLUSTER: &str = "5a2c6f1e-8b3d-4c7a-9e0f-1d2b3c4d5e6f";

    fn fabric(uuid: &str, state: FabricState, error: Option<&str>) -> GpuFabric {
        GpuFabric {
            cluster_uuid: uuid.to_owned(),
            clique_id: 7,
            state,
            error: error.map(str::to_owned),
        }
    }

    #[test]
    fn only_a_completed_registration_in_a_cluster_has_a_clique() {
        let attached = fabric(CLUSTER, FabricState::Completed, None);
        assert_eq!(attached.clique().as_deref(), Some(&*format!("{CLUSTER}.7")));
        for (uuid, state, error) in [
            (ZERO_CLUSTER_UUID, FabricState::Completed, None),
            (CLUSTER, FabricState::InProgress, None),
            (CLUSTER, FabricState::NotStarted, None),
            (CLUSTER, FabricState::NotSupported, None),
            (CLUSTER, FabricState::Completed, Some("NVML_ERROR_UNKNOWN")),
        ] {
            assert_eq!(fabric(uuid, state, error).clique(), None, "{uuid} {state}");
        }
    }

    #[test]
    fn states_print_as_the_config_spells_them() {
        assert_eq!(FabricState::InProgress.to_string(), "in-progress");
        let state: FabricState = serde_json::from_str("\"not-started\"").unwrap();
        assert_eq!(state, FabricState::NotStarted);
    }
}
