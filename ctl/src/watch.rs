//! `gpuslicectl inventory --watch`: the inventory now and again at each new
//! generation gpusliced announces (WatchInventory), until gpusliced stops
//! (exit 0) or the connection breaks (an error). A table per generation, or
//! with `--output json` one compact JSON document per line. Several changes
//! in a burst may show as one: gpusliced sends only the latest generation.

use std::io::Write;

use anyhow::Context;
use gpuslice_proto::gpuslice::v1 as pb;
use gpuslice_proto::gpuslice::v1::gpu_slice_client::GpuSliceClient;
use tonic::transport::Channel;

use crate::render;

/// Prints the inventory at every generation until the watch ends.
pub async fn inventory(client: &mut GpuSliceClient<Channel>, json: bool) -> anyhow::Result<()> {
    let mut changes = client
        .watch_inventory(pb::WatchInventoryRequest {})
        .await?
        .into_inner();
    let mut out = std::io::stdout().lock();
    while changes.message().await?.is_some() {
        let reply = client
            .get_inventory(pb::GetInventoryRequest {})
            .await?
            .into_inner();
        let text = if json {
            format!("{}\n", render::inventory_json(&reply))
        } else {
            format!(
                "generation {}\n{}\n",
                reply.generation,
                render::inventory(&reply, false)
            )
        };
        out.write_all(text.as_bytes())
            .and_then(|()| out.flush())
            .context("cannot write to stdout")?;
    }
    eprintln!("gpuslicectl: gpusliced ended the watch (it is stopping)");
    Ok(())
}
