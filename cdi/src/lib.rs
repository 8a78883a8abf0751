//! Container Device Interface (CDI) specs, with no GPU knowledge.
//!
//! Reading order:
//! * [`spec`]: the spec model, serialised exactly as the CDI JSON schema names
//!   its fields (empty fields are left out, so older runtimes accept the file).
//! * [`name`]: vendor, class and device-name rules, fully qualified names and
//!   transient spec file names.
//! * [`version`]: the minimum `cdiVersion` a spec's fields need.
//! * [`atomic`]: the one durable file writer (temp, fsync, rename, fsync dir)
//!   and durable removal, used for CDI specs and for the daemon's records.
//!
//! Invariant: a spec this crate writes always declares the lowest `cdiVersion`
//! that its fields need, so podman 4.3 and containerd 1.7 (which accept up to
//! 0.5.0) read it whenever it uses nothing newer.
#![forbid(unsafe_code)]

pub mod atomic;
pub mod spec;
pub mod version;

pub use spec::{ContainerEdits, Device, DeviceNode, Hook, Mount, Spec};
