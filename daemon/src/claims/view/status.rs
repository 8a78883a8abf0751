//! What GetStatus shows of the engine itself: the problems an operator
//! should act on, the uptime, the settings in force and the state folder.

use super::super::{Engine, EngineSettings, lock};

impl Engine {
    /// Problems an operator should act on: missing driver files, GPUs that
    /// cannot be read, records that could not be read or matched, each kind
    /// of access's (MIG set-up, time-slices not supported, MPS daemons not
    /// running), degraded shared GPUs and what start-up could not bring
    /// back, unhealthy devices and the claims on them.
    pub fn problems(&self) -> Vec<String> {
        let mut all = self.env.driver().problems.clone();
        all.extend(self.inventory().unreadable.iter().map(|u| u.problem()));
        all.extend(lock(&self.problems).iter().cloned());
        let cx = self.cx();
        for kind in self.kinds.in_order() {
            all.extend(kind.node_problems(&cx));
        }
        all.extend(self.kinds.shared.node_problems());
        all.extend(self.health_problems());
        all
    }

    /// Seconds since the engine was built.
    pub(crate) fn uptime_seconds(&self) -> u64 {
        self.env.started.elapsed().as_secs()
    }

    /// Settings in force.
    pub(crate) fn settings(&self) -> &EngineSettings {
        &self.env.settings
    }

    /// The state folder (parent of the records folder).
    pub fn state_dir(&self) -> &std::path::Path {
        self.env.state_dir()
    }
}
