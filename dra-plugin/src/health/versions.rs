//! The two versions of `DRAResourceHealth` the kubelet speaks, each a
//! module made by one macro (their messages differ only in their package):
//! [`v1`] for Kubernetes 1.36+ kubelets and [`v1alpha1`] for 1.34 and 1.35
//! (1.34's kubelet ignores the timeout and message fields). Each holds the
//! tonic service over the version-neutral core and the report as that
//! version's message.

/// A module `$module` serving the core's reports as `$proto`'s messages.
macro_rules! health_version {
    ($(#[$doc:meta])* $module:ident, $proto:ident, $service:ident) => {
        $(#[$doc])*
        pub mod $module {
            use tokio_stream::wrappers::ReceiverStream;
            use tonic::{Request, Response, Status};

            use crate::health::{Health, HealthCore, Report};
            use crate::proto::$proto as api;
            use crate::proto::$proto::dra_resource_health_server::{
                DraResourceHealth, DraResourceHealthServer,
            };

            /// The service of this version.
            #[derive(Debug, Clone)]
            pub struct $service(HealthCore);

            impl $service {
                /// A tonic server for the core.
                pub fn server(core: HealthCore) -> DraResourceHealthServer<Self> {
                    DraResourceHealthServer::new(Self(core))
                }
            }

            /// The report as this version's message.
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
            impl DraResourceHealth for $service {
                type NodeWatchResourcesStream =
                    ReceiverStream<Result<api::NodeWatchResourcesResponse, Status>>;

                async fn node_watch_resources(
                    &self,
                    _request: Request<api::NodeWatchResourcesRequest>,
                ) -> Result<Response<Self::NodeWatchResourcesStream>, Status> {
                    Ok(Response::new(self.0.watch(message)))
                }
            }
        }
    };
}

health_version!(
    /// `v1.DRAResourceHealth` (Kubernetes 1.36+ kubelets).
    v1,
    health_v1,
    V1HealthService
);
health_version!(
    /// `v1alpha1.DRAResourceHealth` (Kubernetes 1.34 and 1.35 kubelets;
    /// 1.34's ignores the timeout and message fields).
    v1alpha1,
    health_v1alpha1,
    V1alpha1HealthService
);
