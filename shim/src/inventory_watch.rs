//! Follows gpusliced's inventory: keeps a WatchInventory stream open and
//! counts every generation it announces into a `watch` channel the publisher
//! waits on (so a burst is one wake-up, never a queue).
//!
//! gpusliced may stop or restart at any time: when the stream ends (it
//! closes watches when stopping) or cannot be opened, the follower waits
//! with backoff (100 ms doubling to 5 s, with jitter; back to 100 ms once a
//! stream delivers) and opens a new one, whose first message (the
//! generation now) makes the publisher compare again. Generations are not
//! compared across connections (they restart with gpusliced): every message
//! is only a reason to look. Ends at shutdown.

use std::time::Duration;

use gpuslice_proto::gpuslice::v1 as pb;
use tokio::sync::watch;
use tracing::{debug, info, warn};

use crate::backoff::Backoff;
use crate::gpusliced::GpuSlice;

/// The first wait before reconnecting.
pub const RECONNECT_MIN: Duration = Duration::from_millis(100);
/// The longest wait before reconnecting.
pub const RECONNECT_MAX: Duration = Duration::from_secs(5);

/// Counts inventory changes into `changes` until `shutdown` turns true.
pub async fn run(
    gpusliced: GpuSlice,
    changes: watch::Sender<u64>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut backoff = Backoff::new(RECONNECT_MIN, RECONNECT_MAX);
    // After a failure that delivered nothing, further failures log quietly.
    let mut quiet = false;
    loop {
        let mut delivered = false;
        let follow = follow_once(gpusliced.clone(), &changes, &mut backoff, &mut delivered);
        let ended = tokio::select! {
            ended = follow => ended,
            _ = shutdown.wait_for(|stop| *stop) => return,
        };
        if delivered {
            quiet = false;
        }
        match ended {
            Ok(()) => {
                info!("gpusliced closed the inventory watch (stopping or restarting); reconnecting")
            }
            Err(status) if !quiet => warn!(
                code = ?status.code(), error = %status.message(),
                "cannot watch gpusliced's inventory; retrying with backoff"
            ),
            Err(status) => debug!(code = ?status.code(), "gpusliced still unreachable"),
        }
        quiet = !delivered;
        let delay = backoff.next_delay();
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            _ = shutdown.wait_for(|stop| *stop) => return,
        }
    }
}

/// One stream: Ok when gpusliced ended it, Err when it failed.
async fn follow_once(
    mut gpusliced: GpuSlice,
    changes: &watch::Sender<u64>,
    backoff: &mut Backoff,
    delivered: &mut bool,
) -> Result<(), tonic::Status> {
    let mut stream = gpusliced
        .watch_inventory(pb::WatchInventoryRequest {})
        .await?
        .into_inner();
    while let Some(changed) = stream.message().await? {
        if !*delivered {
            info!(
                generation = changed.generation,
                "following gpusliced's inventory"
            );
            backoff.reset();
            *delivered = true;
        }
        changes.send_modify(|seen| *seen = seen.wrapping_add(1));
    }
    Ok(())
}
