//! The read-only questions a test asks gpusliced over its API, as methods
//! of the client: `daemon.client().await.inventory().await`. Each waits
//! for the answer, and fails the test if the daemon refuses it.

use gpuslice_proto::gpuslice::v1 as pb;

use crate::harness::Client;

/// GetInventory, GetStatus and the other questions that change nothing.
/// Each clones the client (cheap: one channel), so a shared `&Client`
/// will do.
pub trait Queries {
    /// GetInventory: every device, its holders and the generation.
    async fn inventory(&self) -> pb::GetInventoryResponse;
    /// GetStatus: the node's summary and its problems.
    async fn status(&self) -> pb::GetStatusResponse;
    /// GetMigLayout: every MIG-capable GPU's instances.
    async fn mig_layout(&self) -> pb::GetMigLayoutResponse;
    /// GetHealth: the unhealthy devices and the claims they hurt.
    async fn health(&self) -> pb::GetHealthResponse;
    /// GetActivity: the latest periodic sample, or with `fresh` one taken
    /// now.
    async fn activity(&self, fresh: bool) -> pb::GetActivityResponse;
}

impl Queries for Client {
    async fn inventory(&self) -> pb::GetInventoryResponse {
        let reply = self.clone().get_inventory(pb::GetInventoryRequest {}).await;
        reply.expect("GetInventory").into_inner()
    }

    async fn status(&self) -> pb::GetStatusResponse {
        let reply = self.clone().get_status(pb::GetStatusRequest {}).await;
        reply.expect("GetStatus").into_inner()
    }

    async fn mig_layout(&self) -> pb::GetMigLayoutResponse {
        let reply = self
            .clone()
            .get_mig_layout(pb::GetMigLayoutRequest {})
            .await;
        reply.expect("GetMigLayout").into_inner()
    }

    async fn health(&self) -> pb::GetHealthResponse {
        let reply = self.clone().get_health(pb::GetHealthRequest {}).await;
        reply.expect("GetHealth").into_inner()
    }

    async fn activity(&self, fresh: bool) -> pb::GetActivityResponse {
        let reply = self
            .clone()
            .get_activity(pb::GetActivityRequest { fresh })
            .await;
        reply.expect("GetActivity").into_inner()
    }
}
