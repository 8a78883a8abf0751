//! PrepareChannel, UnprepareChannel, SetDomainPeers and ListDomains: the
//! proto messages to and from the `domains` engine, and its errors as gRPC
//! codes (a prepare waiting for its IMEX daemon is UNAVAILABLE: retry).

use gpuslice_proto::gpuslice::v1 as pb;
use tonic::{Code, Status};

use super::convert;
use crate::domains::request::ChannelConfigEntry;
use crate::domains::{ChannelDevice, ChannelRequest, DomainError, DomainStatus, PreparedChannel};
/// A channel claim's prepare in the engine's terms: read as a GPU claim's
/// request is (the same bounds and config sources), then taken apart.
pub fn channel_request(req: pb::PrepareRequest) -> Result<ChannelRequest, Status> {
    let req = convert::prepare_request(req)?;
    Ok(ChannelRequest {
        uid: req.uid,
        namespace: req.namespace,
        name: req.name,
        devices: req
            .devices
            .into_iter()
            .map(|d| ChannelDevice {
                device: d.device,
                request_names: d.request_names,
                pool: d.pool,
            })
            .collect(),
        configs: req
            .configs
            .into_iter()
            .map(|c| ChannelConfigEntry {
                requests: c.requests,
                parameters_json: c.parameters_json,
            })
            .collect(),
    })
}

/// The answer to a channel prepare.
pub fn prepared(prepared: &PreparedChannel) -> pb::PrepareResponse {
    let record = prepared.record();
    pb::PrepareResponse {
        devices: vec![pb::PreparedDevice {
            device: record.device.clone(),
            request_names: record.request_names.clone(),
            pool: record.pool.clone(),
            cdi_device_ids: vec![prepared.cdi_device_id()],
            share_id: String::new(),
            sharing: "imex-channel".to_owned(),
        }],
        already_prepared: matches!(prepared, PreparedChannel::AlreadyPrepared(_)),
    }
}

/// A domain as ListDomains shows it.
pub fn domain_info(status: DomainStatus) -> pb::DomainInfo {
    let (ready, not_ready) = match status.ready {
        gpuslice_imex::imex::Query::Ready => (true, String::new()),
        gpuslice_imex::imex::Query::NotReady(answer) => (false, answer),
    };
    pb::DomainInfo {
        domain: status.domain,
        claims: status.claims,
        peers: status.peers,
        daemon_state: status.daemon.state.to_string(),
        pid: status.daemon.pid.unwrap_or(0),
        restarts: status.daemon.restarts,
        ready,
        not_ready,
    }
}

/// The gRPC status of an engine error.
pub fn error(err: DomainError) -> Status {
    let code = match &err {
        DomainError::InvalidField { .. } | DomainError::Config(_) | DomainError::BadPeer { .. } => {
            Code::InvalidArgument
        }
        DomainError::NoFabric { .. }
        | DomainError::OtherDomain { .. }
        | DomainError::PreparedDifferently { .. }
        | DomainError::NotMember { .. }
        | DomainError::NoChannelDevices { .. } => Code::FailedPrecondition,
        DomainError::NotReady { .. }
        | DomainError::DaemonDown { .. }
        | DomainError::Io { .. }
        | DomainError::Record { .. } => Code::Unavailable,
    };
    if code == Code::Unavailable {
        tracing::warn!(error = %err, "channel operation failed; the caller will retry");
    }
    Status::new(code, err.to_string())
}
