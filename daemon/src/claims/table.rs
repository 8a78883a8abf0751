//! The in-memory claim table: every record by uid, and what each claim holds
//! on each GPU (by UUID): the whole GPU, or MIG slices by placement. The single
//! source of truth while the daemon runs; records on disk mirror it.
//!
//! A whole GPU and any slice of it exclude each other, and so do two slices
//! whose memory slices overlap. Shared holdings of a whole GPU (MPS or
//! time-slicing) coexist with each other and exclude everything else; whether
//! two shared claims can really run together (same MPS daemon and limits,
//! same interval, never MPS beside time-slicing) is the sharing layer's call.

use std::collections::{BTreeMap, HashMap};

use super::error::ClaimError;
use crate::gpu::Placement;
use crate::inventory::DeviceRef;
use crate::state::{AccessKind, ClaimRecord, DeviceSharing, RecordDevice};

/// What a claim takes of one GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Share {
    /// The whole GPU, alone.
    Whole,
    /// The MIG slice at this placement.
    Slice(Placement),
    /// The whole GPU, shared with other claims that share it too (under MPS
    /// or time-slicing).
    Shared(AccessKind),
}

impl Share {
    fn conflicts(self, other: Share) -> bool {
        match (self, other) {
            (Share::Slice(a), Share::Slice(b)) => a.overlaps(b),
            (Share::Shared(_), Share::Shared(_)) => false,
            _ => true,
        }
    }
}

/// One holding: who holds what of a GPU, under which device name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holding {
    /// What is held.
    pub share: Share,
    /// The claim uid.
    pub uid: String,
    /// The device name the claim asked for.
    pub device: String,
}

/// One reservation asked for: the GPU's UUID, the device name, the share.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Want {
    /// The (parent) GPU's UUID.
    pub gpu_uuid: String,
    /// The device name asked for.
    pub device: String,
    /// What of the GPU.
    pub share: Share,
}

impl Want {
    /// What of its GPU a device asked for takes: a whole GPU shared across
    /// claims is a shared holding; a MIG slice stays the claim's alone, MPS
    /// or not.
    pub fn of_device(device: &DeviceRef<'_>, sharing: Option<&DeviceSharing>) -> Want {
        let (name, share) = match (device, sharing) {
            (DeviceRef::Gpu(g), None) => (g.name.clone(), Share::Whole),
            (DeviceRef::Gpu(g), Some(sharing)) => (
                g.name.clone(),
                Share::Shared(AccessKind::of_sharing(sharing)),
            ),
            (DeviceRef::Mig(m, _), _) => (m.name.clone(), Share::Slice(m.placement)),
        };
        Want {
            gpu_uuid: device.gpu().info.uuid.clone(),
            device: name,
            share,
        }
    }

    /// What of its GPU a recorded device holds (the same rule, read back
    /// from the record at start-up).
    pub fn of_record(device: &RecordDevice) -> Want {
        let share = match (&device.mig, &device.sharing) {
            (Some(m), _) => Share::Slice(Placement {
                start: m.start,
                size: m.size,
            }),
            (None, None) => Share::Whole,
            (None, Some(sharing)) => Share::Shared(AccessKind::of_sharing(sharing)),
        };
        Want {
            gpu_uuid: device.uuid.clone(),
            device: device.device.clone(),
            share,
        }
    }
}

/// Claims and holdings.
#[derive(Debug, Default)]
pub struct ClaimTable {
    claims: BTreeMap<String, ClaimRecord>,
    /// GPU uuid → its holdings.
    holdings: HashMap<String, Vec<Holding>>,
    /// Counts the changes of [`ClaimTable::held_slices`] and
    /// [`ClaimTable::held_whole`]: a MIG scan that read them before the
    /// hardware knows whether they moved while it read (see `rescan`).
    mig_changes: u64,
}

impl ClaimTable {
    /// The record of `uid`.
    pub fn get(&self, uid: &str) -> Option<&ClaimRecord> {
        self.claims.get(uid)
    }

    /// Every holding on the GPU with this uuid.
    pub fn holdings(&self, gpu_uuid: &str) -> &[Holding] {
        self.holdings.get(gpu_uuid).map_or(&[], Vec::as_slice)
    }

    /// How many times the held slices or whole GPUs changed so far.
    pub fn mig_changes(&self) -> u64 {
        self.mig_changes
    }

    /// Every held slice as (GPU uuid, placement).
    pub fn held_slices(&self) -> std::collections::HashSet<(String, Placement)> {
        self.holdings
            .iter()
            .flat_map(|(uuid, list)| {
                list.iter().filter_map(move |h| match h.share {
                    Share::Slice(p) => Some((uuid.clone(), p)),
                    Share::Whole | Share::Shared(_) => None,
                })
            })
            .collect()
    }

    /// UUIDs of the GPUs a claim holds whole (alone).
    pub fn held_whole(&self) -> std::collections::HashSet<String> {
        self.holdings
            .iter()
            .filter(|(_, list)| list.iter().any(|h| h.share == Share::Whole))
            .map(|(uuid, _)| uuid.clone())
            .collect()
    }

    /// The claims whose holdings conflict with `share` of the GPU.
    pub fn blockers(&self, gpu_uuid: &str, share: Share) -> Vec<&Holding> {
        self.holdings(gpu_uuid)
            .iter()
            .filter(|h| h.share.conflicts(share))
            .collect()
    }

    /// Reserves every want for `uid`, or none of them if one conflicts with
    /// another claim's holding (or with another want of the same request).
    pub fn reserve(&mut self, uid: &str, wants: &[Want]) -> Result<(), ClaimError> {
        for (i, want) in wants.iter().enumerate() {
            let held = self
                .blockers(&want.gpu_uuid, want.share)
                .into_iter()
                .find(|h| h.uid != uid);
            if let Some(h) = held {
                return Err(match h.share {
                    Share::Shared(mode) => ClaimError::GpuShared {
                        device: want.device.clone(),
                        holder: h.uid.clone(),
                        mode,
                    },
                    Share::Whole | Share::Slice(_) => ClaimError::DeviceHeld {
                        device: want.device.clone(),
                        holder: h.uid.clone(),
                        holder_device: h.device.clone(),
                    },
                });
            }
            let clash = wants[..i]
                .iter()
                .find(|w| w.gpu_uuid == want.gpu_uuid && w.share.conflicts(want.share));
            if let Some(other) = clash {
                return Err(ClaimError::DevicesOverlap {
                    first: other.device.clone(),
                    second: want.device.clone(),
                });
            }
        }
        if wants.iter().any(|w| !matches!(w.share, Share::Shared(_))) {
            self.mig_changes += 1;
        }
        for want in wants {
            let list = self.holdings.entry(want.gpu_uuid.clone()).or_default();
            let holding = Holding {
                share: want.share,
                uid: uid.to_owned(),
                device: want.device.clone(),
            };
            if !list.contains(&holding) {
                list.push(holding);
            }
        }
        Ok(())
    }

    /// Frees whatever `uid` holds on the GPUs with these uuids.
    pub fn release<'a>(&mut self, uid: &str, gpu_uuids: impl IntoIterator<Item = &'a str>) {
        for uuid in gpu_uuids {
            if let Some(list) = self.holdings.get_mut(uuid) {
                let before = list.len();
                let mut whole_or_slice = false;
                list.retain(|h| {
                    let theirs = h.uid == uid;
                    whole_or_slice |= theirs && !matches!(h.share, Share::Shared(_));
                    !theirs
                });
                if whole_or_slice && list.len() < before {
                    self.mig_changes += 1;
                }
                if list.is_empty() {
                    self.holdings.remove(uuid);
                }
            }
        }
    }

    /// Stores `record` (its devices must be reserved).
    pub fn insert(&mut self, record: ClaimRecord) {
        self.claims.insert(record.uid.clone(), record);
    }

    /// Forgets `uid` and frees its holdings.
    pub fn remove(&mut self, uid: &str) -> Option<ClaimRecord> {
        let record = self.claims.remove(uid)?;
        self.release(uid, record.devices.iter().map(|d| d.uuid.as_str()));
        Some(record)
    }

    /// All records, by uid.
    pub fn records(&self) -> Vec<ClaimRecord> {
        self.claims.values().cloned().collect()
    }

    /// How many claims there are.
    pub fn count(&self) -> usize {
        self.claims.len()
    }

    /// Every record, by uid, without copying.
    pub fn iter(&self) -> impl Iterator<Item = &ClaimRecord> {
        self.claims.values()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slice(start: u32, size: u32) -> Share {
        Share::Slice(Placement { start, size })
    }

    fn want(device: &str, share: Share) -> Want {
        Want {
            gpu_uuid: "GPU-a".into(),
            device: device.into(),
            share,
        }
    }

    #[test]
    fn slices_that_do_not_overlap_coexist_and_block_the_whole_gpu() {
        let mut t = ClaimTable::default();
        t.reserve("a", &[want("s0", slice(0, 4))]).unwrap();
        t.reserve("b", &[want("s4", slice(4, 2))]).unwrap();
        let err = t.reserve("c", &[want("gpu-0", Share::Whole)]).unwrap_err();
        assert!(matches!(err, ClaimError::DeviceHeld { ref holder, .. } if holder == "a"));
        let err = t.reserve("c", &[want("s5", slice(5, 1))]).unwrap_err();
        assert!(matches!(err, ClaimError::DeviceHeld { ref holder, .. } if holder == "b"));
        t.release("a", ["GPU-a"]);
        t.release("b", ["GPU-a"]);
        t.reserve("c", &[want("gpu-0", Share::Whole)]).unwrap();
        assert_eq!(t.holdings("GPU-a").len(), 1);
    }

    /// What a MIG scan compares before installing what it read: moved by
    /// every slice or whole GPU taken or freed, by nothing else.
    #[test]
    fn mig_changes_count_slices_and_whole_gpus_taken_and_freed_only() {
        let mut t = ClaimTable::default();
        let mps = Share::Shared(AccessKind::Mps);
        t.reserve("m", &[want("gpu-0", mps)]).unwrap();
        t.release("m", ["GPU-a"]);
        assert_eq!(t.mig_changes(), 0, "sharing is not a MIG change");
        t.reserve("a", &[want("s0", slice(0, 4))]).unwrap();
        assert_eq!(t.mig_changes(), 1);
        assert!(t.reserve("b", &[want("gpu-0", Share::Whole)]).is_err());
        assert_eq!(t.mig_changes(), 1, "a refused reservation changes nothing");
        t.release("b", ["GPU-a"]);
        assert_eq!(t.mig_changes(), 1, "freeing nothing changes nothing");
        t.release("a", ["GPU-a"]);
        assert_eq!(t.mig_changes(), 2);
        t.reserve("c", &[want("gpu-0", Share::Whole)]).unwrap();
        t.release("c", ["GPU-a"]);
        assert_eq!(t.mig_changes(), 4);
    }

    #[test]
    fn one_request_cannot_take_overlapping_slices() {
        let mut t = ClaimTable::default();
        let err = t
            .reserve("a", &[want("x", slice(0, 4)), want("y", slice(2, 2))])
            .unwrap_err();
        assert!(matches!(err, ClaimError::DevicesOverlap { .. }));
        assert!(
            t.holdings("GPU-a").is_empty(),
            "nothing reserved on refusal"
        );
    }

    #[test]
    fn shared_holdings_coexist_and_exclude_everything_else() {
        let mut t = ClaimTable::default();
        let mps = Share::Shared(AccessKind::Mps);
        t.reserve("a", &[want("gpu-0", mps)]).unwrap();
        t.reserve("b", &[want("gpu-0", mps)]).unwrap();
        for other in [Share::Whole, slice(0, 1)] {
            let err = t.reserve("c", &[want("x", other)]).unwrap_err();
            assert!(
                matches!(err, ClaimError::GpuShared { ref holder, mode: AccessKind::Mps, .. } if holder == "a"),
                "{err}"
            );
        }
        t.release("a", ["GPU-a"]);
        t.release("b", ["GPU-a"]);
        t.reserve("c", &[want("gpu-0", Share::Whole)]).unwrap();
        let err = t.reserve("d", &[want("gpu-0", mps)]).unwrap_err();
        assert!(
            matches!(err, ClaimError::DeviceHeld { ref holder, .. } if holder == "c"),
            "{err}"
        );
    }

    #[test]
    fn reserving_again_for_the_same_claim_is_idempotent() {
        let mut t = ClaimTable::default();
        t.reserve("a", &[want("x", slice(0, 1))]).unwrap();
        t.reserve("a", &[want("x", slice(0, 1))]).unwrap();
        assert_eq!(t.holdings("GPU-a").len(), 1);
    }
}
