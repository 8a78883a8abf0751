//! Prepare requests for the engine's tests: claim `ns/claim`, every device
//! in pool `node` under request `gpu`, every config from the claim.

use crate::claims::{ConfigRequest, DeviceRequest, PrepareRequest};
use crate::sharing::ConfigSource;

/// A request for `devices`, without configs.
pub(crate) fn request(uid: &str, devices: &[&str]) -> PrepareRequest {
    request_with(uid, devices, &[] as &[&str])
}

/// A request for `devices` with these opaque configs (JSON), from the claim.
pub(crate) fn request_with(
    uid: &str,
    devices: &[&str],
    configs: &[impl AsRef<str>],
) -> PrepareRequest {
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
