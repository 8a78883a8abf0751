//! The claim verbs a test expects to succeed, as methods of the client:
//! `client.prepare_whole(A, &["gpu-0"]).await`. A refusal fails the test
//! naming the claim and the status; a test that expects a refusal calls
//! the API itself and looks at the status.

use gpuslice_proto::gpuslice::v1 as pb;

use crate::harness::{Client, prepare_request, unprepare_request};

/// Prepare and Unprepare that must succeed. Each clones the client
/// (cheap: one channel), so a shared `&Client` will do.
pub trait Claims {
    /// Prepares claim `uid` of the whole `devices` (as
    /// [`prepare_request`] builds it); the answer.
    async fn prepare_whole(&self, uid: &str, devices: &[&str]) -> pb::PrepareResponse;
    /// Unprepares claim `uid` (as [`unprepare_request`] builds it); the
    /// answer.
    async fn unprepare_claim(&self, uid: &str) -> pb::UnprepareResponse;
}

impl Claims for Client {
    async fn prepare_whole(&self, uid: &str, devices: &[&str]) -> pb::PrepareResponse {
        let reply = self.clone().prepare(prepare_request(uid, devices)).await;
        reply
            .unwrap_or_else(|e| panic!("prepare {uid} of {devices:?}: {e}"))
            .into_inner()
    }

    async fn unprepare_claim(&self, uid: &str) -> pb::UnprepareResponse {
        let reply = self.clone().unprepare(unprepare_request(uid)).await;
        reply
            .unwrap_or_else(|e| panic!("unprepare {uid}: {e}"))
            .into_inner()
    }
}
