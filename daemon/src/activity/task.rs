//! The sampling loop: a thread of its own (its CPU time is the sample's, and
//! a slow backend call never holds a tokio worker) that takes a sample every
//! `[activity] interval_s` and publishes it into the [`ActivityHandle`].
//! With sampling off the handle holds one snapshot with `enabled` false and
//! no thread runs. Stopping signals the thread, waits a short grace for the
//! sample in flight, and writes the last active times a last time.

use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::Duration;

use super::handle::ActivityHandle;
use super::sampler::{Sampler, SamplerSettings};
use super::snapshot::ActivitySnapshot;
use crate::claims::Engine;
use crate::config::ActivityConfig;

/// How long [`ActivityTask::stop`] waits for a sample in flight.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// The running sampler, when sampling is on.
#[derive(Debug)]
pub struct ActivityTask {
    stop: mpsc::Sender<()>,
    done: mpsc::Receiver<()>,
    thread: JoinHandle<()>,
}

/// Starts sampling `engine`'s GPUs as `config` says, keeping the last
/// active times in `state_dir`. Returns the handle readers use, and the
/// task to stop (`None` when sampling is off or the thread did not start).
pub fn start(
    engine: Arc<Engine>,
    config: &ActivityConfig,
    state_dir: &Path,
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
    };
    let (stop, stopped) = mpsc::channel();
    let (finished, done) = mpsc::channel();
    let publish = handle.clone();
    let thread = std::thread::Builder::new()
        .name("activity".to_owned())
        .spawn(move || {
            let mut sampler = Sampler::new(engine, settings);
            run(&mut sampler, &publish, interval, &stopped);
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

/// Samples at once, then every `interval`, until told to stop.
fn run(
    sampler: &mut Sampler,
    handle: &ActivityHandle,
    interval: Duration,
    stopped: &mpsc::Receiver<()>,
) {
    loop {
        handle.publish(sampler.sample_once());
        match stopped.recv_timeout(interval) {
            Err(RecvTimeoutError::Timeout) => {}
            Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
        }
    }
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
        let _ = self.stop.send(());
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
