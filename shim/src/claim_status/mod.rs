//! The claim's status: for each device of each prepared claim, the
//! `status.devices` entry our driver owns (conditions Ready, Idle,
//! OverShare and a versioned usage summary in `data`), written to the API
//! server by server-side apply (docs/claim-status.md).
//!
//! Rooms, pure first:
//! - [`entries`]: a device's usage summary ([`entries::DeviceUsage`]) to its
//!   `AllocatedDeviceStatus` entry;
//! - [`plan`]: which claims to write now (per-claim refresh, a global rate
//!   limit, conditions first);
//! - [`write`]: the apply of one claim's entries;
//! - [`probe`]: whether the API server lets us write and keeps what we
//!   write (`Unknown → Enabled | Forbidden | FieldDropped`).
//!
//! How it is fed: the task that drives these (next step) maps gpusliced's
//! activity stream (`WatchActivity`, and `GetActivity`'s per-device
//! summaries with their pool and share id) to [`entries::DeviceUsage`],
//! renders each claim's entries, hands [`plan::Desired`] to the planner and
//! writes what it answers.

pub mod entries;
pub mod plan;
pub mod probe;
pub mod write;
