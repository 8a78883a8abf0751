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
//! Each kind of access is a small module with the same verbs (reserve,
//! apply, release, restore): `exclusive`, MIG (the module `mig`), MPS and
//! time-slicing (the module `sharing`). The generic pieces sit here: the
//! request (`request`), the claim table and per-claim locks (`table`,
//! `keyed`), the verbs (`prepare`, `again` for a claim prepared already,
//! `unprepare`, `reconcile`), the CDI
//! spec of a claim (`spec_file`), health and usage (`health`,
//! `usage`), the one consistent view of the node the read answers are
//! built from (`view`: each device of one inventory with its holders,
//! availability and fault; the MIG instances), errors (`error`); the
//! engine's own tests are in `tests`.
//!
//! The engine is synchronous and thread-safe; the API calls it through
//! `spawn_blocking`. The table lock is held only to check and reserve, never
//! across file I/O, so claims on different GPUs never wait for each other.
//! The one exception is a reload (SIGHUP): its MIG set-up and spec repair
//! read the table, the hardware and the CDI dir together, so they wait for
//! the prepares and unprepares in flight and hold new ones back until done
//! (see `quiet`).

mod access;
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
mod usage;
mod view;

use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};

pub use access::shared_gpu::{SharingTools, TimeSliceOutcome};
pub use error::ClaimError;
pub use health::{Cleared, UnhealthyDevice};
pub use reconcile::ReconcileReport;
pub use request::{ConfigRequest, DeviceRequest, PrepareRequest, validate_uid};
pub use table::SharedMode;
pub use usage::{ClaimKind, NodeUsage, SliceState, SliceUse};
pub use view::sharing::{DaemonView, GpuSharingView};
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
    pub fn with_sharing(mut self, tools: SharingTools) -> Self {
        self.kinds.shared.tools = Some(tools);
        self
    }

    /// The hardware backend.
    pub fn backend(&self) -> &dyn GpuBackend {
        self.env.backend.as_ref()
    }

    /// The backend's name ("sim" or "nvml").
    pub fn backend_name(&self) -> &'static str {
        self.env.backend.name()
    }

    /// The current inventory.
    pub fn inventory(&self) -> Arc<Inventory> {
        self.env.inventory()
    }

    /// The inventory generation: bumped whenever anything GetInventory
    /// answers may have changed (devices, attributes, health, holders,
    /// availability).
    pub fn generation(&self) -> u64 {
        self.env.generation()
    }

    /// Follows the inventory generation: the receiver sees the value now and
    /// then the latest after each change (never a backlog).
    pub fn watch_generation(&self) -> tokio::sync::watch::Receiver<u64> {
        self.env.watch()
    }

    /// Replaces the driver files (after a rescan on SIGHUP).
    pub fn set_driver_files(&self, driver: DriverFiles) {
        self.env.set_driver_files(driver);
    }

    /// The state folder (parent of the records folder).
    pub fn state_dir(&self) -> &std::path::Path {
        self.env.state_dir()
    }

    /// Settings in force.
    pub fn settings(&self) -> &EngineSettings {
        &self.env.settings
    }

    /// Every claim, sorted by uid.
    pub fn claims(&self) -> Vec<ClaimRecord> {
        lock(&self.table).records()
    }

    /// How many claims there are, without copying them.
    pub fn claim_count(&self) -> usize {
        lock(&self.table).count()
    }

    /// Problems an operator should act on: missing driver files, GPUs that
    /// cannot be read, records that could not be read or matched, unhealthy
    /// devices and the claims on them.
    pub fn problems(&self) -> Vec<String> {
        let mut all = self.env.driver().problems.clone();
        all.extend(self.inventory().unreadable.iter().map(|u| u.problem()));
        all.extend(lock(&self.problems).iter().cloned());
        all.extend(self.kinds.mig.problems());
        all.extend(self.health_problems());
        all.extend(self.sharing_problems());
        all
    }

    /// Seconds since the engine was built.
    pub fn uptime_seconds(&self) -> u64 {
        self.env.started.elapsed().as_secs()
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

    /// True if the table lock can be taken: the watchdog pings only then.
    pub fn responsive(&self) -> bool {
        drop(lock(&self.table));
        true
    }
}

#[cfg(test)]
pub(crate) mod tests;
