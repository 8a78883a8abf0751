//! [`NodeReads`]: the one interface through which the modules that watch
//! the node from above the claim engine (the activity sampler, the advice,
//! the metrics) read it: the inventory, the claim records, the GPUs' usage
//! and the processes of the daemons gpusliced keeps, nothing that changes
//! anything. The engine implements it; a test
//! can hand in its own.

use std::sync::Arc;

use crate::claims::Engine;
use crate::gpu::UsageReads;
use crate::inventory::Inventory;
use crate::state::ClaimRecord;

/// What the watchers of the node read of it.
pub trait NodeReads: Send + Sync + std::fmt::Debug {
    /// The devices offered now.
    fn inventory(&self) -> Arc<Inventory>;
    /// Every claim record, prepared or being prepared.
    fn claims(&self) -> Vec<ClaimRecord>;
    /// The GPUs' processes, utilization and memory in use.
    fn usage_reads(&self) -> UsageReads<'_>;
    /// The pids of the daemons gpusliced keeps that use GPUs (each kind of
    /// access's; a server such a daemon starts is its child): gpuslice's own
    /// processes, known from its books, never from a process's environment.
    fn own_daemon_pids(&self) -> Vec<u32>;
}

impl NodeReads for Engine {
    fn inventory(&self) -> Arc<Inventory> {
        Engine::inventory(self)
    }

    fn claims(&self) -> Vec<ClaimRecord> {
        Engine::claims(self)
    }

    fn usage_reads(&self) -> UsageReads<'_> {
        Engine::usage_reads(self)
    }

    fn own_daemon_pids(&self) -> Vec<u32> {
        self.kinds.mps.daemon_pids(&self.cx())
    }
}
