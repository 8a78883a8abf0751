//! Prepare requests for tests and benches: claim `ns/claim`, every device in
//! pool `node` under request `gpu`, every config from the claim.

use crate::claims::{ConfigRequest, DeviceRequest, PrepareRequest};
use crate::opaque::ConfigSource;

/// A request for `devices`, without configs.
pub fn request(uid: &str, devices: &[&str]) -> PrepareRequest {
    request_with(uid, devices, &[] as &[&str])
}

/// A request for `devices` with these opaque configs (JSON), from the claim.
pub fn request_with(uid: &str, devices: &[&str], configs: &[impl AsRef<str>]) -> PrepareRequest {
    PrepareRequest {
        uid: uid.to_owned(),
        namespace: "ns".to_owned(),
        name: "claim".to_owned(),
        devices: devices
            .iter()
            .map(|d| DeviceRequest {
                device: (*d).to_owned(),
                request_names: vec!["gpu".to_owned()],
                pool: "node".to_owned(),
                consumed_memory: None,
                share_id: String::new(),
            })
            .collect(),
        configs: configs
            .iter()
            .map(|json| ConfigRequest {
                source: ConfigSource::Claim,
                requests: vec![],
                parameters_json: json.as_ref().to_owned(),
            })
            .collect(),
    }
}

/// A `GpuConfig` (resource.nvidia.com/v1beta1) with this `sharing` JSON.
pub fn gpu_config(sharing: &str) -> String {
    format!(
        r#"{{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{sharing}}}"#
    )
}

/// The config that shares a GPU by MPS, `atp` percent active threads.
pub fn mps(atp: u8) -> String {
    gpu_config(&format!(
        r#"{{"strategy":"MPS","mpsConfig":{{"defaultActiveThreadPercentage":{atp}}}}}"#
    ))
}

/// The config that time-slices a GPU at `interval` ("Default", "Short",
/// "Medium", "Long").
pub fn timeslicing(interval: &str) -> String {
    gpu_config(&format!(
        r#"{{"strategy":"TimeSlicing","timeSlicingConfig":{{"interval":"{interval}"}}}}"#
    ))
}
