//! The kinds of access a claim can have to a device, each a component with
//! the same verbs: exclusive (a whole GPU, this claim's alone), a MIG slice,
//! time-slicing and MPS. The verbs (`prepare`, `unprepare`, `reconcile`)
//! drive them through [`Access`] in one fixed order ([`Kinds::in_order`]:
//! exclusive, MIG, time-slicing, MPS; undo runs the other way), so learning
//! one kind teaches all.
//!
//! Each kind owns its books (MIG: its config, rescan lock and problems;
//! time-slicing and MPS: the sharing books), its hardware or process steps
//! and its piece of a claim's CDI spec. It must not write records or CDI
//! files, and must not call back into the verbs or read the engine's view.

pub(super) mod exclusive;
pub(crate) mod mig;
pub(crate) mod mps;
pub(super) mod shared_gpu;
pub(crate) mod timeslicing;

use std::sync::Mutex;

use super::env::Env;
use super::error::ClaimError;
use super::table::ClaimTable;
use crate::cdi_build::ClaimDevice;
use crate::inventory::DeviceRef;
use crate::state::{AccessKind, ClaimRecord};

pub(super) use exclusive::Exclusive;
pub(super) use mig::Mig;
pub(super) use mps::Mps;
pub(super) use shared_gpu::SharedGpus;
pub(super) use timeslicing::TimeSlicing;

/// What a kind's verb may read: the engine's environment, the claim table,
/// and what the sharing kinds share (tools, books, GPU locks).
#[derive(Debug, Clone, Copy)]
pub(super) struct Cx<'a> {
    pub(super) env: &'a Env,
    pub(super) table: &'a Mutex<ClaimTable>,
    pub(super) shared: &'a SharedGpus,
}

/// What a start-up sweep did: effects of claims that are gone, stopped.
#[derive(Debug, Default)]
pub(super) struct Swept {
    /// How many (MPS daemons, ...) were stopped.
    pub(super) stopped: usize,
    /// What could not be swept, for an operator.
    pub(super) problems: Vec<String>,
}

/// What a claim did to the node: the verb a kind's
/// [`Access::after_change`] follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Change {
    /// The claim was prepared.
    Prepared,
    /// The claim was unprepared.
    Unprepared,
}

/// What a start-up restore did to one claim.
#[derive(Debug, Default)]
pub(super) struct Restored {
    /// What could not be brought back, for an operator.
    pub(super) problems: Vec<String>,
    /// The record changed (it must be saved and its spec checked).
    pub(super) record_changed: bool,
}

/// The verbs of one kind of access. `devices` are the request's devices in
/// the current inventory, in the record's order.
pub(super) trait Access: Send + Sync + std::fmt::Debug {
    /// Which kind this is.
    fn kind(&self) -> AccessKind;

    /// Whether a new claim needs this kind's steps (prepare only).
    fn takes_part(&self, record: &ClaimRecord, devices: &[DeviceRef<'_>]) -> bool;

    /// Prepare, before anything is reserved: refuses a claim this kind
    /// cannot serve on these devices, whatever other claims hold (MIG: a
    /// GPU its `[mig]` manages asked for whole where only its slices are
    /// offered, or asked to be shared). Every kind is asked, whether it
    /// takes part or not.
    fn admit(
        &self,
        _cx: &Cx<'_>,
        _record: &ClaimRecord,
        _devices: &[DeviceRef<'_>],
    ) -> Result<(), ClaimError> {
        Ok(())
    }

    /// Checks against other claims and books this claim; fills what apply
    /// will do into the record. Reads hardware and changes none, except what
    /// MIG's reserve does (MIG mode on, a made-ahead slice's compute
    /// instance).
    fn reserve(
        &self,
        cx: &Cx<'_>,
        record: &mut ClaimRecord,
        devices: &[DeviceRef<'_>],
    ) -> Result<(), ClaimError>;

    /// Undoes reserve when apply did not run. Idempotent.
    fn unreserve(&self, cx: &Cx<'_>, record: &ClaimRecord);

    /// The hardware or process steps; on error leaves none of its own
    /// behind.
    fn apply(
        &self,
        cx: &Cx<'_>,
        record: &mut ClaimRecord,
        devices: &[DeviceRef<'_>],
    ) -> Result<(), ClaimError>;

    /// Undoes apply and reserve. An error only where the claim must stay (a
    /// MIG slice in use); the sharing kinds never fail (they mark the GPU
    /// degraded instead).
    fn release(&self, cx: &Cx<'_>, record: &ClaimRecord) -> Result<(), ClaimError>;

    /// Start-up, `preparing` record: undoes what a prepare cut short may
    /// have done; the problems left, or an error when the record must stay.
    fn roll_back(&self, cx: &Cx<'_>, record: &ClaimRecord) -> Result<Vec<String>, ClaimError>;

    /// After a claim came or went, with the claim table up to date: what
    /// the kind keeps of the node follows (MIG: its offer, when the
    /// claim's slices or a GPU's MIG mode changed).
    fn after_change(&self, _cx: &Cx<'_>, _record: &ClaimRecord, _change: Change) {}

    /// Start-up, once every prepared record is adopted and before any
    /// `preparing` one is rolled back: stops what this kind left behind for
    /// claims that are gone (MPS: their daemons).
    fn sweep(&self, _cx: &Cx<'_>) -> Swept {
        Swept::default()
    }

    /// Start-up, prepared record: back into this kind's books (no hardware).
    fn adopt(&self, _cx: &Cx<'_>, _record: &ClaimRecord) -> Result<(), ClaimError> {
        Ok(())
    }

    /// Start-up: makes the claim's effects exist again; problems, not
    /// failures.
    fn restore(&self, _cx: &Cx<'_>, _record: &mut ClaimRecord) -> Restored {
        Restored::default()
    }

    /// A prepared claim asked again: its effects must be there.
    fn ensure(&self, _cx: &Cx<'_>, _record: &ClaimRecord) -> Result<(), ClaimError> {
        Ok(())
    }

    /// CDI: edits added to the devices already built.
    fn cdi_edits(
        &self,
        _cx: &Cx<'_>,
        _record: &ClaimRecord,
        _devices: &mut [ClaimDevice],
    ) -> Result<(), ClaimError> {
        Ok(())
    }

    /// View: what is wrong with this kind's part of each of `records`
    /// (ListClaims), one list per record, in order; a kind reads its state
    /// once for all of them.
    fn claim_problems(&self, _cx: &Cx<'_>, records: &[ClaimRecord]) -> Vec<Vec<String>> {
        vec![Vec::new(); records.len()]
    }

    /// View: this kind's lines for the node's problems (GetStatus).
    fn node_problems(&self, _cx: &Cx<'_>) -> Vec<String> {
        Vec::new()
    }
}

/// Every kind of access, and what the sharing kinds share.
#[derive(Debug, Default)]
pub(super) struct Kinds {
    pub(super) exclusive: Exclusive,
    pub(super) mig: Mig,
    pub(super) timeslicing: TimeSlicing,
    pub(super) mps: Mps,
    pub(super) shared: SharedGpus,
}

impl Kinds {
    /// Exclusive, MIG, time-slicing, MPS: the order prepare applies them (a
    /// MIG slice exists before a daemon on it starts); undo runs in
    /// reverse.
    pub(super) fn in_order(&self) -> [&dyn Access; 4] {
        [&self.exclusive, &self.mig, &self.timeslicing, &self.mps]
    }
}
