//! [`ActivityHandle`]: where the sampler publishes each snapshot and where
//! the metrics, the gRPC API and the status line read the latest one, and
//! the usage history the sampler feeds (for the advice). A
//! reader never waits for a sample: it takes the last published `Arc`. A
//! caller that wants a sample taken now ([`ActivityHandle::fresh`]) asks the
//! sampler's thread for one and waits for it; the thread takes it after the
//! sample in flight, so two samples never run at once, and publishes it as
//! the latest. Each publish is also signalled on a `tokio::sync::watch` of
//! [`Sampled`] (WatchActivity): one notice per sample, a slow reader seeing
//! only the latest.

use std::sync::mpsc::Sender;
use std::sync::{Arc, PoisonError, RwLock};

use tokio::sync::{oneshot, watch};

use super::ActivitySnapshot;
use crate::advice::keeper::SharedHistory;

/// What the sampler's thread is asked for (see `task`).
#[derive(Debug)]
pub(super) enum Ask {
    /// A sample now, answered on the channel once published.
    Sample(oneshot::Sender<Arc<ActivitySnapshot>>),
    /// Stop sampling.
    Stop,
}

/// What a publish signals: the sample's time and conditions generation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sampled {
    /// [`ActivitySnapshot::sampled_at_ms`].
    pub sampled_at_ms: i64,
    /// [`ActivitySnapshot::conditions_generation`].
    pub conditions_generation: u64,
}

impl Sampled {
    fn of(snapshot: &ActivitySnapshot) -> Self {
        Self {
            sampled_at_ms: snapshot.sampled_at_ms,
            conditions_generation: snapshot.conditions_generation,
        }
    }
}

/// The latest snapshot, shared, and the way to ask for a fresh one. Cheap
/// to clone.
#[derive(Debug, Clone)]
pub struct ActivityHandle {
    latest: Arc<RwLock<Arc<ActivitySnapshot>>>,
    /// The sampler's thread; `None` when nothing samples (sampling off).
    sampler: Option<Sender<Ask>>,
    /// Signals each publish.
    published: Arc<watch::Sender<Sampled>>,
    /// The usage history the sampler feeds; `None` when nothing samples.
    history: Option<SharedHistory>,
}

impl Default for ActivityHandle {
    fn default() -> Self {
        Self::new(ActivitySnapshot::default())
    }
}

impl ActivityHandle {
    /// A handle holding `snapshot` (for sampling off: `enabled` false),
    /// with no sampler to ask for fresh samples.
    pub fn new(snapshot: ActivitySnapshot) -> Self {
        let (published, _) = watch::channel(Sampled::of(&snapshot));
        Self {
            latest: Arc::new(RwLock::new(Arc::new(snapshot))),
            sampler: None,
            published: Arc::new(published),
            history: None,
        }
    }

    /// The same handle, showing the usage history the sampler feeds.
    #[must_use]
    pub fn with_history(mut self, history: SharedHistory) -> Self {
        self.history = Some(history);
        self
    }

    /// The usage history, when the sampler keeps one.
    pub fn history(&self) -> Option<&SharedHistory> {
        self.history.as_ref()
    }

    /// The same handle, asking `sampler` for fresh samples.
    pub(super) fn with_sampler(mut self, sampler: Sender<Ask>) -> Self {
        self.sampler = Some(sampler);
        self
    }

    /// The last published snapshot.
    pub fn latest(&self) -> Arc<ActivitySnapshot> {
        self.latest
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// A sample taken now, once the sampler's thread has taken and
    /// published it (callers that ask while one is in flight wait for the
    /// next, and callers that ask together share it). The latest snapshot
    /// where nothing samples: sampling off, or the sampler stopped.
    pub async fn fresh(&self) -> Arc<ActivitySnapshot> {
        let Some(sampler) = &self.sampler else {
            return self.latest();
        };
        let (reply, answer) = oneshot::channel();
        if sampler.send(Ask::Sample(reply)).is_err() {
            return self.latest();
        }
        match answer.await {
            Ok(snapshot) => snapshot,
            Err(_) => self.latest(),
        }
    }

    /// Replaces the snapshot readers see, and signals it to the watchers.
    pub fn publish(&self, snapshot: impl Into<Arc<ActivitySnapshot>>) {
        let snapshot = snapshot.into();
        let sampled = Sampled::of(&snapshot);
        *self.latest.write().unwrap_or_else(PoisonError::into_inner) = snapshot;
        self.published.send_replace(sampled);
    }

    /// Each publish from now on, starting with the latest (WatchActivity).
    pub fn watch(&self) -> watch::Receiver<Sampled> {
        self.published.subscribe()
    }
}
