//! Proto messages to domain types and back.

use gpuslice_proto::gpuslice::v1 as pb;
use tonic::Status;

use crate::claims::{ConfigRequest, DeviceRequest, DeviceUse, Engine, PrepareRequest, Prepared};
use crate::inventory::{
    AttrValue, counter_set_name, gpu_attributes, gpu_capacity, gpu_counters, mig_attributes,
    mig_capacity, slice_consumption,
};
use crate::state::ClaimRecord;

pub use super::status::error;

/// Longest string field accepted before any other check: a 10 MB uid or name
/// is refused here without being copied into an error message.
pub const MAX_FIELD: usize = 4096;

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

/// Every device with attributes, capacities, holders and (in partitionable
/// mode) counters.
pub fn inventory_response(engine: &Engine) -> pb::GetInventoryResponse {
    let inventory = engine.inventory();
    let mut uses = engine.device_use().into_iter();
    let typed = |attrs: std::collections::BTreeMap<String, AttrValue>| {
        attrs.into_iter().map(|(k, v)| (k, attribute(v))).collect()
    };
    let mut devices = Vec::new();
    for gpu in &inventory.gpus {
        let used = uses.next();
        let counters = match (&gpu.mig, inventory.partitionable) {
            (Some(mig), true) => vec![pb::CounterConsumption {
                counter_set: counter_set_name(&gpu.name),
                counters: gpu_counters(mig).into_iter().collect(),
            }],
            _ => Vec::new(),
        };
        devices.push(device(
            gpu.name.clone(),
            typed(gpu_attributes(&gpu.info, &inventory.driver)),
            gpu_capacity(&gpu.info).into_iter().collect(),
            used,
            counters,
        ));
    }
    for slice in &inventory.mig {
        let used = uses.next();
        let Some(parent) = inventory.gpus.get(slice.parent) else {
            continue;
        };
        let counters = if inventory.partitionable {
            vec![pb::CounterConsumption {
                counter_set: counter_set_name(&parent.name),
                counters: slice_consumption(&slice.profile, slice.placement)
                    .into_iter()
                    .collect(),
            }]
        } else {
            Vec::new()
        };
        devices.push(device(
            slice.name.clone(),
            typed(mig_attributes(slice, parent, &inventory.driver)),
            mig_capacity(&slice.profile).into_iter().collect(),
            used,
            counters,
        ));
    }
    let counter_sets = if inventory.partitionable {
        inventory
            .gpus
            .iter()
            .filter_map(|g| {
                g.mig.as_ref().map(|mig| pb::CounterSet {
                    name: counter_set_name(&g.name),
                    counters: gpu_counters(mig).into_iter().collect(),
                })
            })
            .collect()
    } else {
        Vec::new()
    };
    pb::GetInventoryResponse {
        devices,
        generation: engine.generation(),
        counter_sets,
    }
}

fn device(
    name: String,
    attributes: std::collections::HashMap<String, pb::AttributeValue>,
    capacity: std::collections::HashMap<String, i64>,
    used: Option<DeviceUse>,
    consumes_counters: Vec<pb::CounterConsumption>,
) -> pb::Device {
    let (available, holders) = used.map_or((true, Vec::new()), |u| (u.available, u.holders));
    pb::Device {
        name,
        attributes,
        capacity,
        available,
        holders,
        consumes_counters,
        healthy: true,
        health_reason: String::new(),
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
