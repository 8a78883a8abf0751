//! The node_exporter textfile: the metrics in the Prometheus 0.0.4 text
//! format (the only one the textfile collector parses), written with the one
//! atomic writer every `textfile_interval_seconds`, at start-up and at
//! shutdown, mode 0644 so node_exporter's user can read it.
//!
//! The collector reads only `*.prom` files and the writer's temp files are
//! hidden (`.gpuslice.prom.tmp-…`), so node_exporter never sees a torn or
//! half-written file. Samples carry no timestamps (the collector refuses
//! them): node_exporter exports `node_textfile_mtime_seconds` for staleness.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use gpuslice_cdi::atomic::{AtomicError, write_atomic};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::{Format, Metrics, MetricsError, UsageSource};

/// Mode of the file: node_exporter runs as its own user.
pub const MODE: u32 = 0o644;

/// Renders a snapshot and writes it to `path`; blocking.
pub fn write_now(
    path: &Path,
    source: &dyn UsageSource,
    metrics: &Metrics,
) -> Result<(), MetricsError> {
    let text = metrics.render(source, Format::Prometheus)?;
    let failed = |error| MetricsError::Textfile {
        path: path.to_path_buf(),
        error,
    };
    let name = path.file_name().and_then(|n| n.to_str()).ok_or_else(|| {
        failed(AtomicError::BadName {
            name: path.display().to_string(),
        })
    })?;
    let dir = path.parent().unwrap_or(Path::new("."));
    write_atomic(dir, name, text.as_bytes(), MODE).map_err(failed)
}

/// The periodic writer.
#[derive(Debug)]
pub struct Writer {
    path: PathBuf,
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

impl Writer {
    /// Writes once now (an error here is the caller's: start-up fails with
    /// it), then every `every` until [`Writer::stop`].
    pub async fn start(
        path: PathBuf,
        every: Duration,
        source: Arc<dyn UsageSource>,
        metrics: Arc<Metrics>,
    ) -> Result<Self, MetricsError> {
        write_blocking(&path, &source, &metrics).await?;
        let (stop, stopped) = oneshot::channel();
        let task = tokio::spawn(write_loop(path.clone(), every, source, metrics, stopped));
        Ok(Self { path, stop, task })
    }

    /// Stops the timer and writes a last time; the error is logged.
    pub async fn stop(self, source: Arc<dyn UsageSource>, metrics: Arc<Metrics>) {
        let _ = self.stop.send(());
        if let Err(err) = self.task.await {
            tracing::warn!(error = %err, "metrics textfile task failed");
        }
        match write_blocking(&self.path, &source, &metrics).await {
            Ok(()) => {
                tracing::debug!(path = %self.path.display(), "metrics textfile written at shutdown")
            }
            Err(err) => tracing::error!(error = %err, "metrics textfile not written at shutdown"),
        }
    }
}

async fn write_blocking(
    path: &Path,
    source: &Arc<dyn UsageSource>,
    metrics: &Arc<Metrics>,
) -> Result<(), MetricsError> {
    let (path, source, metrics) = (path.to_path_buf(), source.clone(), metrics.clone());
    tokio::task::spawn_blocking(move || write_now(&path, source.as_ref(), &metrics))
        .await
        .map_err(MetricsError::Task)?
}

/// Writes every `every`; logs the first failure of a streak and the recovery,
/// not every tick.
async fn write_loop(
    path: PathBuf,
    every: Duration,
    source: Arc<dyn UsageSource>,
    metrics: Arc<Metrics>,
    mut stopped: oneshot::Receiver<()>,
) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await; // the first tick is immediate; start() just wrote
    let mut failing = false;
    loop {
        tokio::select! {
            _ = &mut stopped => return,
            _ = tick.tick() => {}
        }
        match write_blocking(&path, &source, &metrics).await {
            Ok(()) if failing => {
                failing = false;
                tracing::info!(path = %path.display(), "metrics textfile written again");
            }
            Ok(()) => {}
            Err(err) if !failing => {
                failing = true;
                tracing::error!(error = %err, "metrics textfile not written; retrying every interval");
            }
            Err(_) => {}
        }
    }
}
