//! Which watch events are the echo of the publisher's own writes, so that
//! they do not trigger another sync, while anyone else's change does.
//!
//! A create or update answers with the slice's new resourceVersion; the
//! watch later reports the same (name, resourceVersion). A delete is known
//! by name and uid. Each echo is expected once and forgotten when seen. The
//! set is bounded: past [`MAX_PENDING`] it is emptied, and the echoes still
//! to come then count as foreign, costing one needless (and harmless) sync.
//! A relist (the watch restarted; events may have been missed) is never an
//! echo; relists are counted (every slice event passes here), since the
//! publisher probes the API server again after one. Pure.

use std::collections::HashSet;

/// Most echoes awaited at once.
pub const MAX_PENDING: usize = 1024;

/// What the slice watch reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SliceEvent {
    /// A slice of ours was created or changed.
    Applied {
        /// metadata.name.
        name: String,
        /// metadata.resourceVersion.
        resource_version: String,
    },
    /// A slice of ours was deleted.
    Deleted {
        /// metadata.name.
        name: String,
        /// metadata.uid.
        uid: String,
    },
    /// The watch listed the slices again (it started, or fell too far
    /// behind): whatever happened meanwhile was not reported one by one.
    Relisted,
}

/// The echoes still expected.
#[derive(Debug, Default)]
pub struct Echoes {
    applied: HashSet<(String, String)>,
    deleted: HashSet<(String, String)>,
    relists: u64,
}

impl Echoes {
    /// We created or updated `name`; the API answered `resource_version`.
    pub fn wrote(&mut self, name: &str, resource_version: &str) {
        self.bound();
        self.applied
            .insert((name.to_owned(), resource_version.to_owned()));
    }

    /// We deleted `name`, whose uid was `uid`.
    pub fn deleted(&mut self, name: &str, uid: &str) {
        self.bound();
        self.deleted.insert((name.to_owned(), uid.to_owned()));
    }

    /// True when `event` is the echo of one of our writes (forgotten now);
    /// false when someone else changed the slices, or events were missed.
    pub fn is_own(&mut self, event: &SliceEvent) -> bool {
        match event {
            SliceEvent::Applied {
                name,
                resource_version,
            } => self
                .applied
                .remove(&(name.clone(), resource_version.clone())),
            SliceEvent::Deleted { name, uid } => self.deleted.remove(&(name.clone(), uid.clone())),
            SliceEvent::Relisted => {
                self.relists = self.relists.wrapping_add(1);
                false
            }
        }
    }

    /// How many relists were seen.
    pub fn relists(&self) -> u64 {
        self.relists
    }

    /// How many echoes are awaited.
    pub fn pending(&self) -> usize {
        self.applied.len() + self.deleted.len()
    }

    fn bound(&mut self) {
        if self.pending() >= MAX_PENDING {
            self.applied.clear();
            self.deleted.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Echoes, MAX_PENDING, SliceEvent};

    fn applied(name: &str, rv: &str) -> SliceEvent {
        SliceEvent::Applied {
            name: name.to_owned(),
            resource_version: rv.to_owned(),
        }
    }

    fn deleted(name: &str, uid: &str) -> SliceEvent {
        SliceEvent::Deleted {
            name: name.to_owned(),
            uid: uid.to_owned(),
        }
    }

    #[test]
    fn our_writes_echo_once_and_everything_else_is_foreign() {
        let mut echoes = Echoes::default();
        echoes.wrote("s-1", "101");
        echoes.wrote("s-1", "105");
        echoes.deleted("s-2", "uid-2");
        assert!(echoes.is_own(&applied("s-1", "105")));
        assert!(echoes.is_own(&applied("s-1", "101")), "in any order");
        assert!(!echoes.is_own(&applied("s-1", "101")), "only once");
        assert!(
            !echoes.is_own(&applied("s-1", "106")),
            "someone else's edit"
        );
        assert!(
            !echoes.is_own(&deleted("s-1", "uid-1")),
            "someone else's delete"
        );
        assert!(echoes.is_own(&deleted("s-2", "uid-2")));
        assert!(!echoes.is_own(&SliceEvent::Relisted));
        assert_eq!(echoes.pending(), 0);
        assert_eq!(echoes.relists(), 1);
    }

    #[test]
    fn the_awaited_set_is_bounded() {
        let mut echoes = Echoes::default();
        for rv in 0..=MAX_PENDING {
            echoes.wrote("s", &rv.to_string());
        }
        assert!(echoes.pending() <= MAX_PENDING);
        assert!(echoes.is_own(&applied("s", &MAX_PENDING.to_string())));
    }
}
