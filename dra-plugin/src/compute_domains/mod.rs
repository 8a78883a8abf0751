//! The second driver, `compute-domain.nvidia.com`: NVIDIA's ComputeDomain
//! IMEX channels on this node, served beside the GPU driver where the node
//! is on a multi-node NVLink fabric.
//!
//! Whether it is served (`[compute_domains] enabled`, [`serves`]): `auto`
//! asks gpusliced's `ListDomains` (again with backoff while gpusliced is not
//! there) and serves when it answers a clique; without one (or from a
//! gpusliced that has no `ListDomains`) it says so in the log once and
//! neither registers nor publishes. Served, it is a driver
//! of its own ([`crate::driver`]: its DRA and registration sockets named
//! after it), whose claims go to gpusliced's `PrepareChannel` and
//! `UnprepareChannel` ([`crate::dra::Forward::Channels`]), and a publisher
//! ([`crate::publisher::PoolKind::Channels`]) of the node's pool of channels
//! ([`pool`]: every channel, as NVIDIA's plugin offers them), kept by its own
//! slice watch, and the loop that keeps the ComputeDomains with the other
//! nodes' plugins ([`status`], as `[compute_domains] kubeconfig`'s
//! identity), started first: a channel claim's prepare finds its domain in
//! that loop's watch cache ([`status::lookup`]) and wakes it. A refused
//! registration or a server that ends is reported to `run` (the process
//! ends, as for the GPU driver).

pub mod status;

use std::sync::Arc;
use std::time::Duration;

use gpuslice_compute_domain::channels::{CHANNEL_COUNT, channel_device};
use gpuslice_proto::gpuslice::v1 as pb;
use tokio::sync::{mpsc, oneshot, watch};
use tonic::transport::Server;
use tracing::{info, warn};

use crate::backoff::Backoff;
use crate::config::{COMPUTE_DOMAIN_DRIVER, ComputeDomainsMode};
use crate::dra::{ChannelSide, DraCore, Forward, v1::V1Service, v1beta1::V1beta1Service};
use crate::driver::{DRAIN, DriverError, DriverSockets, ServedDriver};
use crate::gpusliced::GpuSlice;
use crate::publisher::{PoolKind, Publisher, Triggers};
use crate::slice_watch;
use crate::slices::{BuiltPool, PoolTarget, device_pool};

/// The driver's name.
pub const DRIVER: &str = COMPUTE_DOMAIN_DRIVER;

/// The first wait before asking gpusliced again.
const ASK_MIN: Duration = Duration::from_millis(250);
/// The longest wait before asking gpusliced again.
const ASK_MAX: Duration = Duration::from_secs(10);
/// Slice watch events waiting for the publisher.
const SLICE_EVENTS: usize = 64;

/// The node's channel pool (at generation 0): channels 0 to 2047, in order,
/// 128 to a slice.
pub fn pool(node_name: &str) -> BuiltPool {
    let target = PoolTarget {
        driver: DRIVER,
        node_name,
        taint_unhealthy: false,
        consumable_capacity: false,
    };
    let devices = (0..CHANNEL_COUNT).map(channel_device).collect();
    BuiltPool {
        slices: device_pool(&target, devices, 0),
        skipped: Vec::new(),
    }
}

/// Whether the driver is served under `mode` on a node in `clique` (empty:
/// no multi-node NVLink fabric).
pub fn serves(mode: ComputeDomainsMode, clique: &str) -> bool {
    match mode {
        ComputeDomainsMode::On => true,
        ComputeDomainsMode::Off => false,
        ComputeDomainsMode::Auto => !clique.is_empty(),
    }
}

/// What serving the driver takes.
#[derive(Clone)]
pub struct Setup {
    /// `[compute_domains] enabled`.
    pub mode: ComputeDomainsMode,
    /// The API-server client.
    pub kube: kube::Client,
    /// The client of the identity that keeps ComputeDomains
    /// (`[compute_domains] kubeconfig`, else `kube`).
    pub domains_kube: kube::Client,
    /// gpusliced's client.
    pub gpusliced: GpuSlice,
    /// The Node.
    pub node_name: String,
    /// `[compute_domains] lease_namespace`: where the membership Leases are.
    pub lease_namespace: String,
    /// The driver's sockets.
    pub sockets: DriverSockets,
    /// The publisher's full compare period.
    pub resync: Duration,
}

impl std::fmt::Debug for Setup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Setup")
            .field("mode", &self.mode)
            .field("node_name", &self.node_name)
            .field("sockets", &self.sockets)
            .finish_non_exhaustive()
    }
}

/// Serves the driver if [`serves`] says so, until `stopped`; a failure goes
/// to `failed` at once (then it waits for `stopped` to close its sockets).
pub async fn run(
    setup: Setup,
    mut stopped: watch::Receiver<bool>,
    failed: oneshot::Sender<DriverError>,
) {
    let clique = match setup.mode {
        ComputeDomainsMode::Auto => match ask_clique(setup.gpusliced.clone(), &stopped).await {
            Some(clique) => clique,
            None => return,
        },
        _ => String::new(),
    };
    if !serves(setup.mode, &clique) {
        if setup.mode == ComputeDomainsMode::Auto {
            info!(
                driver = DRIVER,
                "gpusliced reports no multi-node NVLink clique: not registering or publishing \
                 this driver ([compute_domains] enabled = \"on\" serves it anyway)"
            );
        }
        return;
    }
    let (keeper, keeping) = status::task::start(
        status::task::Setup {
            kube: setup.domains_kube.clone(),
            gpusliced: setup.gpusliced.clone(),
            node: setup.node_name.clone(),
            lease_namespace: setup.lease_namespace.clone(),
        },
        &stopped,
    );
    let core = Arc::new(
        DraCore::new(
            DRIVER.to_owned(),
            Forward::Channels,
            setup.kube.clone(),
            setup.gpusliced.clone(),
        )
        .with_channels(ChannelSide {
            node: setup.node_name.clone(),
            lookup: keeper.lookup,
            wake: keeper.wake,
        }),
    );
    let router = Server::builder()
        .add_service(V1Service::server(Arc::clone(&core)))
        .add_service(V1beta1Service::server(core));
    let mut served = match ServedDriver::start(DRIVER, router, &setup.sockets, &stopped) {
        Ok(served) => served,
        Err(err) => {
            let _ = failed.send(err);
            return;
        }
    };
    info!(driver = DRIVER, clique = %clique, "serving ComputeDomain channels");
    let mut publishing = Vec::from(publish(&setup, &stopped));
    publishing.extend(keeping.into_iter().map(|task| ("ComputeDomains", task)));
    let mut stop = stopped.clone();
    let failure = tokio::select! {
        _ = stop.wait_for(|stop| *stop) => None,
        err = served.failed() => Some(err),
    };
    if let Some(err) = failure {
        let _ = failed.send(err);
        let _ = stopped.wait_for(|stop| *stop).await;
    }
    served.close().await;
    for (name, task) in publishing {
        if tokio::time::timeout(DRAIN, task).await.is_err() {
            warn!(
                driver = DRIVER,
                task = name,
                "did not stop in time; abandoned"
            );
        }
    }
}

/// Starts the channel pool's publisher and its slice watch.
fn publish(
    setup: &Setup,
    stopped: &watch::Receiver<bool>,
) -> [(&'static str, tokio::task::JoinHandle<()>); 2] {
    let target = PoolTarget {
        driver: DRIVER,
        node_name: &setup.node_name,
        taint_unhealthy: false,
        consumable_capacity: false,
    };
    let publisher = Publisher::of(
        PoolKind::Channels,
        setup.kube.clone(),
        setup.gpusliced.clone(),
        &target,
        setup.resync,
    );
    let (events, slices) = mpsc::channel(SLICE_EVENTS);
    let watching = tokio::spawn(slice_watch::run(
        setup.kube.clone(),
        slice_watch::selector(&setup.node_name, DRIVER),
        events,
        stopped.clone(),
    ));
    let shutdown = stopped.clone();
    let publishing = tokio::spawn(async move {
        // The pool does not follow the inventory: a channel that never moves.
        let (_fixed, inventory) = watch::channel(0u64);
        publisher
            .run(Triggers {
                inventory,
                slices,
                shutdown,
            })
            .await;
    });
    [
        ("ResourceSlice publisher", publishing),
        ("ResourceSlice watch", watching),
    ]
}

/// gpusliced's clique, asked until it answers (None: shutdown first).
async fn ask_clique(mut gpusliced: GpuSlice, stopped: &watch::Receiver<bool>) -> Option<String> {
    let mut stopped = stopped.clone();
    let mut backoff = Backoff::new(ASK_MIN, ASK_MAX);
    let mut warned = false;
    loop {
        let asked = tokio::select! {
            _ = stopped.wait_for(|stop| *stop) => return None,
            asked = gpusliced.list_domains(pb::ListDomainsRequest {}) => asked,
        };
        match asked {
            Ok(answer) => return Some(answer.into_inner().clique),
            Err(status) if status.code() == tonic::Code::Unimplemented => {
                // A gpusliced from before ComputeDomains serves no channel.
                info!(
                    driver = DRIVER,
                    "gpusliced has no ListDomains (an older release)"
                );
                return Some(String::new());
            }
            Err(status) if !warned => {
                warned = true;
                warn!(driver = DRIVER, code = ?status.code(), error = %status.message(),
                      "cannot ask gpusliced for the node's NVLink clique; asking again");
            }
            Err(_) => {}
        }
        tokio::select! {
            _ = stopped.wait_for(|stop| *stop) => return None,
            () = tokio::time::sleep(backoff.next_delay()) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{pool, serves};
    use crate::config::ComputeDomainsMode;

    #[test]
    fn the_pool_is_every_channel_once_in_16_slices_of_128() {
        let built = pool("node-1");
        assert_eq!(built.slices.len(), 16);
        let mut next = 0;
        for slice in &built.slices {
            assert_eq!(slice.driver, "compute-domain.nvidia.com");
            assert_eq!(slice.pool.name, "node-1");
            assert_eq!(slice.node_name.as_deref(), Some("node-1"));
            assert_eq!(slice.pool.resource_slice_count, 16);
            let devices = slice.devices.as_deref().unwrap_or_default();
            assert_eq!(devices.len(), 128);
            for device in devices {
                assert_eq!(device.name, format!("channel-{next}"));
                let attributes = device.attributes.as_ref().expect("attributes");
                assert_eq!(attributes["id"].int, Some(next));
                assert_eq!(attributes["type"].string.as_deref(), Some("channel"));
                next += 1;
            }
        }
        assert_eq!(next, 2048);
    }

    #[test]
    fn auto_serves_only_in_a_clique_on_and_off_whatever_it_is() {
        let clique = "4f3c2b1a-5d6e-4f70-8a9b-0c1d2e3f4a5b.0";
        assert!(serves(ComputeDomainsMode::Auto, clique));
        assert!(!serves(ComputeDomainsMode::Auto, ""));
        assert!(serves(ComputeDomainsMode::On, ""));
        assert!(!serves(ComputeDomainsMode::Off, clique));
    }
}
