//! `k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin`: converts to and from the
//! v1 messages the core speaks (identical but for v1's `share_id`, which
//! v1beta1 cannot carry and gpuslice does not set).

use std::sync::Arc;

use tonic::{Request, Response, Status};

use super::DraCore;
use crate::proto::dra_v1 as v1;
use crate::proto::dra_v1beta1 as api;
use crate::proto::dra_v1beta1::dra_plugin_server::{DraPlugin, DraPluginServer};

/// The v1beta1 service.
#[derive(Debug, Clone)]
pub struct V1beta1Service(Arc<DraCore>);

impl V1beta1Service {
    /// A tonic server for the core.
    pub fn server(core: Arc<DraCore>) -> DraPluginServer<Self> {
        DraPluginServer::new(Self(core))
    }
}

#[tonic::async_trait]
impl DraPlugin for V1beta1Service {
    async fn node_prepare_resources(
        &self,
        request: Request<api::NodePrepareResourcesRequest>,
    ) -> Result<Response<api::NodePrepareResourcesResponse>, Status> {
        let claims = request.into_inner().claims.into_iter().map(claim).collect();
        Ok(Response::new(prepared(self.0.prepare(claims).await)))
    }

    async fn node_unprepare_resources(
        &self,
        request: Request<api::NodeUnprepareResourcesRequest>,
    ) -> Result<Response<api::NodeUnprepareResourcesResponse>, Status> {
        let claims = request.into_inner().claims.into_iter().map(claim).collect();
        Ok(Response::new(unprepared(self.0.unprepare(claims).await)))
    }
}

/// A v1beta1 claim as v1.
pub fn claim(claim: api::Claim) -> v1::Claim {
    v1::Claim {
        namespace: claim.namespace,
        uid: claim.uid,
        name: claim.name,
    }
}

/// A v1 prepare answer as v1beta1.
pub fn prepared(answer: v1::NodePrepareResourcesResponse) -> api::NodePrepareResourcesResponse {
    api::NodePrepareResourcesResponse {
        claims: answer
            .claims
            .into_iter()
            .map(|(uid, entry)| {
                let devices = entry
                    .devices
                    .into_iter()
                    .map(|d| api::Device {
                        request_names: d.request_names,
                        pool_name: d.pool_name,
                        device_name: d.device_name,
                        cdi_device_ids: d.cdi_device_ids,
                    })
                    .collect();
                (
                    uid,
                    api::NodePrepareResourceResponse {
                        devices,
                        error: entry.error,
                    },
                )
            })
            .collect(),
    }
}

/// A v1 unprepare answer as v1beta1.
pub fn unprepared(
    answer: v1::NodeUnprepareResourcesResponse,
) -> api::NodeUnprepareResourcesResponse {
    api::NodeUnprepareResourcesResponse {
        claims: answer
            .claims
            .into_iter()
            .map(|(uid, entry)| {
                (
                    uid,
                    api::NodeUnprepareResourceResponse { error: entry.error },
                )
            })
            .collect(),
    }
}
