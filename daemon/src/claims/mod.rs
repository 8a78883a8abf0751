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

mod again;
mod error;
mod exclusive;
mod health;
mod keyed;
mod mig;
mod prepare;
mod reconcile;
mod request;
mod sharing;
mod spec_file;
mod start_up;
mod table;
mod unprepare;
mod usage;
mod view;

use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

pub use error::ClaimError;
pub use health::{Cleared, UnhealthyDevice};
pub use reconcile::ReconcileReport;
pub use request::{ConfigRequest, DeviceRequest, PrepareRequest, validate_uid};
pub use sharing::view::{DaemonView, GpuSharingView};
pub use sharing::{SharingTools, TimeSliceOutcome};
pub use table::SharedMode;
pub use usage::{ClaimKind, NodeUsage, SliceState, SliceUse};
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
#[derive(Debug)]
pub struct Engine {
    backend: Arc<dyn GpuBackend>,
    inventory: RwLock<Arc<Inventory>>,
    driver: RwLock<Arc<DriverFiles>>,
    store: Store,
    settings: EngineSettings,
    table: Mutex<ClaimTable>,
    claim_locks: KeyedLocks,
    problems: Mutex<Vec<String>>,
    mig_problems: Mutex<Vec<String>>,
    /// Held by a MIG rescan from its snapshot of the holdings to installing
    /// what it read (see `mig::setup`).
    rescanning: Mutex<()>,
    /// The `[mig]` in force (set by [`Engine::setup_mig`]).
    mig_config: RwLock<crate::config::MigConfig>,
    /// Faults of GPUs and slices (see `health`).
    health: crate::health::DeviceHealth,
    /// MPS and time-slicing: tools, books, per-GPU locks.
    sharing: sharing::Sharing,
    /// The inventory generation; receivers (WatchInventory) see each change,
    /// coalesced to the latest.
    generation: tokio::sync::watch::Sender<u64>,
    started: Instant,
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
            backend: crate::gpu::observed::observe(backend),
            inventory: RwLock::new(Arc::new(inventory)),
            driver: RwLock::new(Arc::new(driver)),
            store,
            settings,
            table: Mutex::new(ClaimTable::default()),
            claim_locks: KeyedLocks::default(),
            problems: Mutex::new(Vec::new()),
            mig_problems: Mutex::new(Vec::new()),
            rescanning: Mutex::new(()),
            mig_config: RwLock::new(crate::config::MigConfig::default()),
            health: crate::health::DeviceHealth::default(),
            sharing: sharing::Sharing::default(),
            generation: tokio::sync::watch::Sender::new(1),
            started: Instant::now(),
            quiet: RwLock::new(()),
        }
    }

    /// The hardware backend.
    pub fn backend(&self) -> &dyn GpuBackend {
        self.backend.as_ref()
    }

    /// The backend's name ("sim" or "nvml").
    pub fn backend_name(&self) -> &'static str {
        self.backend.name()
    }

    /// The current inventory.
    pub fn inventory(&self) -> Arc<Inventory> {
        self.inventory
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    fn driver(&self) -> Arc<DriverFiles> {
        self.driver
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The inventory generation: bumped whenever anything GetInventory
    /// answers may have changed (devices, attributes, health, holders,
    /// availability).
    pub fn generation(&self) -> u64 {
        *self.generation.borrow()
    }

    /// Follows the inventory generation: the receiver sees the value now and
    /// then the latest after each change (never a backlog).
    pub fn watch_generation(&self) -> tokio::sync::watch::Receiver<u64> {
        self.generation.subscribe()
    }

    /// Replaces the inventory after a rescan; true (and a new generation)
    /// when it changed.
    pub fn set_inventory(&self, mut inventory: Inventory) -> bool {
        let mut current = self
            .inventory
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        inventory.carry_over_unreadable(&current);
        for gpu in &inventory.unreadable {
            if !current.unreadable.iter().any(|u| u.index == gpu.index) {
                tracing::error!(gpu = %gpu.label(), what = gpu.what, error = %gpu.error, "GPU cannot be read; left out of the offer");
            }
        }
        if **current == inventory {
            return false;
        }
        *current = Arc::new(inventory);
        self.bump_generation();
        true
    }

    /// A new inventory generation: what the devices look like changed.
    fn bump_generation(&self) {
        self.generation.send_modify(|g| *g = g.wrapping_add(1));
    }

    /// Replaces the driver files (after a rescan on SIGHUP).
    pub fn set_driver_files(&self, driver: DriverFiles) {
        *self
            .driver
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(driver);
    }

    /// The state folder (parent of the records folder).
    pub fn state_dir(&self) -> &std::path::Path {
        self.store.dir().parent().unwrap_or(self.store.dir())
    }

    /// Settings in force.
    pub fn settings(&self) -> &EngineSettings {
        &self.settings
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
        let mut all = self.driver().problems.clone();
        all.extend(self.inventory().unreadable.iter().map(|u| u.problem()));
        all.extend(lock(&self.problems).iter().cloned());
        all.extend(lock(&self.mig_problems).iter().cloned());
        all.extend(self.health_problems());
        all.extend(self.sharing_problems());
        all
    }

    /// Seconds since the engine was built.
    pub fn uptime_seconds(&self) -> u64 {
        self.started.elapsed().as_secs()
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
