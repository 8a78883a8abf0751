//! The sampling loop: a thread of its own (its CPU time is the sample's, and
//! a slow backend call never holds a tokio worker) that takes a sample every
//! `[activity] interval_s` and publishes it into the [`ActivityHandle`].
//! Asked for a fresh sample through the handle, it takes one at once (after
//! the one in flight: this thread is the only one that samples), answers
//! every ask that came meanwhile with it, and counts the next interval from
//! it. With sampling off the handle holds one snapshot with `enabled` false,
//! no thread runs, and a fresh ask is answered that snapshot. Stopping
//! signals the thread, waits a short grace for the sample in flight, and
//! writes the last active times a last time.

use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::Duration;

use super::handle::{ActivityHandle, Ask};
use super::history_feed::HistoryFeed;
use super::publish::SampleSubscriber;
use super::sampler::{Sampler, SamplerSettings};
use super::snapshot::ActivitySnapshot;
use crate::advice::HistorySettings;
use crate::advice::keeper::HistoryKeeper;
use crate::claims::NodeReads;
use crate::config::{ActivityConfig, AdviceConfig};

/// How long [`ActivityTask::stop`] waits for a sample in flight.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// A fresh sample's way back to its caller.
type Reply = tokio::sync::oneshot::Sender<Arc<ActivitySnapshot>>;

/// The running sampler, when sampling is on.
#[derive(Debug)]
pub struct ActivityTask {
    stop: mpsc::Sender<Ask>,
    done: mpsc::Receiver<()>,
    thread: JoinHandle<()>,
}

/// Starts sampling `node`'s GPUs as `config` says, keeping the last active
/// times and the usage history (as `advice` says) in `state_dir`, and
/// handing each sample to the usage history, then to `subscribers` in
/// order. Returns the handle readers use, and the task to stop (`None` when
/// sampling is off or the thread did not start).
pub fn start(
    node: Arc<dyn NodeReads>,
    config: &ActivityConfig,
    advice: &AdviceConfig,
    state_dir: &Path,
    subscribers: Vec<Box<dyn SampleSubscriber>>,
) -> (ActivityHandle, Option<ActivityTask>) {
    let interval = Duration::from_secs(config.interval_s);
    let handle = ActivityHandle::new(ActivitySnapshot {
        enabled: config.enabled(),
        interval_ms: u64::try_from(interval.as_millis()).unwrap_or(u64::MAX),
        ..ActivitySnapshot::default()
    });
    if !config.enabled() {
        tracing::info!("per-claim GPU use not sampled ([activity] interval_s = 0)");
        return (handle, None);
    }
    let settings = SamplerSettings {
        interval,
        max_claim_series: config.max_claim_series,
        proc_root: "/".into(),
        state_dir: Some(state_dir.to_path_buf()),
        idle_after: Duration::from_secs(config.idle_after_s),
        summary_window: Duration::from_secs(config.summary_window_s()),
    };
    let history = HistoryKeeper::load(
        Some(state_dir),
        HistorySettings {
            interval_s: config.interval_s,
            half_life_s: advice.half_life_s,
            max_claims: advice.max_claims,
        },
    );
    let (stop, asks) = mpsc::channel();
    let handle = handle.with_history(history.shared());
    let publish = handle.clone();
    let handle = handle.with_sampler(stop.clone());
    let (finished, done) = mpsc::channel();
    let thread = std::thread::Builder::new()
        .name("activity".to_owned())
        .spawn(move || {
            let mut sampler =
                Sampler::new(node, settings).with_subscriber(Box::new(HistoryFeed::new(history)));
            for subscriber in subscribers {
                sampler = sampler.with_subscriber(subscriber);
            }
            run(&mut sampler, &publish, interval, &asks);
            sampler.flush();
            let _ = finished.send(());
        });
    match thread {
        Ok(thread) => {
            tracing::info!(interval_s = config.interval_s, "sampling per-claim GPU use");
            (handle, Some(ActivityTask { stop, done, thread }))
        }
        Err(err) => {
            tracing::error!(error = %err, "cannot start the activity sampler thread; per-claim GPU use is not sampled");
            (handle, None)
        }
    }
}

/// Samples at once, then every `interval` or when asked, until told to stop.
fn run(
    sampler: &mut Sampler,
    handle: &ActivityHandle,
    interval: Duration,
    asks: &mpsc::Receiver<Ask>,
) {
    let mut waiting: Vec<Reply> = Vec::new();
    loop {
        let snapshot = Arc::new(sampler.sample_once());
        handle.publish(snapshot.clone());
        for reply in waiting.drain(..) {
            let _ = reply.send(snapshot.clone());
        }
        match next(asks, interval) {
            Some(replies) => waiting = replies,
            None => return,
        }
    }
}

/// Waits up to `interval` for an ask. `None`: stop. Otherwise the callers
/// waiting for the next sample: none when the interval passed, else the
/// first ask's and every other that came meanwhile (one sample answers
/// them all).
fn next(asks: &mpsc::Receiver<Ask>, interval: Duration) -> Option<Vec<Reply>> {
    let first = match asks.recv_timeout(interval) {
        Err(RecvTimeoutError::Timeout) => return Some(Vec::new()),
        Ok(Ask::Stop) | Err(RecvTimeoutError::Disconnected) => return None,
        Ok(Ask::Sample(reply)) => reply,
    };
    let mut replies = vec![first];
    for ask in asks.try_iter() {
        match ask {
            Ask::Sample(reply) => replies.push(reply),
            Ask::Stop => return None,
        }
    }
    Some(replies)
}

/// Stops `task`, if any, on the blocking pool (see [`ActivityTask::stop`]).
pub async fn stop(task: Option<ActivityTask>) {
    if let Some(task) = task
        && tokio::task::spawn_blocking(move || task.stop())
            .await
            .is_err()
    {
        tracing::error!("stopping the activity sampler failed");
    }
}

impl ActivityTask {
    /// Stops the loop; blocks up to a few seconds (call it off the runtime's
    /// workers). A thread still in a backend call after the grace is left
    /// to the process's exit.
    pub fn stop(self) {
        let _ = self.stop.send(Ask::Stop);
        match self.done.recv_timeout(STOP_GRACE) {
            Ok(()) => {
                if self.thread.join().is_err() {
                    tracing::error!("activity sampler thread panicked");
                }
            }
            Err(RecvTimeoutError::Timeout) => {
                tracing::warn!(grace = ?STOP_GRACE, "activity sampler still in a sample; not waiting for it");
            }
            Err(RecvTimeoutError::Disconnected) => {
                tracing::error!("activity sampler thread ended without finishing");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use super::{Ask, next};

    fn ask(
        asks: &mpsc::Sender<Ask>,
    ) -> tokio::sync::oneshot::Receiver<super::Arc<super::ActivitySnapshot>> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        asks.send(Ask::Sample(reply)).unwrap();
        answer
    }

    #[test]
    fn asks_waiting_together_share_one_sample() {
        let (asks, inbox) = mpsc::channel();
        let _answers: Vec<_> = (0..3).map(|_| ask(&asks)).collect();
        let replies = next(&inbox, Duration::from_secs(3600)).unwrap();
        assert_eq!(replies.len(), 3);
        assert_eq!(
            next(&inbox, Duration::ZERO).map(|r| r.len()),
            Some(0),
            "then the interval"
        );
    }

    #[test]
    fn a_stop_ends_the_loop_even_behind_asks() {
        let (asks, inbox) = mpsc::channel();
        let answer = ask(&asks);
        asks.send(Ask::Stop).unwrap();
        assert!(next(&inbox, Duration::from_secs(3600)).is_none());
        drop(inbox);
        assert!(
            answer.blocking_recv().is_err(),
            "the waiting caller is let go (it answers the latest)"
        );
        let (asks, inbox) = mpsc::channel::<Ask>();
        drop(asks);
        assert!(next(&inbox, Duration::from_secs(3600)).is_none());
    }
}
