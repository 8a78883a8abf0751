use super::held_claims;
use crate::activity::fixtures::{A, B, C, GIB, mps, record, slice, timesliced, whole};
use crate::inventory::Inventory;
use crate::state::AccessKind;
use crate::testkit::inventory as fixture_inventory;

fn uuid(inventory: &Inventory, i: usize) -> String {
    inventory.gpus[i].info.uuid.clone()
}

#[test]
fn a_whole_gpu_is_matched_by_index_and_has_no_share() {
    let inv = fixture_inventory(2);
    let held = held_claims(&[record(A, vec![whole("gpu-1", &uuid(&inv, 1))])], &inv);
    let d = &held[0].devices[0];
    assert_eq!(held[0].kind, AccessKind::Exclusive);
    assert_eq!(
        (d.gpu.as_str(), d.gpu_index, d.gpu_instance),
        ("gpu-1", Some(1), None)
    );
    assert_eq!(d.uuid, uuid(&inv, 1));
    assert_eq!(d.sharing, AccessKind::Exclusive);
    assert_eq!(d.memory_share, None);
    assert_eq!(d.memory_total, inv.gpus[1].info.memory_bytes);
}

#[test]
fn time_sliced_claims_split_the_gpu_evenly_unless_the_scheduler_counted_memory() {
    let inv = fixture_inventory(1);
    let u = uuid(&inv, 0);
    let mut counted = timesliced("gpu-0", &u);
    counted.consumed_memory = Some(10 * GIB);
    let held = held_claims(
        &[
            record(B, vec![timesliced("gpu-0", &u)]),
            record(A, vec![timesliced("gpu-0", &u)]),
            record(C, vec![counted]),
        ],
        &inv,
    );
    let uids: Vec<&str> = held.iter().map(|c| c.uid.as_str()).collect();
    assert_eq!(uids, vec![A, B, C], "sorted by uid");
    let total = inv.gpus[0].info.memory_bytes;
    assert_eq!(held[0].devices[0].memory_share, Some(total / 3));
    assert_eq!(held[1].devices[0].sharing, AccessKind::TimeSlicing);
    assert_eq!(held[2].devices[0].memory_share, Some(10 * GIB));
    assert_eq!(held[0].kind, AccessKind::TimeSlicing);
}

#[test]
fn mps_share_then_pinned_limit_then_consumed_then_even_split() {
    let inv = fixture_inventory(1);
    let u = uuid(&inv, 0);
    let mut consumed = mps("gpu-0", &u, None, None);
    consumed.consumed_memory = Some(7 * GIB);
    let held = held_claims(
        &[
            record(A, vec![mps("gpu-0", &u, Some(5 * GIB), Some(6 * GIB))]),
            record(B, vec![mps("gpu-0", &u, None, Some(6 * GIB))]),
            record(C, vec![consumed]),
        ],
        &inv,
    );
    let shares: Vec<_> = held.iter().map(|c| c.devices[0].memory_share).collect();
    assert_eq!(shares, vec![Some(5 * GIB), Some(6 * GIB), Some(7 * GIB)]);
    let alone = held_claims(&[record(A, vec![mps("gpu-0", &u, None, None)])], &inv);
    assert_eq!(
        alone[0].devices[0].memory_share,
        Some(inv.gpus[0].info.memory_bytes)
    );
    assert_eq!(alone[0].kind, AccessKind::Mps);
}

#[test]
fn a_slice_is_matched_by_gpu_instance_and_carries_its_mig_uuid() {
    let inv = fixture_inventory(2);
    let held = held_claims(
        &[record(
            A,
            vec![slice("gpu-1-mig-3g40gb-0", &uuid(&inv, 1), 2)],
        )],
        &inv,
    );
    let d = &held[0].devices[0];
    assert_eq!(held[0].kind, AccessKind::Mig);
    assert_eq!(
        (d.gpu.as_str(), d.gpu_index, d.gpu_instance),
        ("gpu-1", Some(1), Some(2))
    );
    assert_eq!(d.uuid, "MIG-2");
    assert_eq!(d.sharing, AccessKind::Mig);
    assert_eq!(d.memory_share, None);
}

#[test]
fn a_device_of_a_gone_gpu_matches_nothing() {
    let inv = fixture_inventory(1);
    let held = held_claims(&[record(A, vec![whole("gpu-5", "GPU-gone")])], &inv);
    let d = &held[0].devices[0];
    assert_eq!(d.gpu_index, None);
    assert_eq!(d.gpu, "gpu-5");
    assert_eq!(d.memory_total, 0);
}
