use std::time::Duration;

use gpuslice_proto::gpuslice::v1 as pb;
use tonic::Status;

use super::{Health, MAX_MESSAGE, report, v1, v1alpha1};

fn device(name: &str, healthy: bool, reason: &str) -> pb::Device {
    pb::Device {
        name: name.into(),
        healthy,
        health_reason: reason.into(),
        ..Default::default()
    }
}

#[test]
fn the_inventory_becomes_a_complete_list_with_reasons() {
    let inventory = pb::GetInventoryResponse {
        devices: vec![
            device("gpu-0", true, ""),
            device(
                "gpu-1",
                false,
                "XID 79 (GPU has fallen off the bus) since 2025-06-01T12:00:00Z",
            ),
        ],
        ..Default::default()
    };
    let r = report("node-1", Ok(&inventory), 1_000, Duration::from_secs(10));
    assert_eq!(
        (r.pool.as_str(), r.at, r.timeout_seconds),
        ("node-1", 1_000, 30)
    );
    let health: Vec<_> = r
        .devices
        .iter()
        .map(|d| (d.device.as_str(), d.health))
        .collect();
    assert_eq!(
        health,
        vec![("gpu-0", Health::Healthy), ("gpu-1", Health::Unhealthy)]
    );
    assert!(r.devices[1].message.starts_with("XID 79"));

    let msg = v1::message(&r);
    let gpu1 = &msg.devices[1];
    assert_eq!(
        gpu1.device
            .as_ref()
            .map(|d| (d.pool_name.as_str(), d.device_name.as_str())),
        Some(("node-1", "gpu-1"))
    );
    assert_eq!(
        gpu1.health,
        crate::proto::health_v1::HealthStatus::Unhealthy as i32
    );
    assert_eq!(
        (gpu1.last_updated_time, gpu1.health_check_timeout_seconds),
        (1_000, 30)
    );
    let alpha = v1alpha1::message(&r);
    assert_eq!(
        alpha.devices[0].health,
        crate::proto::health_v1alpha1::HealthStatus::Healthy as i32
    );
    assert_eq!(alpha.devices[1].message, gpu1.message);
}

#[test]
fn devices_last_seen_are_unknown_while_gpusliced_is_silent() {
    let last = vec!["gpu-0".to_owned(), "gpu-1".to_owned()];
    let status = Status::unavailable("connection refused");
    let r = report("node-1", Err((&last, &status)), 5, Duration::from_secs(1));
    assert_eq!(r.devices.len(), 2);
    assert!(r.devices.iter().all(|d| d.health == Health::Unknown));
    assert!(
        r.devices[0]
            .message
            .contains("gpusliced does not answer (Unavailable): connection refused")
    );
    assert_eq!(r.timeout_seconds, 3);
}

#[test]
fn long_reasons_are_cut_to_what_the_kubelet_keeps() {
    let reason = "é".repeat(MAX_MESSAGE);
    let inventory = pb::GetInventoryResponse {
        devices: vec![device("gpu-0", false, &reason)],
        ..Default::default()
    };
    let r = report("n", Ok(&inventory), 0, Duration::from_secs(10));
    let message = &r.devices[0].message;
    assert!(
        message.len() <= MAX_MESSAGE && message.ends_with("..."),
        "{}",
        message.len()
    );
}
