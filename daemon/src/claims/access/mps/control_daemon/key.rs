//! [`MpsKey`]: the set of GPU or MIG UUIDs one control daemon covers, and the
//! short stable hash that names its folder and systemd unit. Pure.

use std::fmt;

/// Namespace of the key hash (a fixed, arbitrary UUID).
const KEY_NAMESPACE: uuid::Uuid = uuid::uuid!("6d1f0a52-3c1e-4f6b-9d7a-0b5e2c4a8f31");

/// The sorted, de-duplicated UUIDs of one MPS control daemon.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MpsKey(Vec<String>);

impl MpsKey {
    /// The key of `uuids`, in any order.
    pub fn new<'a>(uuids: impl IntoIterator<Item = &'a str>) -> Self {
        let mut all: Vec<String> = uuids.into_iter().map(str::to_owned).collect();
        all.sort();
        all.dedup();
        Self(all)
    }

    /// The UUIDs, sorted.
    pub fn uuids(&self) -> &[String] {
        &self.0
    }

    /// `CUDA_VISIBLE_DEVICES` for the daemon: the UUIDs, comma-separated.
    pub fn visible_devices(&self) -> String {
        self.0.join(",")
    }

    /// 16 lowercase hex digits, stable across releases and restarts: a
    /// name-based (v5) UUID of the joined UUIDs, truncated.
    pub fn hash(&self) -> String {
        let id = uuid::Uuid::new_v5(&KEY_NAMESPACE, self.visible_devices().as_bytes());
        id.simple().to_string().chars().take(16).collect()
    }

    /// True when the two keys share a device but are not equal: such daemons
    /// could not both run (one server per device).
    pub fn overlaps(&self, other: &Self) -> bool {
        self != other && self.0.iter().any(|u| other.0.contains(u))
    }
}

impl fmt::Display for MpsKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}]", self.0.join(", "))
    }
}
