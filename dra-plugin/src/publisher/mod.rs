//! Keeps the node's ResourceSlices equal to gpusliced's inventory, promptly.
//!
//! A sync ([`sync`]) runs when something may have changed, a short moment
//! after it ([`SETTLE`], so a burst of changes is one write):
//! * gpusliced announced a new inventory generation (WatchInventory,
//!   followed by [`crate::gpusliced_watch`] across gpusliced restarts);
//! * the slice watch ([`crate::slice_watch`]) saw a slice of ours deleted
//!   (the kubelet does it when it restarts) or changed by someone else, or
//!   relisted; the echoes of our own writes ([`echoes`]) are not reasons;
//! * every `resync_seconds` (and at start): the safety net, a full compare
//!   with the API server whatever the watches said;
//! * a failed sync is retried with backoff (250 ms doubling to 30 s, with
//!   jitter, never later than the next resync).
//!
//! Before each sync it tells gpusliced which form of MIG slices the API
//! server takes ([`crate::advertise`], probed at start by
//! [`crate::probe::MigFormProbe`], whose verdict is kept across syncs and
//! retries until a relist of the slice watch, a write refused as invalid or
//! forbidden, or a write whose answer lost its counters; see `mig_form`),
//! and logs the form in force (one INFO line, again on change).
//!
//! Slices are owned by the Node, so deleting the Node garbage-collects
//! them. Errors are logged and retried; the loop never ends the process.
//!
//! One publisher per driver ([`PoolKind`]): the GPU driver's pool comes from
//! gpusliced's inventory as above; the ComputeDomain driver's is the node's
//! fixed list of IMEX channels ([`crate::compute_domains::pool`]), written
//! by the same loop and sync (its slice watch, its resync), with no
//! inventory read and no MIG form.

mod echoes;
mod mig_form;
mod sync;

use std::time::Duration;

use k8s_openapi::api::resource::v1::ResourceSliceSpec;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tracing::{debug, info, warn};

pub use echoes::{Echoes, SliceEvent};

use crate::backoff::Backoff;
use crate::gpusliced::GpuSlice;
use crate::slices::PoolTarget;

/// How long to wait after a change for more before syncing.
pub const SETTLE: Duration = Duration::from_millis(100);
/// The longest a steady stream of changes can put a sync off.
pub const SETTLE_MAX: Duration = Duration::from_secs(1);
/// The first retry after a failed sync.
pub const RETRY_MIN: Duration = Duration::from_millis(250);
/// The longest wait between retries.
pub const RETRY_MAX: Duration = Duration::from_secs(30);

/// A sync that did not finish (retried with backoff).
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// gpusliced did not answer GetInventory.
    #[error("cannot read gpusliced's inventory ({code:?}): {message}", code = .0.code(), message = .0.message())]
    Inventory(tonic::Status),
    /// The Node could not be read (its uid is the slices' owner).
    #[error("cannot read Node {node}: {error}")]
    Node {
        /// The node.
        node: String,
        /// kube's error.
        error: kube::Error,
    },
    /// Listing our slices failed.
    #[error("cannot list ResourceSlices of node {node}: {error}")]
    List {
        /// The node.
        node: String,
        /// kube's error.
        error: kube::Error,
    },
    /// The API server could not be probed for partitionable devices.
    #[error("cannot probe the API server for partitionable devices: {0}")]
    Probe(crate::probe::ProbeError),
    /// gpusliced did not take the MIG advertise form.
    #[error("cannot tell gpusliced the MIG advertise form ({code:?}): {message}", code = .0.code(), message = .0.message())]
    Advertise(tonic::Status),
    /// The API server took a write but dropped its counters (the gate went
    /// off): probed again at the next sync.
    #[error(
        "the API server dropped {field} from ResourceSlice {slice} (DRAPartitionableDevices off?); probing again"
    )]
    Dropped {
        /// The slice (the generateName prefix for a create).
        slice: String,
        /// "sharedCounters" or "consumesCounters".
        field: &'static str,
    },
    /// One write failed (the next sync lists again and redoes what is left).
    #[error("cannot {action} ResourceSlice {slice}: {error}")]
    Write {
        /// "create", "update" or "delete".
        action: &'static str,
        /// The slice name (the generateName prefix for a create).
        slice: String,
        /// kube's error.
        error: kube::Error,
    },
}

/// What one sync did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyncReport {
    /// The pool generation now published.
    pub generation: i64,
    /// How many writes it took (0: already in sync).
    pub writes: usize,
    /// Whether the API server was asked (false: the pool built from the
    /// inventory is the one published last, and nothing else changed).
    pub listed: bool,
}

/// What wakes the publisher.
#[derive(Debug)]
pub struct Triggers {
    /// Counts gpusliced's inventory changes.
    pub inventory: watch::Receiver<u64>,
    /// The slice watch's events.
    pub slices: mpsc::Receiver<SliceEvent>,
    /// Turns true at shutdown.
    pub shutdown: watch::Receiver<bool>,
}

/// Why the publisher woke.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wake {
    /// The periodic full compare (and the first sync).
    Resync,
    /// gpusliced's inventory changed.
    Inventory,
    /// Our slices changed under us, or the watch relisted.
    Slices,
    /// A failed sync's retry.
    Retry,
    /// Shutdown.
    Stop,
}

/// Which pool a publisher keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoolKind {
    /// The GPUs and slices of gpusliced's inventory.
    Gpus,
    /// The node's IMEX channels (`compute-domain.nvidia.com`).
    Channels,
}

/// The publishing loop's state.
pub struct Publisher {
    kube: kube::Client,
    gpusliced: GpuSlice,
    pool: PoolKind,
    driver: String,
    node_name: String,
    taint_unhealthy: bool,
    consumable_capacity: bool,
    resync: Duration,
    node_uid: Option<String>,
    last_published: i64,
    /// The pool (at generation 0) last written or found in sync.
    last_built: Option<Vec<ResourceSliceSpec>>,
    /// The API server must be asked at the next sync (start, a foreign
    /// change, a relist, a resync, a failure).
    dirty: bool,
    echoes: Echoes,
    /// The MIG-form probe: its findings so far, and its verdict once
    /// reached (kept until `mig_form` forgets it).
    mig_probe: crate::probe::MigFormProbe,
    /// The relists seen when the probe last ran.
    probed_at_relists: u64,
    /// gpusliced's form in force, as last logged.
    mig_in_force: Option<gpuslice_proto::gpuslice::v1::MigAdvertiseState>,
    /// ResourceSlice writes the API server took, ever: with the probe's
    /// answers, what tells a failed sync that moved on from one that did not.
    writes_taken: u64,
}

impl std::fmt::Debug for Publisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Publisher")
            .field("driver", &self.driver)
            .field("pool", &self.pool)
            .field("node_name", &self.node_name)
            .field("resync", &self.resync)
            .field("dirty", &self.dirty)
            .finish_non_exhaustive()
    }
}

impl Publisher {
    /// A publisher for `node_name`'s pool of `driver`, of GPUs.
    pub fn new(
        kube: kube::Client,
        gpusliced: GpuSlice,
        target: &PoolTarget<'_>,
        resync: Duration,
    ) -> Self {
        Self::of(PoolKind::Gpus, kube, gpusliced, target, resync)
    }

    /// A publisher of the `pool` of `target`.
    pub fn of(
        pool: PoolKind,
        kube: kube::Client,
        gpusliced: GpuSlice,
        target: &PoolTarget<'_>,
        resync: Duration,
    ) -> Self {
        Self {
            kube,
            gpusliced,
            pool,
            driver: target.driver.to_owned(),
            node_name: target.node_name.to_owned(),
            taint_unhealthy: target.taint_unhealthy,
            consumable_capacity: target.consumable_capacity,
            resync,
            node_uid: None,
            last_published: 0,
            last_built: None,
            dirty: true,
            echoes: Echoes::default(),
            mig_probe: crate::probe::MigFormProbe::default(),
            probed_at_relists: 0,
            mig_in_force: None,
            writes_taken: 0,
        }
    }

    /// Answers taken so far (writes and the probe's): grows while a sync
    /// that fails still moves on.
    fn progress(&self) -> u64 {
        self.writes_taken + self.mig_probe.answers() as u64
    }

    /// Syncs now, then whenever `triggers` say something changed, until
    /// shutdown.
    pub async fn run(mut self, mut triggers: Triggers) {
        let mut resync = tokio::time::interval(self.resync);
        resync.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut retries = Backoff::new(RETRY_MIN, RETRY_MAX.min(self.resync));
        let mut retry_at: Option<Instant> = None;
        let mut inventory_open = true;
        let mut slices_open = true;
        loop {
            let wake = tokio::select! {
                _ = triggers.shutdown.wait_for(|stop| *stop) => Wake::Stop,
                _ = resync.tick() => Wake::Resync,
                changed = triggers.inventory.changed(), if inventory_open => {
                    inventory_open = changed.is_ok();
                    Wake::Inventory
                }
                event = triggers.slices.recv(), if slices_open => match event {
                    Some(event) if self.echoes.is_own(&event) => continue,
                    Some(_) => Wake::Slices,
                    None => { slices_open = false; continue }
                },
                () = sleep_until(retry_at), if retry_at.is_some() => Wake::Retry,
            };
            if wake == Wake::Stop {
                return;
            }
            if wake != Wake::Inventory {
                self.dirty = true;
            }
            match settle(&mut triggers, &mut self.echoes).await {
                Settled::Stop => return,
                Settled::Ready { foreign } => self.dirty |= foreign,
            }
            let before = self.progress();
            match self.sync_once().await {
                Ok(report) => {
                    retry_at = None;
                    retries.reset();
                    self.report(wake, report);
                }
                Err(err) => {
                    self.dirty = true;
                    // A sync that got some answers before it failed starts
                    // the backoff over: the API server is there, and the
                    // next try starts from what it now holds (and what the
                    // probe kept). Only a try that moved nothing backs off
                    // further.
                    if self.progress() > before {
                        retries.reset();
                    }
                    let delay = retries.next_delay();
                    retry_at = Some(Instant::now() + delay);
                    warn!(driver = %self.driver, error = %err, retry_in = ?delay, "ResourceSlice sync failed");
                }
            }
        }
    }

    fn report(&self, wake: Wake, report: SyncReport) {
        if report.writes > 0 {
            info!(
                driver = %self.driver, node = %self.node_name, generation = report.generation,
                writes = report.writes, reason = ?wake, "published ResourceSlices"
            );
        } else {
            debug!(driver = %self.driver, generation = report.generation, listed = report.listed,
                   reason = ?wake, "ResourceSlices in sync");
        }
    }
}

/// How a settling wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Settled {
    /// Time to sync; `foreign`: a slice change not ours came meanwhile.
    Ready {
        /// The API server must be asked.
        foreign: bool,
    },
    /// Shutdown.
    Stop,
}

/// Waits until no change came for [`SETTLE`] (at most [`SETTLE_MAX`]),
/// taking in the changes that come meanwhile.
async fn settle(triggers: &mut Triggers, echoes: &mut Echoes) -> Settled {
    let latest = Instant::now() + SETTLE_MAX;
    let mut quiet_at = Instant::now() + SETTLE;
    let mut foreign = false;
    loop {
        tokio::select! {
            () = tokio::time::sleep_until(quiet_at.min(latest)) => return Settled::Ready { foreign },
            _ = triggers.shutdown.wait_for(|stop| *stop) => return Settled::Stop,
            changed = triggers.inventory.changed() => {
                if changed.is_err() {
                    return Settled::Ready { foreign };
                }
            }
            event = triggers.slices.recv() => match event {
                Some(event) => foreign |= !echoes.is_own(&event),
                None => return Settled::Ready { foreign },
            },
        }
        quiet_at = Instant::now() + SETTLE;
    }
}

/// Sleeps until `at` (forever without one; the caller guards on it).
async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests;
