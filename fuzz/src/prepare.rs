//! Targets `prepare_request` (protobuf bytes) and `prepare_structured`
//! (requests built by [`crate::request_gen`]): a Prepare through what the
//! gRPC service does with it — the proto conversion (`api::prepare_request`)
//! and the claim engine (`Engine::prepare`, whose first step is
//! `PrepareRequest::validate`) — on the simulated node ([`crate::node`]).
//!
//! Invariants:
//! * nothing panics;
//! * the conversion bounds every claim and device string by `api::MAX_FIELD`
//!   and refuses with a short INVALID_ARGUMENT that echoes nothing;
//! * a request validation refuses never touches the disk or the hardware:
//!   the engine refuses it with the same error, no file event fires in the
//!   state and CDI folders (inotify), no simulated GPU call is made; its
//!   status is INVALID_ARGUMENT and its message stays bounded whatever the
//!   input's size;
//! * a request validation accepts holds only names within Kubernetes' size
//!   limits (uid 36, names 253, request names 63, configs 10 KiB) and no `/`
//!   or NUL anywhere a file name or record could take it from;
//! * prepared, it has a spec that parses and validates, a re-prepare returns
//!   the same CDI ids, and unprepare removes it; refused after validation,
//!   its status is never INTERNAL, and when it is the caller's mistake
//!   (INVALID_ARGUMENT) nothing was touched either; either way the node ends
//!   exactly as it started (same files, no claim, same inventory, same MIG
//!   instances). The node's engine has no sharing tools (no MPS control
//!   program or nvidia-smi to spawn per input), so a valid MPS or
//!   time-slicing claim is refused UNAVAILABLE after validation and must
//!   leave nothing behind like any other refusal.

use gpuslice::api::{MAX_FIELD, grpc_status, prepare_request};
use gpuslice::claims::{PrepareRequest, Prepared, Unprepared};
use gpuslice_cdi::{QualifiedName, Spec};
use gpuslice_proto::gpuslice::v1 as pb;
use tonic::Code;

use crate::node::{Node, node};

/// Kubernetes' limits: DNS subdomain, DNS label, opaque config size.
const K8S_NAME: usize = 253;
const K8S_LABEL: usize = 63;
const K8S_CONFIG: usize = 10 * 1024;

/// Runs one decoded request through conversion and the engine.
pub fn check(request: pb::PrepareRequest) {
    let node = node();
    let converted = match prepare_request(request) {
        Ok(converted) => converted,
        Err(status) => {
            assert_eq!(
                status.code(),
                Code::InvalidArgument,
                "conversion: {status:?}"
            );
            assert!(
                status.message().len() <= 200,
                "conversion echoes input: {status:?}"
            );
            return;
        }
    };
    check_converted(&converted);
    node.file_events();
    let calls = node.hardware_calls();
    match converted.validate(&node.engine.inventory()) {
        Err(refusal) => {
            let engine = node.engine.prepare(&converted);
            let events = node.file_events();
            assert!(
                events.is_empty(),
                "refused request touched files: {events:?}"
            );
            assert_eq!(
                node.hardware_calls(),
                calls,
                "refused request touched the hardware"
            );
            let err = engine.expect_err("the engine prepared what validation refuses");
            assert_eq!(
                err.to_string(),
                refusal.to_string(),
                "engine and validation disagree"
            );
            let status = grpc_status(err);
            assert!(
                status.code() == Code::InvalidArgument,
                "validation refusal with status {status:?}"
            );
            assert!(
                status.message().len() <= 3 * K8S_CONFIG,
                "refusal message of {} bytes",
                status.message().len()
            );
        }
        Ok(_) => {
            check_accepted(&converted);
            prepare_cycle(node, &converted);
            node.assert_as_started("after a prepare cycle");
        }
    }
}

fn check_converted(req: &PrepareRequest) {
    let fields = [&req.uid, &req.namespace, &req.name]
        .into_iter()
        .chain(req.devices.iter().flat_map(|d| [&d.device, &d.pool]))
        .chain(req.devices.iter().flat_map(|d| &d.request_names));
    for field in fields {
        assert!(
            field.len() <= MAX_FIELD,
            "conversion let a {}-byte field through",
            field.len()
        );
    }
}

/// What validation lets through fits Kubernetes' limits and file names.
fn check_accepted(req: &PrepareRequest) {
    assert_eq!(req.uid.len(), 36, "accepted uid {:?}", req.uid);
    let named = [(&req.namespace, K8S_NAME), (&req.name, K8S_NAME)]
        .into_iter()
        .chain(req.devices.iter().map(|d| (&d.pool, K8S_NAME)))
        .chain(
            req.devices
                .iter()
                .flat_map(|d| d.request_names.iter().map(|r| (r, K8S_LABEL))),
        );
    for (value, max) in named {
        assert!(value.len() <= max, "accepted a {}-byte name", value.len());
        assert!(!value.contains(['/', '\0']), "accepted {value:?}");
    }
    for device in &req.devices {
        assert!(
            !device.device.contains(['/', '\0']),
            "accepted device {:?}",
            device.device
        );
    }
    for config in &req.configs {
        assert!(
            config.parameters_json.len() <= K8S_CONFIG,
            "accepted a large config"
        );
    }
}

/// Prepare, re-prepare, check the spec, unprepare.
fn prepare_cycle(node: &Node, req: &PrepareRequest) {
    node.file_events();
    let calls = node.hardware_calls();
    let prepared = match node.engine.prepare(req) {
        Ok(prepared) => prepared,
        Err(err) => {
            let status = grpc_status(err);
            assert_ne!(
                status.code(),
                Code::Internal,
                "valid request failed: {status:?}"
            );
            if status.code() == Code::InvalidArgument {
                let events = node.file_events();
                assert!(events.is_empty(), "bad input touched files: {events:?}");
                assert_eq!(
                    node.hardware_calls(),
                    calls,
                    "bad input touched the hardware"
                );
            }
            return;
        }
    };
    let record = prepared.record().clone();
    assert!(
        matches!(prepared, Prepared::Created(_)),
        "first prepare not Created"
    );
    check_spec(node, &record.cdi_spec_file, &record.devices);
    match node.engine.prepare(req) {
        Ok(Prepared::AlreadyPrepared(again)) => {
            assert_eq!(
                again.devices, record.devices,
                "re-prepare changed the devices"
            );
        }
        other => panic!("re-prepare gave {other:?}"),
    }
    let done = node.engine.unprepare(&req.uid);
    assert!(
        matches!(done, Ok(Unprepared::Removed)),
        "unprepare gave {done:?}"
    );
    let again = node.engine.unprepare(&req.uid);
    assert!(
        matches!(again, Ok(Unprepared::NotPresent)),
        "second unprepare gave {again:?}"
    );
}

fn check_spec(node: &Node, file: &str, devices: &[gpuslice::state::RecordDevice]) {
    let path = node.cdi_dir().join(file);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let spec: Spec = serde_json::from_slice(&bytes).expect("the written spec parses");
    if let Err(err) = gpuslice_cdi::validate(&spec) {
        panic!("the written spec is invalid: {err}");
    }
    for id in devices.iter().flat_map(|d| &d.cdi_device_ids) {
        let name = QualifiedName::parse(id).unwrap_or_else(|e| panic!("CDI id {id:?}: {e}"));
        assert_eq!(
            name.kind().to_string(),
            spec.kind,
            "CDI id {id:?} of another kind"
        );
        assert!(
            spec.devices.iter().any(|d| d.name == name.name()),
            "CDI id {id:?} names no device of the spec"
        );
    }
}
