//! The watch streams: WatchInventory (the inventory generation now, then
//! each new one) and WatchActivity (the latest activity sample, then each
//! new one), until the client goes away or the daemon stops.
//!
//! One small task per open watch forwards a `tokio::sync::watch` (which
//! keeps only the latest value) into a channel of one message: a reader
//! that falls behind is sent the newest value when it catches up, never a
//! backlog, so memory per watch is constant. The task ends, and the stream
//! with it (status OK), when the daemon starts stopping (so the server's
//! graceful shutdown is not held up by open watches) or when the client
//! hangs up.

use gpuslice_proto::gpuslice::v1 as pb;
use tokio::sync::{mpsc, watch};
use tokio_stream::wrappers::ReceiverStream;
use tonic::Status;

use crate::activity::handle::Sampled;

/// The stream a watch call answers with.
pub type WatchStream<M> = ReceiverStream<Result<M, Status>>;

/// The stream a WatchInventory call answers with.
pub type InventoryStream = WatchStream<pb::InventoryChanged>;

/// The stream a WatchActivity call answers with.
pub type ActivityStream = WatchStream<pb::ActivitySampled>;

/// Forwards `generations` until `stopping` turns true or the client drops
/// the stream.
pub fn stream(
    generations: watch::Receiver<u64>,
    stopping: watch::Receiver<bool>,
) -> InventoryStream {
    forward(generations, stopping, |&generation| pb::InventoryChanged {
        generation,
    })
}

/// Forwards the activity samples published until `stopping` turns true or
/// the client drops the stream.
pub fn activity_stream(
    samples: watch::Receiver<Sampled>,
    stopping: watch::Receiver<bool>,
) -> ActivityStream {
    forward(samples, stopping, super::activity::sampled)
}

/// Starts forwarding `values`, each as `message` makes it (module doc).
fn forward<T, M>(
    mut values: watch::Receiver<T>,
    mut stopping: watch::Receiver<bool>,
    message: fn(&T) -> M,
) -> WatchStream<M>
where
    T: Send + Sync + 'static,
    M: Send + 'static,
{
    let (tx, rx) = mpsc::channel(1);
    tokio::spawn(async move {
        loop {
            let next = Ok(message(&values.borrow_and_update()));
            tokio::select! {
                sent = tx.send(next) => if sent.is_err() { return },
                _ = stopping.wait_for(|stop| *stop) => return,
            }
            tokio::select! {
                changed = values.changed() => if changed.is_err() { return },
                _ = stopping.wait_for(|stop| *stop) => return,
                () = tx.closed() => return,
            }
        }
    });
    ReceiverStream::new(rx)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio_stream::StreamExt;

    use super::stream;

    const BOUND: Duration = Duration::from_secs(10);

    async fn next(s: &mut super::InventoryStream) -> Option<u64> {
        tokio::time::timeout(BOUND, s.next())
            .await
            .expect("a message or the end within the bound")
            .map(|m| m.expect("no error").generation)
    }

    #[tokio::test]
    async fn sends_the_current_generation_then_each_change() {
        let (generation, rx) = tokio::sync::watch::channel(7u64);
        let (_stop, stopping) = tokio::sync::watch::channel(false);
        let mut s = stream(rx, stopping);
        assert_eq!(next(&mut s).await, Some(7));
        generation.send_replace(8);
        assert_eq!(next(&mut s).await, Some(8));
    }

    #[tokio::test]
    async fn a_slow_reader_gets_the_latest_not_a_backlog() {
        let (generation, rx) = tokio::sync::watch::channel(1u64);
        let (_stop, stopping) = tokio::sync::watch::channel(false);
        let mut s = stream(rx, stopping);
        assert_eq!(next(&mut s).await, Some(1));
        // Not read meanwhile: at most the one queued message plus the latest.
        for g in 2..=1000 {
            generation.send_replace(g);
        }
        let mut seen = Vec::new();
        while let Some(g) = next(&mut s).await {
            seen.push(g);
            if g == 1000 {
                break;
            }
        }
        assert!(
            seen.len() <= 2,
            "a backlog was sent: {} messages",
            seen.len()
        );
        assert_eq!(seen.last(), Some(&1000));
    }

    #[tokio::test]
    async fn ends_when_the_daemon_stops() {
        let (_generation, rx) = tokio::sync::watch::channel(1u64);
        let (stop, stopping) = tokio::sync::watch::channel(false);
        let mut s = stream(rx, stopping);
        assert_eq!(next(&mut s).await, Some(1));
        stop.send_replace(true);
        assert_eq!(next(&mut s).await, None);
    }

    #[tokio::test]
    async fn the_task_ends_when_the_client_hangs_up() {
        let (generation, rx) = tokio::sync::watch::channel(1u64);
        let (_stop, stopping) = tokio::sync::watch::channel(false);
        let s = stream(rx, stopping);
        drop(s);
        // The forwarding task drops its receiver when it ends.
        tokio::time::timeout(BOUND, async {
            while generation.receiver_count() > 0 {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the task ended");
    }

    #[tokio::test]
    async fn an_activity_watch_sends_the_latest_sample_then_one_message_per_publish() {
        use crate::activity::{ActivityHandle, ActivitySnapshot};
        let handle = ActivityHandle::new(ActivitySnapshot {
            sampled_at_ms: 5,
            ..ActivitySnapshot::default()
        });
        let (_stop, stopping) = tokio::sync::watch::channel(false);
        let mut s = super::activity_stream(handle.watch(), stopping);
        let mut next = async || {
            tokio::time::timeout(BOUND, s.next())
                .await
                .expect("a message within the bound")
                .map(|m| m.expect("no error"))
                .map(|m| (m.sampled_at_ms, m.conditions_generation))
        };
        assert_eq!(next().await, Some((5, 0)));
        for (at, generation) in [(10, 0), (15, 0), (20, 1)] {
            handle.publish(ActivitySnapshot {
                sampled_at_ms: at,
                conditions_generation: generation,
                ..ActivitySnapshot::default()
            });
            assert_eq!(next().await, Some((at, generation)), "even unchanged");
        }
    }
}
