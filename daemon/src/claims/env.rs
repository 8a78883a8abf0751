//! What every part of the claim engine reads and none owns alone: the
//! hardware backend, the records' store, the settings, the current inventory
//! and driver files, the inventory generation, the device health and the
//! start time. No claim logic lives here: the verbs and the kinds of access
//! read it, and only a rescan (`set_inventory`), a reload
//! (`set_driver_files`) and a change (`bump`) write it.
//!
//! Locks: `inventory` and `driver` are each read-locked only to clone their
//! `Arc`, never across other work; `health` has its own table lock.

use std::sync::{Arc, PoisonError, RwLock};
use std::time::Instant;

use super::EngineSettings;
use crate::driver::DriverFiles;
use crate::gpu::GpuBackend;
use crate::health::DeviceHealth;
use crate::inventory::Inventory;
use crate::state::Store;

/// The engine's shared environment.
#[derive(Debug)]
pub(super) struct Env {
    pub(super) backend: Arc<dyn GpuBackend>,
    pub(super) store: Store,
    pub(super) settings: EngineSettings,
    inventory: RwLock<Arc<Inventory>>,
    driver: RwLock<Arc<DriverFiles>>,
    /// The inventory generation; receivers (WatchInventory) see each change,
    /// coalesced to the latest.
    generation: tokio::sync::watch::Sender<u64>,
    /// Faults of GPUs and slices (see `health`).
    pub(super) health: DeviceHealth,
    pub(super) started: Instant,
}

impl Env {
    pub(super) fn new(
        backend: Arc<dyn GpuBackend>,
        inventory: Inventory,
        driver: DriverFiles,
        store: Store,
        settings: EngineSettings,
    ) -> Self {
        Self {
            backend: crate::gpu::observed::observe(backend),
            store,
            settings,
            inventory: RwLock::new(Arc::new(inventory)),
            driver: RwLock::new(Arc::new(driver)),
            generation: tokio::sync::watch::Sender::new(1),
            health: DeviceHealth::default(),
            started: Instant::now(),
        }
    }

    /// The current inventory.
    pub(super) fn inventory(&self) -> Arc<Inventory> {
        self.inventory
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The current driver files.
    pub(super) fn driver(&self) -> Arc<DriverFiles> {
        self.driver
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The inventory generation.
    pub(super) fn generation(&self) -> u64 {
        *self.generation.borrow()
    }

    /// Follows the inventory generation.
    pub(super) fn watch(&self) -> tokio::sync::watch::Receiver<u64> {
        self.generation.subscribe()
    }

    /// Replaces the inventory after a rescan; true (and a new generation)
    /// when it changed.
    pub(super) fn set_inventory(&self, mut inventory: Inventory) -> bool {
        let mut current = self
            .inventory
            .write()
            .unwrap_or_else(PoisonError::into_inner);
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
        self.bump();
        true
    }

    /// A new inventory generation: what the devices look like changed.
    pub(super) fn bump(&self) {
        self.generation.send_modify(|g| *g = g.wrapping_add(1));
    }

    /// Replaces the driver files (after a rescan on SIGHUP).
    pub(super) fn set_driver_files(&self, driver: DriverFiles) {
        *self.driver.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(driver);
    }

    /// The state folder (parent of the records folder).
    pub(super) fn state_dir(&self) -> &std::path::Path {
        self.store.dir().parent().unwrap_or(self.store.dir())
    }
}
