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
//!   write (`Unknown → Enabled | Forbidden | FieldDropped`);
//! - [`round`]: one round of planned writes behind the probe.
//!
//! How it is fed: the task that drives these (next step, once gpusliced's
//! `WatchActivity` and the per-device summaries land in the proto) maps
//! `GetActivity`'s claims (`DeviceActivity` with its pool, share id and
//! `DeviceUsageSummary`) to [`entries::DeviceUsage`], renders each claim's
//! entries with [`entries::entry`] into [`round::ClaimEntries`] keyed by
//! uid, and calls [`round::Writer::round`] on each activity message,
//! inventory change and refresh deadline.

pub mod entries;
pub mod feed;
pub mod plan;
pub mod probe;
pub mod round;
pub mod write;
