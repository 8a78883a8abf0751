//! The client of gpusliced's API over its unix socket.
//!
//! The channel connects lazily and reconnects by itself: the shim starts (and
//! registers) even while gpusliced is down; calls made meanwhile fail with
//! UNAVAILABLE, which become per-claim errors the kubelet retries.

use std::path::PathBuf;
use std::time::Duration;

use gpuslice_proto::gpuslice::v1::gpu_slice_client::GpuSliceClient;
use hyper_util::rt::TokioIo;
use tonic::transport::{Channel, Endpoint};

/// A gpusliced client (cheap to clone; clones share one connection).
pub type GpuSlice = GpuSliceClient<Channel>;

/// How long one call to gpusliced may take; below the kubelet's 45 s so a
/// stuck call becomes a per-claim error rather than a whole-RPC timeout.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(40);

/// A client of the gpusliced socket at `socket`; connects on first use.
pub fn connect_lazy(socket: PathBuf) -> GpuSlice {
    // The URI is a placeholder: the connector dials the unix socket, and
    // "localhost" is the authority hyper accepts.
    let channel = Endpoint::from_static("http://localhost")
        .connect_timeout(Duration::from_secs(5))
        .timeout(CALL_TIMEOUT)
        .connect_with_connector_lazy(tower::service_fn(move |_| {
            let path = socket.clone();
            async move {
                tokio::net::UnixStream::connect(path)
                    .await
                    .map(TokioIo::new)
            }
        }));
    GpuSliceClient::new(channel)
}
