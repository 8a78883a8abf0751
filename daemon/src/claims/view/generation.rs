//! The inventory and its generation: the current inventory, the generation
//! every change bumps, and a receiver that follows it (WatchInventory).

use super::super::Engine;
use crate::inventory::Inventory;
use std::sync::Arc;

impl Engine {
    /// The current inventory.
    pub fn inventory(&self) -> Arc<Inventory> {
        self.env.inventory()
    }

    /// The inventory generation: bumped whenever anything GetInventory
    /// answers may have changed (devices, attributes, health, holders,
    /// availability).
    pub(crate) fn generation(&self) -> u64 {
        self.env.generation()
    }

    /// Follows the inventory generation: the receiver sees the value now and
    /// then the latest after each change (never a backlog).
    pub(crate) fn watch_generation(&self) -> tokio::sync::watch::Receiver<u64> {
        self.env.watch()
    }
}
