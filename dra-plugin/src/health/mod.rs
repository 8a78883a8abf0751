//! The kubelet's DRA health API (`DRAResourceHealth.NodeWatchResources`,
//! v1 and v1alpha1), served on the DRA socket from gpusliced's inventory
//! health, so the kubelet can show a device's health in the status of the
//! pods using it.
//!
//! Each watch is one stream: every `health_seconds` (and at once) the shim
//! reads gpusliced's inventory and sends the complete list of the pool's
//! devices (the API wants the complete list each time) with HEALTHY or
//! UNHEALTHY and gpusliced's reason, stamped now, with a timeout of three
//! periods so a kubelet that stops hearing from us marks them UNKNOWN. When
//! gpusliced does not answer, the devices last seen are sent UNKNOWN with
//! the reason. The stream ends when the kubelet goes away or the shim stops.
//! [`report`] is the pure mapping; [`v1`] and [`v1alpha1`] adapt it (one
//! macro, `versions.rs`).

mod versions;
pub use versions::{v1, v1alpha1};

#[cfg(test)]
mod tests;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use gpuslice_proto::gpuslice::v1 as pb;
use tokio::sync::{mpsc, watch};
use tokio_stream::wrappers::ReceiverStream;
use tonic::Status;
use tracing::{debug, warn};

use crate::gpusliced::GpuSlice;

/// Longest message the kubelet keeps (it truncates longer ones).
pub const MAX_MESSAGE: usize = 1024;

/// A device's health, version-neutral.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Health {
    /// Cannot be told (gpusliced does not answer).
    Unknown,
    /// Fine.
    Healthy,
    /// gpusliced reports a fault.
    Unhealthy,
}

/// One device of a report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceReport {
    /// The device name in the pool.
    pub device: String,
    /// Its health.
    pub health: Health,
    /// Why, at most [`MAX_MESSAGE`] bytes (empty when healthy).
    pub message: String,
}

/// One complete list, as sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// The pool (the node's name).
    pub pool: String,
    /// Every device.
    pub devices: Vec<DeviceReport>,
    /// Unix seconds the health was read.
    pub at: i64,
    /// How long the kubelet may trust it, in seconds.
    pub timeout_seconds: i64,
}

/// The report for an inventory (or for the devices last seen, UNKNOWN, when
/// gpusliced did not answer).
pub fn report(
    pool: &str,
    inventory: Result<&pb::GetInventoryResponse, (&[String], &Status)>,
    at: i64,
    every: Duration,
) -> Report {
    let devices = match inventory {
        Ok(inv) => inv
            .devices
            .iter()
            .map(|d| DeviceReport {
                device: d.name.clone(),
                health: if d.healthy {
                    Health::Healthy
                } else {
                    Health::Unhealthy
                },
                message: bounded(&d.health_reason),
            })
            .collect(),
        Err((last, status)) => {
            let why = bounded(&format!(
                "gpusliced does not answer ({:?}): {}",
                status.code(),
                status.message()
            ));
            last.iter()
                .map(|device| DeviceReport {
                    device: device.clone(),
                    health: Health::Unknown,
                    message: why.clone(),
                })
                .collect()
        }
    };
    let seconds = i64::try_from(every.as_secs()).unwrap_or(i64::MAX / 3);
    Report {
        pool: pool.to_owned(),
        devices,
        at,
        timeout_seconds: seconds.saturating_mul(3).max(1),
    }
}

/// `text` cut to at most [`MAX_MESSAGE`] bytes on a character boundary.
fn bounded(text: &str) -> String {
    if text.len() <= MAX_MESSAGE {
        return text.to_owned();
    }
    let mut end = MAX_MESSAGE - 3;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", text.get(..end).unwrap_or_default())
}

/// What every watch shares.
#[derive(Debug, Clone)]
pub struct HealthCore {
    gpusliced: GpuSlice,
    pool: String,
    every: Duration,
    stopped: watch::Receiver<bool>,
}

impl HealthCore {
    /// Watches read `gpusliced` every `every` for pool `pool`, and end when
    /// `stopped` turns true.
    pub fn new(
        gpusliced: GpuSlice,
        pool: String,
        every: Duration,
        stopped: watch::Receiver<bool>,
    ) -> Self {
        Self {
            gpusliced,
            pool,
            every,
            stopped,
        }
    }

    /// A new watch: a stream of reports, each turned into the version's
    /// message by `convert`.
    pub fn watch<T: Send + 'static>(
        &self,
        convert: fn(&Report) -> T,
    ) -> ReceiverStream<Result<T, Status>> {
        let (tx, rx) = mpsc::channel(1);
        let mut core = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(core.every);
            let mut last_seen: Vec<String> = Vec::new();
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    _ = core.stopped.wait_for(|s| *s) => break,
                    () = tx.closed() => break,
                }
                let report = core.read(&mut last_seen).await;
                if tx.send(Ok(convert(&report))).await.is_err() {
                    break;
                }
            }
            debug!("kubelet health watch ended");
        });
        ReceiverStream::new(rx)
    }

    /// The report now; remembers the device names for a later failure.
    async fn read(&mut self, last_seen: &mut Vec<String>) -> Report {
        let at = unix_now();
        let answer = self
            .gpusliced
            .get_inventory(pb::GetInventoryRequest {})
            .await;
        match answer {
            Ok(reply) => {
                let inventory = reply.into_inner();
                *last_seen = inventory.devices.iter().map(|d| d.name.clone()).collect();
                report(&self.pool, Ok(&inventory), at, self.every)
            }
            Err(status) => {
                warn!(code = ?status.code(), message = status.message(), "health watch: gpusliced does not answer; devices sent UNKNOWN");
                report(&self.pool, Err((last_seen, &status)), at, self.every)
            }
        }
    }
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}
