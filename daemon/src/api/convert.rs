//! Proto messages to domain types and back.

use gpuslice_proto::gpuslice::v1 as pb;
use tonic::Status;

use crate::claims::{ConfigRequest, DeviceRequest, Engine, PrepareRequest, Prepared};
use crate::gpu::{MigMode, MigSupport};
use crate::inventory::{AttrValue, gpu_attributes, gpu_capacity};
use crate::state::ClaimRecord;

pub use super::status::error;

/// Longest string field accepted before any other check: a 10 MB uid or name
/// is refused here without being copied into an error message.
const MAX_FIELD: usize = 4096;

fn bounded(field: &str, value: String) -> Result<String, Status> {
    if value.len() > MAX_FIELD {
        return Err(Status::invalid_argument(format!(
            "{field} is {} bytes; at most {MAX_FIELD} are allowed",
            value.len()
        )));
    }
    Ok(value)
}

/// The claim uid of an unprepare request.
pub fn claim_uid(claim: Option<pb::ClaimRef>) -> Result<String, Status> {
    let claim = claim.ok_or_else(|| Status::invalid_argument("claim is required"))?;
    bounded("claim.uid", claim.uid)
}

/// A prepare request in domain terms.
pub fn prepare_request(req: pb::PrepareRequest) -> Result<PrepareRequest, Status> {
    let claim = req
        .claim
        .ok_or_else(|| Status::invalid_argument("claim is required (uid, namespace, name)"))?;
    let devices = req
        .devices
        .into_iter()
        .map(|d| {
            Ok(DeviceRequest {
                device: bounded("devices[].device", d.device)?,
                request_names: d
                    .request_names
                    .into_iter()
                    .map(|r| bounded("devices[].request_names[]", r))
                    .collect::<Result<_, Status>>()?,
                pool: bounded("devices[].pool", d.pool)?,
            })
        })
        .collect::<Result<_, Status>>()?;
    let configs = req
        .configs
        .into_iter()
        .map(|c| ConfigRequest {
            requests: c.requests,
            parameters_json: c.parameters_json,
        })
        .collect();
    Ok(PrepareRequest {
        uid: bounded("claim.uid", claim.uid)?,
        namespace: bounded("claim.namespace", claim.namespace)?,
        name: bounded("claim.name", claim.name)?,
        devices,
        configs,
    })
}

fn prepared_devices(record: &ClaimRecord) -> Vec<pb::PreparedDevice> {
    record
        .devices
        .iter()
        .map(|d| pb::PreparedDevice {
            device: d.device.clone(),
            request_names: d.request_names.clone(),
            pool: d.pool.clone(),
            cdi_device_ids: d.cdi_device_ids.clone(),
        })
        .collect()
}

/// The reply to a prepare.
pub fn prepare_response(prepared: &Prepared) -> pb::PrepareResponse {
    pb::PrepareResponse {
        devices: prepared_devices(prepared.record()),
        already_prepared: matches!(prepared, Prepared::AlreadyPrepared(_)),
    }
}

fn attribute(value: AttrValue) -> pb::AttributeValue {
    use pb::attribute_value::Value;
    let value = match value {
        AttrValue::Str(s) => Value::String(s),
        AttrValue::Int(i) => Value::Int(i),
        AttrValue::Bool(b) => Value::Bool(b),
        AttrValue::Version(v) => Value::Version(v),
    };
    pb::AttributeValue { value: Some(value) }
}

/// Every device with attributes, capacities and holders.
pub fn inventory_response(engine: &Engine) -> pb::GetInventoryResponse {
    let inventory = engine.inventory();
    let uses = engine.device_use();
    let devices = inventory
        .gpus
        .iter()
        .zip(uses)
        .map(|(gpu, used)| pb::Device {
            name: gpu.name.clone(),
            attributes: gpu_attributes(&gpu.info, &inventory.driver)
                .into_iter()
                .map(|(k, v)| (k, attribute(v)))
                .collect(),
            capacity: gpu_capacity(&gpu.info).into_iter().collect(),
            available: used.holders.is_empty(),
            holders: used.holders,
            consumes_counters: Vec::new(),
            healthy: true,
            health_reason: String::new(),
        })
        .collect();
    pb::GetInventoryResponse {
        devices,
        generation: engine.generation(),
        counter_sets: Vec::new(),
    }
}

/// Per GPU, its MIG mode and the instances on it.
pub fn mig_layout_response(engine: &Engine) -> pb::GetMigLayoutResponse {
    let inventory = engine.inventory();
    let gpus = inventory
        .gpus
        .iter()
        .map(|gpu| pb::GpuMigLayout {
            device: gpu.name.clone(),
            uuid: gpu.info.uuid.clone(),
            index: gpu.info.index,
            mig_mode: mig_mode_text(gpu.info.mig),
            memory_slices: 0,
            instances: Vec::new(),
        })
        .collect();
    pb::GetMigLayoutResponse { gpus }
}

fn mig_mode_text(mig: MigSupport) -> String {
    let word = |mode| match mode {
        MigMode::Enabled => "enabled",
        MigMode::Disabled => "disabled",
    };
    match mig {
        MigSupport::NotSupported => "unsupported".into(),
        MigSupport::Supported { current, pending } if current == pending => word(current).into(),
        MigSupport::Supported { current, pending } => {
            format!("{} (pending {})", word(current), word(pending))
        }
    }
}

/// Every claim.
pub fn claims_response(engine: &Engine) -> pb::ListClaimsResponse {
    let claims = engine
        .claims()
        .iter()
        .map(|r| pb::ClaimInfo {
            claim: Some(pb::ClaimRef {
                uid: r.uid.clone(),
                namespace: r.namespace.clone(),
                name: r.name.clone(),
            }),
            phase: r.phase.as_str().to_owned(),
            devices: prepared_devices(r),
            cdi_spec_path: engine
                .settings()
                .cdi_dir
                .join(&r.cdi_spec_file)
                .display()
                .to_string(),
            prepared_at: r.prepared_at,
        })
        .collect();
    pb::ListClaimsResponse { claims }
}

/// Daemon health and counts.
pub fn status_response(engine: &Engine) -> pb::GetStatusResponse {
    let inventory = engine.inventory();
    let settings = engine.settings();
    let (cuda_major, cuda_minor) = inventory.driver.cuda_driver_version;
    pb::GetStatusResponse {
        version: env!("CARGO_PKG_VERSION").to_owned(),
        backend: engine.backend_name().to_owned(),
        driver_version: inventory.driver.driver_version.clone(),
        cuda_driver_version: format!("{cuda_major}.{cuda_minor}"),
        gpu_count: u32::try_from(inventory.gpus.len()).unwrap_or(u32::MAX),
        claim_count: u32::try_from(engine.claims().len()).unwrap_or(u32::MAX),
        uptime_seconds: engine.uptime_seconds(),
        boot_id: settings.boot_id.clone(),
        cdi_dir: settings.cdi_dir.display().to_string(),
        state_dir: engine.state_dir().display().to_string(),
        problems: engine.problems(),
    }
}
