//! Talking to systemd: sd_notify READY/STATUS/STOPPING/WATCHDOG. Without
//! NOTIFY_SOCKET every call is a no-op, so the daemon runs the same by hand.
//!
//! No message may stall the daemon. The notify socket is a datagram socket
//! with a short queue (`net.unix.max_dgram_qlen`, 10 by default); when its
//! reader falls behind, a plain blocking send (what `sd_notify::notify`
//! does) waits for it forever, on a runtime thread or in shutdown. So state
//! changes (READY, RELOADING, STOPPING) wait for room a bounded time and are
//! then given up with a warning, and STATUS lines and watchdog pings never
//! wait: a STATUS line that finds the queue full is reported as
//! [`Delivery::Full`] so its sender can try again later.
//! `sd_notify` still formats the messages and reads WATCHDOG_USEC.

use std::ffi::OsStr;
use std::io;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::time::Duration;

use sd_notify::NotifyState;

/// How long a state change waits for room in a full notify queue.
const STATE_CHANGE_WAIT: Duration = Duration::from_secs(2);

/// What became of a notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// Queued for the service manager, or no manager asked for it.
    Sent,
    /// The manager's queue was full: not sent.
    Full,
    /// Not sent for another reason (logged).
    Failed,
}

/// Sends `states` in one datagram; waits up to `wait` for room (`None`:
/// not at all).
fn send(states: &[NotifyState<'_>], wait: Option<Duration>) -> Delivery {
    let Some(path) = std::env::var_os("NOTIFY_SOCKET") else {
        return Delivery::Sent;
    };
    let message: String = states.iter().map(|s| format!("{s}\n")).collect();
    match send_to(&path, message.as_bytes(), wait) {
        Ok(()) => Delivery::Sent,
        Err(err) if err.kind() == io::ErrorKind::WouldBlock => Delivery::Full,
        Err(err) => {
            tracing::warn!(error = %err, "sd_notify failed");
            Delivery::Failed
        }
    }
}

/// One datagram to the notify socket at `path` (a file, or `@name` in the
/// abstract namespace, as systemd may give it).
fn send_to(path: &OsStr, message: &[u8], wait: Option<Duration>) -> io::Result<()> {
    let socket = UnixDatagram::unbound()?;
    match wait {
        Some(bound) => socket.set_write_timeout(Some(bound))?,
        None => socket.set_nonblocking(true)?,
    }
    let address = match path.as_bytes().strip_prefix(b"@") {
        Some(name) => SocketAddr::from_abstract_name(name)?,
        None => SocketAddr::from_pathname(path)?,
    };
    socket.send_to_addr(message, &address).map(drop)
}

/// A state change: waits a bounded time for room, then warns.
fn change_state(states: &[NotifyState<'_>], what: &str) {
    if send(states, Some(STATE_CHANGE_WAIT)) == Delivery::Full {
        tracing::warn!(
            notification = what,
            waited_ms = STATE_CHANGE_WAIT.as_millis(),
            "the service manager is not reading its notify socket; notification not sent"
        );
    }
}

/// READY=1 with a status line: start-up is complete and the socket is open.
pub fn ready(status: &str) {
    change_state(
        &[NotifyState::Ready, NotifyState::Status(status)],
        "READY=1",
    );
}

/// STATUS=... only, without waiting: [`Delivery::Full`] when the queue had
/// no room (send the newest line again later).
pub fn status(status: &str) -> Delivery {
    send(&[NotifyState::Status(status)], None)
}

/// RELOADING=1 while SIGHUP is handled; [`ready`] ends it.
pub fn reloading() {
    change_state(&[NotifyState::Reloading], "RELOADING=1");
}

/// STOPPING=1: shutdown has begun.
pub fn stopping() {
    change_state(
        &[NotifyState::Stopping, NotifyState::Status("stopping")],
        "STOPPING=1",
    );
}

/// WATCHDOG=1, without waiting: a ping that finds the queue full is
/// skipped (the next one follows within half the watchdog interval).
pub fn watchdog() {
    if send(&[NotifyState::Watchdog], None) == Delivery::Full {
        tracing::debug!("notify queue full; watchdog ping skipped");
    }
}

/// The interval at which to ping the watchdog (half of WATCHDOG_USEC), when
/// systemd asked for one.
pub fn watchdog_interval() -> Option<Duration> {
    sd_notify::watchdog_enabled().map(|d| d / 2)
}

#[cfg(test)]
mod tests;
