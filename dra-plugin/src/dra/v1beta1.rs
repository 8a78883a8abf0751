//! `k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin`: converts to and from the
//! v1 messages the core speaks (identical but for v1's `share_id`, which
//! v1beta1 cannot carry; a kubelet that speaks v1beta1 predates
//! DRAConsumableCapacity).

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

#[cfg(test)]
mod tests {
    use super::{claim, prepared, unprepared};
    use crate::proto::dra_v1 as v1;
    use crate::proto::dra_v1beta1 as api;

    #[test]
    fn claims_and_answers_convert_field_for_field() {
        let c = claim(api::Claim {
            namespace: "ml".into(),
            uid: "u-1".into(),
            name: "train".into(),
        });
        assert_eq!(
            (c.namespace.as_str(), c.uid.as_str(), c.name.as_str()),
            ("ml", "u-1", "train")
        );

        let mut answer = v1::NodePrepareResourcesResponse::default();
        answer.claims.insert(
            "u-1".into(),
            v1::NodePrepareResourceResponse {
                devices: vec![v1::Device {
                    request_names: vec!["gpu".into()],
                    pool_name: "node-1".into(),
                    device_name: "gpu-0".into(),
                    cdi_device_ids: vec!["k8s.gpuslice.dev/claim=u-1-gpu-0".into()],
                    share_id: None,
                }],
                error: String::new(),
            },
        );
        answer.claims.insert(
            "u-2".into(),
            v1::NodePrepareResourceResponse {
                devices: vec![],
                error: "held".into(),
            },
        );
        let beta = prepared(answer);
        let device = &beta.claims["u-1"].devices[0];
        assert_eq!(device.request_names, ["gpu"]);
        assert_eq!(device.pool_name, "node-1");
        assert_eq!(device.device_name, "gpu-0");
        assert_eq!(device.cdi_device_ids, ["k8s.gpuslice.dev/claim=u-1-gpu-0"]);
        assert_eq!(beta.claims["u-2"].error, "held");

        let mut gone = v1::NodeUnprepareResourcesResponse::default();
        gone.claims.insert(
            "u-3".into(),
            v1::NodeUnprepareResourceResponse {
                error: "busy".into(),
            },
        );
        assert_eq!(unprepared(gone).claims["u-3"].error, "busy");
    }
}
