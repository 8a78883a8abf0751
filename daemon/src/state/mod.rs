//! Durable claim records under `<state_dir>/claims`: one JSON file per claim,
//! written with the one atomic writer, so the cost of a prepare does not grow
//! with the number of claims and a crash leaves each record whole or absent.
//!
//! This module only stores and loads; deciding what a record means at start-up
//! is the claim engine's reconcile. It also owns the state dir's lock
//! (`lock`): one gpusliced per state dir.

mod access_kind;
mod advisory;
mod boot;
mod lock;
mod record;
mod store;

pub use access_kind::AccessKind;
pub use advisory::{SaveError, write_advisory};
pub use boot::{BOOT_ID_PATH, read_boot_id};
pub use lock::{LOCK_FILE, LockError, StateLock, parse_pid};
pub use record::{
    ClaimRecord, DeviceSharing, MigSlice, MpsSharing, Phase, RECORD_VERSION, RECORD_VERSION_PLAIN,
    RecordDevice,
};
pub use store::{Durable, Loaded, LoadedRecords, RecordFolder, StateError, Store};
