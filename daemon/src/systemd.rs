//! Talking to systemd: sd_notify READY/STATUS/STOPPING/WATCHDOG. Without
//! NOTIFY_SOCKET every call is a no-op, so the daemon runs the same by hand.

use std::time::Duration;

use sd_notify::NotifyState;

/// Sends `states`; a failure is logged, never fatal (systemd may be gone
/// during shutdown).
fn send(states: &[NotifyState<'_>]) {
    if let Err(err) = sd_notify::notify(states) {
        tracing::warn!(error = %err, "sd_notify failed");
    }
}

/// READY=1 with a status line: start-up is complete and the socket is open.
pub fn ready(status: &str) {
    send(&[NotifyState::Ready, NotifyState::Status(status)]);
}

/// STATUS=... only.
pub fn status(status: &str) {
    send(&[NotifyState::Status(status)]);
}

/// RELOADING=1 while SIGHUP is handled; [`ready`] ends it.
pub fn reloading() {
    send(&[NotifyState::Reloading]);
}

/// STOPPING=1: shutdown has begun.
pub fn stopping() {
    send(&[NotifyState::Stopping, NotifyState::Status("stopping")]);
}

/// WATCHDOG=1.
pub fn watchdog() {
    send(&[NotifyState::Watchdog]);
}

/// The interval at which to ping the watchdog (half of WATCHDOG_USEC), when
/// systemd asked for one.
pub fn watchdog_interval() -> Option<Duration> {
    sd_notify::watchdog_enabled().map(|d| d / 2)
}
