//! What the node's claims, MIG slices and MPS daemons use right now, as plain
//! data: the one snapshot the metrics gauges are computed from (at scrape or
//! textfile-write time), so there is no second count to drift from the table.
//! Each kind of access gives its own figures: the claims' kinds from the
//! table, the MIG slices from the MIG kind (`claims/access/mig/usage.rs`),
//! the MPS daemons' states from the MPS kind; the unhealthy devices from
//! the node's view.

pub use crate::claims::access::mig::{SliceState, SliceUse};
use crate::claims::{Engine, lock};
use crate::health::Cause;
use crate::state::AccessKind;
use crate::supervise::DaemonState;

/// The snapshot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeUsage {
    /// The kind of every prepared claim.
    pub claims: Vec<AccessKind>,
    /// Every MIG slice held, idle or offered, on GPUs in MIG mode.
    pub mig_slices: Vec<SliceUse>,
    /// The state of every MPS control daemon.
    pub mps_daemons: Vec<DaemonState>,
    /// Whole GPUs in the inventory.
    pub gpus: usize,
    /// Problems an operator should act on ([`Engine::problems`]).
    pub problems: usize,
    /// Every unhealthy device (whole GPUs, slices, GPUs the scan could not
    /// read) by inventory name, with what its fault is: "xid", "ecc" or
    /// "gpu_lost".
    pub unhealthy: Vec<(String, &'static str)>,
}

impl Engine {
    /// What the node uses now; see the module doc.
    pub(crate) fn usage(&self) -> NodeUsage {
        let inventory = self.inventory();
        let cx = self.cx();
        let claims = lock(&self.table).iter().map(AccessKind::of_claim).collect();
        NodeUsage {
            claims,
            mig_slices: self.kinds.mig.slice_uses(&cx, &inventory),
            mps_daemons: self.kinds.mps.daemon_states(&cx),
            gpus: inventory.gpus.len(),
            problems: self.problems().len(),
            unhealthy: self
                .view()
                .unhealthy_devices()
                .into_iter()
                .map(|u| {
                    let cause = match u.fault.cause {
                        Cause::Xid(_) => "xid",
                        Cause::DoubleBitEcc => "ecc",
                        Cause::GpuLost => "gpu_lost",
                    };
                    (u.device, cause)
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests;
