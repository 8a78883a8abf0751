//! PrepareChannel, UnprepareChannel, SetDomainMembers and ListDomains: the
//! proto messages to and from the `domains` engine, and its errors as gRPC
//! codes (a prepare waiting for its IMEX daemon is UNAVAILABLE: retry).

use gpuslice_proto::gpuslice::v1 as pb;
use tonic::{Code, Status};

use super::convert;
use crate::compute_domains::members::Member;
use crate::compute_domains::request::ChannelConfigEntry;
use crate::compute_domains::{
    ChannelDevice, ChannelRequest, DomainError, DomainRef, DomainStatus, PreparedChannel,
};

/// A channel claim's prepare in the engine's terms: the claim read as a GPU
/// claim's request is (the same bounds and config sources), then taken
/// apart; the domain the caller vouches for beside it.
pub fn channel_request(req: pb::PrepareChannelRequest) -> Result<ChannelRequest, Status> {
    let vouched = req.domain.map(|d| DomainRef {
        namespace: d.namespace,
        name: d.name,
        uid: d.uid,
    });
    let claim = req
        .claim
        .ok_or_else(|| Status::invalid_argument("claim: missing"))?;
    let req = convert::prepare_request(claim)?;
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
        vouched,
    })
}

/// The members of SetDomainMembers.
pub fn members(members: &[pb::DomainMember]) -> Vec<Member> {
    members
        .iter()
        .map(|m| Member {
            index: m.index,
            address: m.address.clone(),
        })
        .collect()
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
    let ready = status.ready();
    let seen = status.seen;
    pb::DomainInfo {
        domain: status.domain,
        claims: status.claims,
        daemon_state: seen.status.state.to_string(),
        pid: seen.status.pid.unwrap_or(0),
        restarts: seen.status.restarts,
        ready,
        not_ready: match seen.ready {
            gpuslice_imex::imex::Query::Ready => String::new(),
            gpuslice_imex::imex::Query::NotReady(answer) => answer,
        },
        members: seen
            .mapping
            .iter()
            .map(|(index, address)| pb::DomainMember {
                index: *index,
                address: address.to_string(),
            })
            .collect(),
        members_known: seen.knows,
        connected: seen.connected.is_ok(),
        not_connected: seen.connected.err().unwrap_or_default(),
        namespace: status.namespace,
        name: status.name,
        unit: seen.status.unit.unwrap_or_default(),
    }
}

/// The gRPC status of an engine error.
pub fn error(err: DomainError) -> Status {
    let code = match &err {
        DomainError::InvalidField { .. }
        | DomainError::Config(_)
        | DomainError::NotVouched { .. }
        | DomainError::OtherTenant { .. } => Code::InvalidArgument,
        DomainError::NoFabric { .. }
        | DomainError::OtherDomain { .. }
        | DomainError::PreparedDifferently { .. }
        | DomainError::NotMember { .. }
        | DomainError::NoBindAddress
        | DomainError::NoRackNetwork
        | DomainError::UnitProgram { .. }
        | DomainError::NoChannelDevices { .. } => Code::FailedPrecondition,
        DomainError::NotReady { .. }
        | DomainError::DaemonDown { .. }
        | DomainError::Systemd(_)
        | DomainError::Io { .. }
        | DomainError::Record(_) => Code::Unavailable,
    };
    if code == Code::Unavailable {
        tracing::warn!(error = %err, "channel operation failed; the caller will retry");
    }
    Status::new(code, err.to_string())
}
