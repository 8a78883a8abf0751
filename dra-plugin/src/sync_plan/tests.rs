use k8s_openapi::api::resource::v1::{DeviceTaint, ResourceSliceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::{Existing, Write, normalized, plan};
use crate::slices::{PoolTarget, build_pool};
use gpuslice_proto::gpuslice::v1 as pb;

const TARGET: PoolTarget<'static> = PoolTarget {
    driver: "gpu.nvidia.com",
    node_name: "node-1",
    taint_unhealthy: false,
    consumable_capacity: false,
};

fn pool(devices: usize) -> impl Fn(i64) -> Vec<ResourceSliceSpec> {
    let inventory = pb::GetInventoryResponse {
        devices: (0..devices)
            .map(|i| pb::Device {
                name: format!("gpu-{i}"),
                healthy: true,
                ..pb::Device::default()
            })
            .collect(),
        ..pb::GetInventoryResponse::default()
    };
    move |generation| build_pool(&inventory, &TARGET, generation).slices
}

fn listed(specs: Vec<ResourceSliceSpec>) -> Vec<Existing> {
    specs
        .into_iter()
        .enumerate()
        .map(|(i, spec)| Existing {
            name: format!("slice-{i}"),
            uid: Some(format!("uid-{i}")),
            resource_version: Some(format!("{}", 10 + i)),
            spec,
        })
        .collect()
}

#[test]
fn nothing_published_creates_every_slice_at_generation_1() {
    let got = plan(&[], 0, pool(200));
    assert_eq!(got.generation, 1);
    assert_eq!(got.writes.len(), 2);
    assert!(
        got.writes
            .iter()
            .all(|w| matches!(w, Write::Create(s) if s.pool.generation == 1))
    );
}

#[test]
fn an_unchanged_pool_is_left_alone_in_any_order() {
    let mut existing = listed(pool(300)(4));
    existing.reverse();
    let got = plan(&existing, 0, pool(300));
    assert_eq!(got.generation, 4);
    assert!(got.writes.is_empty());
}

#[test]
fn a_changed_pool_is_rewritten_at_the_next_generation() {
    let existing = listed(pool(130)(2));
    let got = plan(&existing, 0, pool(131));
    assert_eq!(got.generation, 3);
    assert_eq!(got.writes.len(), 2);
    for (i, write) in got.writes.iter().enumerate() {
        match write {
            Write::Update {
                name,
                resource_version,
                spec,
            } => {
                assert_eq!(name, &format!("slice-{i}"));
                assert_eq!(
                    resource_version.as_deref(),
                    Some(format!("{}", 10 + i).as_str())
                );
                assert_eq!(spec.pool.generation, 3);
            }
            other => panic!("expected an update, got {other:?}"),
        }
    }
}

#[test]
fn growing_creates_and_shrinking_deletes_last() {
    let grown = plan(&listed(pool(10)(1)), 0, pool(300));
    assert!(matches!(grown.writes[0], Write::Update { .. }));
    assert!(matches!(grown.writes[1], Write::Create(_)));
    assert!(matches!(grown.writes[2], Write::Create(_)));

    let shrunk = plan(&listed(pool(300)(5)), 0, pool(10));
    assert_eq!(shrunk.generation, 6);
    assert!(matches!(shrunk.writes[0], Write::Update { ref name, .. } if name == "slice-0"));
    assert_eq!(
        shrunk.writes[1..],
        [
            Write::Delete {
                name: "slice-1".into(),
                uid: Some("uid-1".into()),
                resource_version: Some("11".into())
            },
            Write::Delete {
                name: "slice-2".into(),
                uid: Some("uid-2".into()),
                resource_version: Some("12".into())
            },
        ]
    );
}

#[test]
fn a_deleted_slice_is_republished_at_a_higher_generation() {
    let mut existing = listed(pool(200)(3));
    existing.remove(1);
    let got = plan(&existing, 0, pool(200));
    assert_eq!(got.generation, 4);
    assert!(matches!(got.writes[0], Write::Update { .. }));
    assert!(matches!(got.writes[1], Write::Create(_)));
}

#[test]
fn mixed_generations_are_unified_above_the_highest() {
    let mut existing = listed(pool(200)(3));
    existing[0].spec.pool.generation = 9;
    let got = plan(&existing, 0, pool(200));
    assert_eq!(got.generation, 10);
    assert_eq!(got.writes.len(), 2);
}

#[test]
fn server_side_differences_do_not_count_as_changes() {
    let mut spec = pool(1)(1).remove(0);
    let mut server = spec.clone();
    let device = &mut spec.devices.as_mut().expect("devices")[0];
    device.taints = Some(vec![DeviceTaint {
        key: "k".into(),
        effect: "NoSchedule".into(),
        ..DeviceTaint::default()
    }]);
    let served = &mut server.devices.as_mut().expect("devices")[0];
    served.taints = Some(vec![DeviceTaint {
        key: "k".into(),
        effect: "NoSchedule".into(),
        time_added: Some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH)),
        ..DeviceTaint::default()
    }]);
    served.attributes = Some(Default::default());
    assert_eq!(normalized(spec), normalized(server));

    let empty = pool(0)(1);
    let mut listed_empty = listed(empty.clone());
    listed_empty[0].spec.devices = None;
    assert!(
        plan(&listed_empty, 0, |g| {
            let mut specs = empty.clone();
            specs[0].pool.generation = g;
            specs
        })
        .writes
        .is_empty()
    );
}

#[test]
fn slices_deleted_by_someone_else_come_back_above_the_last_generation() {
    let got = plan(&[], 7, pool(10));
    assert_eq!(got.generation, 8);
    assert!(matches!(got.writes[..], [Write::Create(ref s)] if s.pool.generation == 8));
    let in_sync = listed(pool(10)(3));
    assert_eq!(plan(&in_sync, 3, pool(10)).writes, []);
    assert_eq!(
        plan(&in_sync, 5, pool(10)).generation,
        6,
        "a listed pool older than ours is rewritten"
    );
}
