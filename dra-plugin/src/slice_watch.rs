//! Watches the node's ResourceSlices of our driver, so that a deletion (the
//! kubelet deletes them when it restarts) or anyone else's edit brings a
//! republish at once rather than at the next resync.
//!
//! kube's watcher lists, then watches from the list's resourceVersion with
//! the field selector `spec.nodeName=<node>,spec.driver=<driver>` (the only
//! list and watch the node authorizer allows on resourceslices), resumes
//! after the server ends a watch, and lists again after a 410 Gone; errors
//! are retried with kube's default backoff. Events go to the publisher over
//! a bounded channel (a busy publisher holds the watch back rather than
//! letting a queue grow); a finished (re)list is reported as
//! [`SliceEvent::Relisted`]. Ends at shutdown.

use std::pin::pin;

use k8s_openapi::api::resource::v1::ResourceSlice;
use kube::Api;
use kube::runtime::watcher::{self, Event};
use kube::runtime::{WatchStreamExt, watcher as watch_slices};
use tokio::sync::{mpsc, watch};
use tokio_stream::StreamExt;
use tracing::{debug, warn};

use crate::publisher::SliceEvent;

/// The field selector the node authorizer requires on resourceslices.
pub fn selector(node_name: &str, driver: &str) -> String {
    format!("spec.nodeName={node_name},spec.driver={driver}")
}

/// Forwards the watch's events to `events` until `shutdown` turns true.
pub async fn run(
    kube: kube::Client,
    selector: String,
    events: mpsc::Sender<SliceEvent>,
    mut shutdown: watch::Receiver<bool>,
) {
    let config = watcher::Config::default().fields(&selector);
    let mut stream = pin!(watch_slices(Api::<ResourceSlice>::all(kube), config).default_backoff());
    let mut failing = false;
    loop {
        let next = tokio::select! {
            next = stream.next() => next,
            _ = shutdown.wait_for(|stop| *stop) => return,
        };
        let event = match next {
            Some(Ok(event)) => {
                failing = false;
                event
            }
            Some(Err(err)) => {
                if failing {
                    debug!(error = %err, "ResourceSlice watch still failing; retrying");
                } else {
                    warn!(error = %err, "ResourceSlice watch failed; retrying with backoff (the resync still runs)");
                }
                failing = true;
                continue;
            }
            None => return,
        };
        let Some(event) = slice_event(event) else {
            continue;
        };
        tokio::select! {
            sent = events.send(event) => if sent.is_err() { return },
            _ = shutdown.wait_for(|stop| *stop) => return,
        }
    }
}

/// What the publisher needs of a watch event (None: nothing to act on yet).
fn slice_event(event: Event<ResourceSlice>) -> Option<SliceEvent> {
    match event {
        Event::Apply(slice) => Some(SliceEvent::Applied {
            name: slice.metadata.name.unwrap_or_default(),
            resource_version: slice.metadata.resource_version.unwrap_or_default(),
        }),
        Event::Delete(slice) => Some(SliceEvent::Deleted {
            name: slice.metadata.name.unwrap_or_default(),
            uid: slice.metadata.uid.unwrap_or_default(),
        }),
        Event::InitDone => Some(SliceEvent::Relisted),
        Event::Init | Event::InitApply(_) => None,
    }
}
