//! `k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin`: the core as is (the core speaks
//! v1 messages).

use std::sync::Arc;

use tonic::{Request, Response, Status};

use super::DraCore;
use crate::proto::dra_v1 as api;
use crate::proto::dra_v1::dra_plugin_server::{DraPlugin, DraPluginServer};

/// The v1 service.
#[derive(Debug, Clone)]
pub struct V1Service(Arc<DraCore>);

impl V1Service {
    /// A tonic server for the core.
    pub fn server(core: Arc<DraCore>) -> DraPluginServer<Self> {
        DraPluginServer::new(Self(core))
    }
}

#[tonic::async_trait]
impl DraPlugin for V1Service {
    async fn node_prepare_resources(
        &self,
        request: Request<api::NodePrepareResourcesRequest>,
    ) -> Result<Response<api::NodePrepareResourcesResponse>, Status> {
        Ok(Response::new(
            self.0.prepare(request.into_inner().claims).await,
        ))
    }

    async fn node_unprepare_resources(
        &self,
        request: Request<api::NodeUnprepareResourcesRequest>,
    ) -> Result<Response<api::NodeUnprepareResourcesResponse>, Status> {
        Ok(Response::new(
            self.0.unprepare(request.into_inner().claims).await,
        ))
    }
}
