//! The in-memory claim table: every record by uid, and which claim holds each
//! GPU (by UUID). The single source of truth while the daemon runs; records on
//! disk mirror it.

use std::collections::{BTreeMap, HashMap};

use super::error::ClaimError;
use crate::state::ClaimRecord;

/// Claims and holders.
#[derive(Debug, Default)]
pub struct ClaimTable {
    claims: BTreeMap<String, ClaimRecord>,
    /// GPU uuid → (claim uid, device name as the claim asked for it).
    holders: HashMap<String, (String, String)>,
}

impl ClaimTable {
    /// The record of `uid`.
    pub fn get(&self, uid: &str) -> Option<&ClaimRecord> {
        self.claims.get(uid)
    }

    /// The claim holding the GPU with this uuid.
    pub fn holder(&self, gpu_uuid: &str) -> Option<String> {
        self.holders.get(gpu_uuid).map(|(uid, _)| uid.clone())
    }

    /// Reserves every `(uuid, device name)` for `uid`, or none of them if one
    /// is held by another claim.
    pub fn reserve(&mut self, uid: &str, gpus: &[(String, String)]) -> Result<(), ClaimError> {
        for (uuid, device) in gpus {
            if let Some((holder, _)) = self.holders.get(uuid).filter(|(h, _)| h != uid) {
                return Err(ClaimError::DeviceHeld {
                    device: device.clone(),
                    holder: holder.clone(),
                });
            }
        }
        for (uuid, device) in gpus {
            self.holders
                .insert(uuid.clone(), (uid.to_owned(), device.clone()));
        }
        Ok(())
    }

    /// Frees the GPUs (by uuid) that `uid` holds among `gpu_uuids`.
    pub fn release<'a>(&mut self, uid: &str, gpu_uuids: impl IntoIterator<Item = &'a str>) {
        for uuid in gpu_uuids {
            if self
                .holders
                .get(uuid)
                .is_some_and(|(holder, _)| holder == uid)
            {
                self.holders.remove(uuid);
            }
        }
    }

    /// Stores `record` (its devices must be reserved).
    pub fn insert(&mut self, record: ClaimRecord) {
        self.claims.insert(record.uid.clone(), record);
    }

    /// Forgets `uid` and frees its GPUs.
    pub fn remove(&mut self, uid: &str) -> Option<ClaimRecord> {
        let record = self.claims.remove(uid)?;
        self.release(uid, record.devices.iter().map(|d| d.uuid.as_str()));
        Some(record)
    }

    /// All records, by uid.
    pub fn records(&self) -> Vec<ClaimRecord> {
        self.claims.values().cloned().collect()
    }
}
