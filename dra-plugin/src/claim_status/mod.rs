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
//! - [`access`]: whether the API server lets us write and keeps what we
//!   write (`Unknown → Enabled | Forbidden | FieldDropped`), from the dry
//!   run of [`crate::probe::claim_status`] and the real writes' answers;
//! - [`round`]: one round of planned writes behind the access state;
//! - [`feed`]: gpusliced's GetActivity and GetAdvice to each claim's
//!   entries;
//! - [`task`]: what drives the rounds (gpusliced's WatchActivity, inventory
//!   changes, a tick), across gpusliced's restarts;
//! - [`tell`]: the access state told to gpusliced, for `gpuslicectl
//!   status` (`claim status: written | off: <reason> | not checked yet`).

pub mod access;
pub mod entries;
pub mod feed;
pub mod plan;
pub mod round;
pub mod task;
pub mod tell;
pub mod write;
