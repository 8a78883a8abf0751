//! What systemd is told while gpusliced serves: the STATUS= line (claims,
//! unhealthy and unreadable GPUs, the metrics address), kept current by a
//! follower of the engine's inventory changes, and the watchdog pings, fed
//! only while the engine answers.

use std::sync::Arc;

use crate::claims::Engine;
use crate::systemd;

/// The systemd status line, e.g. "serving 8 GPUs (nvml), 3 claims, 1 unhealthy
/// (gpuslicectl health); metrics on http://127.0.0.1:9464/metrics".
pub(super) fn status_line(engine: &Engine, metrics: Option<std::net::SocketAddr>) -> String {
    let mut line = format!(
        "serving {} GPUs ({}), {} claims",
        engine.inventory().gpus.len(),
        engine.backend_name(),
        engine.claim_count()
    );
    match engine.fault_count() {
        0 => {}
        faults => line.push_str(&format!(", {faults} unhealthy (gpuslicectl health)")),
    }
    match engine.inventory().unreadable.len() {
        0 => {}
        gpus => line.push_str(&format!(", {gpus} unreadable (gpuslicectl status)")),
    }
    if let Some(addr) = metrics {
        line.push_str(&format!("; metrics on http://{addr}/metrics"));
    }
    line
}

/// Keeps systemd's STATUS= line current (claims, unhealthy and unreadable
/// GPUs): it is sent again after every inventory change, which every
/// prepare, unprepare, health change and rescan makes. Changes that come
/// while a line is being made are folded into the next one. A line that
/// finds the notify queue full is never waited for: the newest line is
/// sent again at the next change or after [`STATUS_RETRY`]. `changes` is
/// subscribed by the caller before it sends the first line, so no change
/// falls between that line and this task's start.
pub(super) async fn follow_status(
    engine: Arc<Engine>,
    mut changes: tokio::sync::watch::Receiver<u64>,
    metrics: Option<std::net::SocketAddr>,
) {
    let mut pending = false;
    loop {
        if pending {
            tokio::select! {
                changed = changes.changed() => if changed.is_err() { return },
                () = tokio::time::sleep(STATUS_RETRY) => {}
            }
        } else if changes.changed().await.is_err() {
            return;
        }
        let engine = engine.clone();
        match tokio::task::spawn_blocking(move || status_line(&engine, metrics)).await {
            Ok(line) => pending = systemd::status(&line) == systemd::Delivery::Full,
            Err(err) => tracing::warn!(error = %err, "status line not updated"),
        }
    }
}

/// How soon a STATUS= line that found the notify queue full is sent again.
const STATUS_RETRY: std::time::Duration = std::time::Duration::from_secs(1);

/// Pings the watchdog while the engine answers; a wedged engine stops the
/// pings and systemd restarts the daemon.
pub(super) async fn feed_watchdog(engine: Arc<Engine>, every: std::time::Duration) {
    let mut tick = tokio::time::interval(every);
    loop {
        tick.tick().await;
        let engine = engine.clone();
        let alive = tokio::time::timeout(
            every,
            tokio::task::spawn_blocking(move || engine.responsive()),
        )
        .await;
        if matches!(alive, Ok(Ok(true))) {
            systemd::watchdog();
        } else {
            tracing::error!(
                "engine did not answer within the watchdog interval; not feeding the watchdog"
            );
        }
    }
}
