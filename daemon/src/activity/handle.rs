//! [`ActivityHandle`]: where the sampler publishes each snapshot and where
//! the metrics, the gRPC API and the status line read the latest one. A
//! reader never waits for a sample: it takes the last published `Arc`.

use std::sync::{Arc, PoisonError, RwLock};

use super::ActivitySnapshot;

/// The latest snapshot, shared. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct ActivityHandle {
    latest: Arc<RwLock<Arc<ActivitySnapshot>>>,
}

impl ActivityHandle {
    /// A handle holding `snapshot` (for sampling off: `enabled` false).
    pub fn new(snapshot: ActivitySnapshot) -> Self {
        Self {
            latest: Arc::new(RwLock::new(Arc::new(snapshot))),
        }
    }

    /// The last published snapshot.
    pub fn latest(&self) -> Arc<ActivitySnapshot> {
        self.latest
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Replaces the snapshot readers see.
    pub fn publish(&self, snapshot: ActivitySnapshot) {
        *self.latest.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(snapshot);
    }
}
