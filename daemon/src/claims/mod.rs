//! The claim engine: Prepare and Unprepare as idempotent state transitions,
//! and the start-up reconcile that makes records, CDI files and hardware agree.
//!
//! Prepare: validate, take the claim's lock, refuse a new claim on an
//! unhealthy device (`health`), reserve its devices in the table
//! (refused if another claim holds one), take hardware steps under a
//! `preparing` record (MIG slices, then sharing: MPS daemons, time-slices),
//! write the CDI spec, write the record, and only then report success. Any
//! failure undoes what was done. Unprepare removes the spec first and the
//! record last, so a crash in between leaves a record whose spec reconcile
//! rewrites, never a spec nobody owns.
//!
//! Each kind of access is a component with the same verbs (reserve, apply,
//! release, adopt, restore, roll back, ensure, its CDI edits, its problems)
//! behind one trait, in `access`: `exclusive`, `mig`, `timeslice` and `mps`
//! (with `shared_gpu`, what the last two share); a device's CDI device nodes
//! come from `mig` for a slice and from `exclusive` for any other device.
//! The verbs drive them: `prepare` (one loop over the kinds a claim needs,
//! with the undo stack of `undo`; `again` says what differs when a prepared
//! claim is asked for again), `unprepare`, `reconcile` (start-up, SIGHUP,
//! the MIG set-up and the sharing restore) and `health` (an operator's
//! clear). Only those files and
//! `view` (the reads: one consistent view of the node, the MIG instances,
//! sharing, usage, the claims and problems) add methods to `Engine`. The
//! generic pieces: the request (`request`), the claim table and per-key
//! locks (`table`, `keyed`), what every part reads (`env`), a claim's CDI
//! spec (`spec`), errors (`error`); the engine's own tests are in `tests`.
//!
//! The engine is synchronous and thread-safe; the API calls it through
//! `spawn_blocking`. The table lock is held only to check and reserve, never
//! across file I/O, so claims on different GPUs never wait for each other.
//! The one exception is a reload (SIGHUP): its MIG set-up and spec repair
//! read the table, the hardware and the CDI dir together, so they wait for
//! the prepares and unprepares in flight and hold new ones back until done
//! (see `quiet`).

pub(crate) mod access;
mod again;
mod env;
mod error;
mod health;
mod keyed;
mod prepare;
mod reconcile;
mod request;
mod spec;
mod table;
mod undo;
mod unprepare;
mod view;

use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};

pub use access::mig::offering as mig_offering;
pub use access::mps::control_daemon as mps_daemon;
pub use access::mps::view::DaemonView;
pub use access::shared_gpu::{SharingTools, TimeSliceOutcome};
pub use access::timeslicing::compute_policy;
pub use error::ClaimError;
pub use health::Cleared;
pub use reconcile::ReconcileReport;
pub use request::resolve;
pub use request::{ConfigRequest, DeviceRequest, PrepareRequest, validate_uid};
pub use view::claim_health::UnhealthyDevice;
pub use view::reads::NodeReads;
pub use view::sharing::GpuSharingView;
pub use view::usage::{NodeUsage, SliceState, SliceUse};
pub use view::{
    DeviceAt, DeviceState, GpuMigView, MigHolder, MigInstanceView, NodeView, UnreadableState,
};

use crate::driver::DriverFiles;
use crate::gpu::GpuBackend;
use crate::inventory::Inventory;
use crate::state::{ClaimRecord, Store};
use keyed::{KeyedLocks, lock};
use table::ClaimTable;

/// What a prepare did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Prepared {
    /// The claim was prepared before, with the same devices; nothing changed
    /// but a missing CDI spec being rewritten.
    AlreadyPrepared(ClaimRecord),
    /// The claim is prepared now.
    Created(ClaimRecord),
}

impl Prepared {
    /// The claim's record either way.
    pub fn record(&self) -> &ClaimRecord {
        match self {
            Self::AlreadyPrepared(r) | Self::Created(r) => r,
        }
    }
}

/// What an unprepare did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unprepared {
    /// The daemon did not know the claim.
    NotPresent,
    /// The claim's spec and record are gone, its devices free.
    Removed,
}

/// Settings the engine needs from the config.
#[derive(Debug, Clone)]
pub struct EngineSettings {
    /// Where CDI specs go.
    pub cdi_dir: PathBuf,
    /// Root of the /dev nodes.
    pub dev_root: PathBuf,
    /// nvidia-cdi-hook on the host, if any.
    pub cdi_hook: Option<PathBuf>,
    /// The current boot id.
    pub boot_id: String,
    /// `[limits]`: whether a claim's own `LimitsConfig` may stand.
    pub limits: crate::config::LimitsConfig,
}

/// The claim engine. Cheap to share behind an `Arc`.
///
/// Lock order: `quiet` (read) → the claim's lock → the GPU locks (sorted)
/// → at most one of {`table`, the sharing books, the MIG books} at a time,
/// never nested, and none held across I/O but the claim and GPU locks.
/// `rescanning` is taken before the table snapshot of a rescan.
#[derive(Debug)]
pub struct Engine {
    env: env::Env,
    table: Mutex<ClaimTable>,
    claim_locks: KeyedLocks,
    problems: Mutex<Vec<String>>,
    /// The kinds of access, each with its own books.
    kinds: access::Kinds,
    /// Prepares and unprepares hold it shared for their whole run; the
    /// reload steps that read the claim table, the hardware and the CDI dir
    /// together ([`Engine::setup_mig`], [`Engine::refresh`]) hold it
    /// exclusive, so they never see a claim half-way: a spec written but not
    /// yet in the table (it would be removed as a stray), a slice destroyed
    /// but its record not yet removed (it would be made again), an instance
    /// made after the held slices were read (it would block the layout).
    quiet: RwLock<()>,
}

impl Engine {
    /// An engine over `backend` with an empty table; call [`Engine::reconcile`]
    /// before serving.
    pub fn new(
        backend: Arc<dyn GpuBackend>,
        inventory: Inventory,
        driver: DriverFiles,
        store: Store,
        settings: EngineSettings,
    ) -> Self {
        Self {
            env: env::Env::new(backend, inventory, driver, store, settings),
            table: Mutex::new(ClaimTable::default()),
            claim_locks: KeyedLocks::default(),
            problems: Mutex::new(Vec::new()),
            kinds: access::Kinds::default(),
            quiet: RwLock::new(()),
        }
    }

    /// Sets the tools the engine shares GPUs with (call before `reconcile`).
    #[must_use]
    pub(crate) fn with_sharing(mut self, tools: SharingTools) -> Self {
        self.kinds.shared.tools = Some(tools);
        self
    }

    /// What the kinds of access may read.
    fn cx(&self) -> access::Cx<'_> {
        access::Cx {
            env: &self.env,
            table: &self.table,
            shared: &self.kinds.shared,
        }
    }

    /// Held by a prepare or unprepare for its whole run (see `quiet`).
    fn claim_operation(&self) -> std::sync::RwLockReadGuard<'_, ()> {
        self.quiet
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Held by a reload step: no prepare or unprepare runs meanwhile.
    fn quiet_node(&self) -> std::sync::RwLockWriteGuard<'_, ()> {
        self.quiet
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
pub(crate) mod tests;
