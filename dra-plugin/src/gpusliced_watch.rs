//! Follows one of gpusliced's watch streams (WatchInventory, WatchActivity):
//! keeps the stream open and counts every message into a `watch` channel
//! the consumer waits on (so a burst is one wake-up, never a queue).
//!
//! gpusliced may stop or restart at any time: when the stream ends (it
//! closes watches when stopping) or cannot be opened, the follower waits
//! with backoff (100 ms doubling to 5 s, with jitter; back to 100 ms once a
//! stream delivers) and opens a new one, whose first message (the state
//! now) makes the consumer look again. Messages are not compared across
//! connections (their generations restart with gpusliced): every message is
//! only a reason to look. Ends at shutdown.

use std::future::Future;
use std::time::Duration;

use gpuslice_proto::gpuslice::v1 as pb;
use tokio::sync::watch;
use tonic::Streaming;
use tracing::{debug, info, warn};

use crate::backoff::Backoff;
use crate::gpusliced::GpuSlice;

/// The first wait before reconnecting.
pub const RECONNECT_MIN: Duration = Duration::from_millis(100);
/// The longest wait before reconnecting.
pub const RECONNECT_MAX: Duration = Duration::from_secs(5);

/// Counts inventory changes into `changes` until `shutdown` turns true.
pub async fn inventory(
    gpusliced: GpuSlice,
    changes: watch::Sender<u64>,
    shutdown: watch::Receiver<bool>,
) {
    let open = |mut g: GpuSlice| async move {
        g.watch_inventory(pb::WatchInventoryRequest {})
            .await
            .map(tonic::Response::into_inner)
    };
    follow("inventory", gpusliced, open, changes, shutdown).await;
}

/// Counts activity samples into `samples` until `shutdown` turns true.
pub async fn activity(
    gpusliced: GpuSlice,
    samples: watch::Sender<u64>,
    shutdown: watch::Receiver<bool>,
) {
    let open = |mut g: GpuSlice| async move {
        g.watch_activity(pb::WatchActivityRequest {})
            .await
            .map(tonic::Response::into_inner)
    };
    follow("activity", gpusliced, open, samples, shutdown).await;
}

/// Follows the streams `open` opens, reconnecting, until shutdown.
async fn follow<T, F, Fut>(
    what: &'static str,
    gpusliced: GpuSlice,
    open: F,
    changes: watch::Sender<u64>,
    mut shutdown: watch::Receiver<bool>,
) where
    F: Fn(GpuSlice) -> Fut,
    Fut: Future<Output = Result<Streaming<T>, tonic::Status>>,
{
    let mut backoff = Backoff::new(RECONNECT_MIN, RECONNECT_MAX);
    // After a failure that delivered nothing, further failures log quietly.
    let mut quiet = false;
    loop {
        let mut delivered = false;
        let follow = follow_once(
            what,
            open(gpusliced.clone()),
            &changes,
            &mut backoff,
            &mut delivered,
        );
        let ended = tokio::select! {
            ended = follow => ended,
            _ = shutdown.wait_for(|stop| *stop) => return,
        };
        if delivered {
            quiet = false;
        }
        match ended {
            Ok(()) => {
                info!("gpusliced closed the {what} watch (stopping or restarting); reconnecting")
            }
            Err(status) if !quiet => warn!(
                code = ?status.code(), error = %status.message(),
                "cannot watch gpusliced's {what}; retrying with backoff"
            ),
            Err(status) => {
                debug!(watch = what, code = ?status.code(), "gpusliced still unreachable")
            }
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
async fn follow_once<T>(
    what: &'static str,
    opening: impl Future<Output = Result<Streaming<T>, tonic::Status>>,
    changes: &watch::Sender<u64>,
    backoff: &mut Backoff,
    delivered: &mut bool,
) -> Result<(), tonic::Status> {
    let mut stream = opening.await?;
    while stream.message().await?.is_some() {
        if !*delivered {
            info!("following gpusliced's {what}");
            backoff.reset();
            *delivered = true;
        }
        changes.send_modify(|seen| *seen = seen.wrapping_add(1));
    }
    Ok(())
}
