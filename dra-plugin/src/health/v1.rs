//! `v1.DRAResourceHealth` (Kubernetes 1.36+ kubelets): the core's reports as
//! v1 messages.

use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};

use super::{Health, HealthCore, Report};
use crate::proto::health_v1 as api;
use crate::proto::health_v1::dra_resource_health_server::{
    DraResourceHealth, DraResourceHealthServer,
};

/// The v1 service.
#[derive(Debug, Clone)]
pub struct V1HealthService(HealthCore);

impl V1HealthService {
    /// A tonic server for the core.
    pub fn server(core: HealthCore) -> DraResourceHealthServer<Self> {
        DraResourceHealthServer::new(Self(core))
    }
}

/// The report as a v1 message.
pub fn message(report: &Report) -> api::NodeWatchResourcesResponse {
    let devices = report
        .devices
        .iter()
        .map(|d| api::DeviceHealth {
            device: Some(api::DeviceIdentifier {
                pool_name: report.pool.clone(),
                device_name: d.device.clone(),
            }),
            health: match d.health {
                Health::Unknown => api::HealthStatus::Unknown,
                Health::Healthy => api::HealthStatus::Healthy,
                Health::Unhealthy => api::HealthStatus::Unhealthy,
            }
            .into(),
            last_updated_time: report.at,
            health_check_timeout_seconds: report.timeout_seconds,
            message: d.message.clone(),
        })
        .collect();
    api::NodeWatchResourcesResponse { devices }
}

#[tonic::async_trait]
impl DraResourceHealth for V1HealthService {
    type NodeWatchResourcesStream = ReceiverStream<Result<api::NodeWatchResourcesResponse, Status>>;

    async fn node_watch_resources(
        &self,
        _request: Request<api::NodeWatchResourcesRequest>,
    ) -> Result<Response<Self::NodeWatchResourcesStream>, Status> {
        Ok(Response::new(self.0.watch(message)))
    }
}
