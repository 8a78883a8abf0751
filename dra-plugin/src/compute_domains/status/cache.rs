//! The node's watch caches: kube's watchers and reflector stores of every
//! ComputeDomain (all namespaces), of the ResourceClaimTemplates made for
//! domains (label `resource.nvidia.com/computeDomain`, all namespaces) and
//! of the membership Leases (label `gpuslice.dev/compute-domain`, in the
//! plugin's namespace). One list each at start (again after a 410 Gone),
//! then watches: no periodic list. Every event wakes [`Caches::changed`];
//! [`Caches::snapshot`] reads the three stores into plain values, each
//! ComputeDomain through [`super::read`] (one that cannot be read is
//! reported, never fatal).

use std::collections::BTreeMap;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use gpuslice_compute_domain::COMPUTE_DOMAIN_LABEL;
use gpuslice_compute_domain::coordinate::{
    LEASE_CLIQUE_LABEL, LEASE_DOMAIN_LABEL, LEASE_NODE_LABEL,
};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::resource::v1::ResourceClaimTemplate;
use kube::Api;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::reflector::{self, Lookup, Store, store::Writer};
use kube::runtime::{WatchStreamExt, watcher};
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;
use tokio_stream::StreamExt;

use super::read::{DomainSeen, read_domain};

/// The ComputeDomain resource.
pub fn compute_domains() -> ApiResource {
    let gvk = GroupVersionKind::gvk("resource.nvidia.com", "v1beta1", "ComputeDomain");
    ApiResource::from_gvk_with_plural(&gvk, "computedomains")
}

/// The three stores and what tells of their changes.
#[derive(Clone)]
pub struct Caches {
    domains: Store<DynamicObject>,
    templates: Store<ResourceClaimTemplate>,
    leases: Store<Lease>,
    synced: Arc<[AtomicBool; 3]>,
    /// Woken by every event of any of them.
    pub changed: Arc<Notify>,
}

impl std::fmt::Debug for Caches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Caches")
            .field("domains", &self.domains.len())
            .field("templates", &self.templates.len())
            .field("leases", &self.leases.len())
            .finish_non_exhaustive()
    }
}

/// What the stores hold, read.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Every ComputeDomain that reads.
    pub domains: Vec<DomainSeen>,
    /// The domains' templates: (namespace, name) to the uid they are
    /// labelled with.
    pub templates: BTreeMap<(String, String), String>,
    /// Membership Leases: the nodes holding one with the clique each is
    /// labelled with (empty when not), by domain uid.
    pub leases: BTreeMap<String, BTreeMap<String, String>>,
    /// The ComputeDomains that do not read, with why.
    pub unreadable: Vec<String>,
}

impl Caches {
    /// Starts the three watchers over `client` (Leases in
    /// `lease_namespace`), until `stop`.
    pub fn start(
        client: &kube::Client,
        lease_namespace: &str,
        stop: &watch::Receiver<bool>,
    ) -> (Self, Vec<JoinHandle<()>>) {
        let changed = Arc::new(Notify::new());
        let synced: Arc<[AtomicBool; 3]> = Arc::new(Default::default());
        let resource = compute_domains();
        let writer = Writer::new(resource.clone());
        let domains = writer.as_reader();
        let domains_api = Api::<DynamicObject>::all_with(client.clone(), &resource);
        let (templates, template_writer) = reflector::store();
        let templates_api = Api::<ResourceClaimTemplate>::all(client.clone());
        let (leases, lease_writer) = reflector::store();
        let leases_api = Api::<Lease>::namespaced(client.clone(), lease_namespace);
        let feed = |n: usize| Feed {
            changed: Arc::clone(&changed),
            synced: Arc::clone(&synced),
            which: n,
            stop: stop.clone(),
        };
        let tasks = vec![
            tokio::spawn(feed(0).run(
                "ComputeDomain",
                writer,
                watcher(domains_api, watcher::Config::default()),
            )),
            tokio::spawn(feed(1).run(
                "ResourceClaimTemplate",
                template_writer,
                watcher(
                    templates_api,
                    watcher::Config::default().labels(COMPUTE_DOMAIN_LABEL),
                ),
            )),
            tokio::spawn(feed(2).run(
                "membership Lease",
                lease_writer,
                watcher(
                    leases_api,
                    watcher::Config::default().labels(LEASE_DOMAIN_LABEL),
                ),
            )),
        ];
        let caches = Self {
            domains,
            templates,
            leases,
            synced,
            changed,
        };
        (caches, tasks)
    }

    /// Whether each store has had its first list.
    pub fn synced(&self) -> bool {
        self.synced.iter().all(|s| s.load(Ordering::Acquire))
    }

    /// Whether the ComputeDomain store has had its first list.
    pub fn domains_synced(&self) -> bool {
        self.synced[0].load(Ordering::Acquire)
    }

    /// Every ComputeDomain in the cache, as stored.
    pub fn domain_objects(&self) -> Vec<Arc<DynamicObject>> {
        self.domains.state()
    }

    /// The three stores read.
    pub fn snapshot(&self) -> Snapshot {
        let mut snapshot = Snapshot::default();
        for object in self.domains.state() {
            match read_domain(&object) {
                Ok(domain) => snapshot.domains.push(domain),
                Err(why) => snapshot.unreadable.push(why),
            }
        }
        snapshot.domains.sort_by(|a, b| a.uid.cmp(&b.uid));
        for template in self.templates.state() {
            let meta = &template.metadata;
            let uid = (meta.labels.as_ref()).and_then(|l| l.get(COMPUTE_DOMAIN_LABEL));
            if let (Some(ns), Some(name), Some(uid)) = (&meta.namespace, &meta.name, uid) {
                (snapshot.templates).insert((ns.clone(), name.clone()), uid.clone());
            }
        }
        for lease in self.leases.state() {
            let Some(labels) = lease.metadata.labels.as_ref() else {
                continue;
            };
            if let (Some(uid), Some(node)) =
                (labels.get(LEASE_DOMAIN_LABEL), labels.get(LEASE_NODE_LABEL))
            {
                let clique = labels.get(LEASE_CLIQUE_LABEL).cloned().unwrap_or_default();
                let holders = snapshot.leases.entry(uid.clone()).or_default();
                holders.insert(node.clone(), clique);
            }
        }
        snapshot
    }
}

/// One watcher feeding its store.
struct Feed {
    changed: Arc<Notify>,
    synced: Arc<[AtomicBool; 3]>,
    which: usize,
    stop: watch::Receiver<bool>,
}

impl Feed {
    async fn run<K, S>(mut self, what: &'static str, writer: Writer<K>, stream: S)
    where
        S: tokio_stream::Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send,
        K: Lookup + Clone + std::fmt::Debug + Send + Sync + 'static,
        K::DynamicType: Eq + std::hash::Hash + Clone,
    {
        let mut events = pin!(reflector::reflector(writer, stream.default_backoff()));
        let mut failing = false;
        loop {
            let next = tokio::select! {
                next = events.next() => next,
                _ = self.stop.wait_for(|stop| *stop) => return,
            };
            match next {
                Some(Ok(event)) => {
                    failing = false;
                    if matches!(event, watcher::Event::InitDone) {
                        self.synced[self.which].store(true, Ordering::Release);
                    }
                    self.changed.notify_one();
                }
                Some(Err(err)) if !failing => {
                    failing = true;
                    tracing::warn!(error = %err, kind = what, "watch failed; retrying with backoff");
                }
                Some(Err(_)) => {}
                None => return,
            }
        }
    }
}
