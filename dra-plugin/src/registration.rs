//! The kubelet plugin-registration service on `<registry_dir>/<driver>-reg.sock`.
//!
//! GetInfo tells the kubelet who we are (type "DRAPlugin", the driver name,
//! the absolute DRA socket, versions in preference order: v1 first); the
//! kubelet answers with NotifyRegistrationStatus, which this service logs and
//! publishes on a watch channel so `run` can exit non-zero on a refusal.

use std::path::Path;

use tokio::sync::watch;
use tonic::{Request, Response, Status};
use tracing::{error, info};

use crate::proto::registration::registration_server::{Registration, RegistrationServer};
use crate::proto::registration::{
    InfoRequest, PluginInfo, RegistrationStatus, RegistrationStatusResponse,
};

/// The plugin type the kubelet's DRA handler expects.
pub const PLUGIN_TYPE: &str = "DRAPlugin";
/// The DRA services we serve, in preference order (the kubelet takes the first
/// it supports).
pub const SUPPORTED_VERSIONS: [&str; 2] = ["v1.DRAPlugin", "v1beta1.DRAPlugin"];

/// What the kubelet said about our registration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegistrationState {
    /// No answer yet.
    Waiting,
    /// The kubelet registered the plugin.
    Registered,
    /// The kubelet refused it, with its reason.
    Refused(String),
}

/// The Registration service.
#[derive(Debug)]
pub struct RegistrationService {
    info: PluginInfo,
    state: watch::Sender<RegistrationState>,
}

impl RegistrationService {
    /// A server for `driver` whose DRA socket is `endpoint` (absolute), and
    /// the receiver of the kubelet's verdicts.
    pub fn server(
        driver: &str,
        endpoint: &Path,
    ) -> (RegistrationServer<Self>, watch::Receiver<RegistrationState>) {
        let (state, verdicts) = watch::channel(RegistrationState::Waiting);
        let service = Self {
            info: plugin_info(driver, endpoint),
            state,
        };
        (RegistrationServer::new(service), verdicts)
    }
}

/// What GetInfo answers.
pub fn plugin_info(driver: &str, endpoint: &Path) -> PluginInfo {
    PluginInfo {
        r#type: PLUGIN_TYPE.to_owned(),
        name: driver.to_owned(),
        endpoint: endpoint.to_string_lossy().into_owned(),
        supported_versions: SUPPORTED_VERSIONS.iter().map(|v| (*v).to_owned()).collect(),
    }
}

#[tonic::async_trait]
impl Registration for RegistrationService {
    async fn get_info(
        &self,
        _request: Request<InfoRequest>,
    ) -> Result<Response<PluginInfo>, Status> {
        Ok(Response::new(self.info.clone()))
    }

    async fn notify_registration_status(
        &self,
        request: Request<RegistrationStatus>,
    ) -> Result<Response<RegistrationStatusResponse>, Status> {
        let status = request.into_inner();
        let state = if status.plugin_registered {
            info!(driver = %self.info.name, "the kubelet registered the plugin");
            RegistrationState::Registered
        } else {
            error!(driver = %self.info.name, reason = %status.error, "the kubelet refused the plugin");
            RegistrationState::Refused(status.error)
        };
        self.state.send_replace(state);
        Ok(Response::new(RegistrationStatusResponse {}))
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::plugin_info;

    #[test]
    fn get_info_names_the_driver_socket_and_versions_v1_first() {
        let info = plugin_info(
            "gpu.nvidia.com",
            Path::new("/var/lib/kubelet/plugins/gpu.nvidia.com/dra.sock"),
        );
        assert_eq!(info.r#type, "DRAPlugin");
        assert_eq!(info.name, "gpu.nvidia.com");
        assert_eq!(
            info.endpoint,
            "/var/lib/kubelet/plugins/gpu.nvidia.com/dra.sock"
        );
        assert_eq!(
            info.supported_versions,
            ["v1.DRAPlugin", "v1beta1.DRAPlugin"]
        );
    }
}
