//! Proto messages to domain types and back.

use gpuslice_proto::gpuslice::v1 as pb;
use tonic::Status;

use crate::claims::{
    ConfigRequest, DeviceRequest, DeviceState, Engine, NodeView, PrepareRequest, Prepared,
};
use crate::config::MigOffering;
use crate::features::TimeSliceSettings;
use crate::inventory::{
    AttrValue, DeviceRef, GpuDevice, counter_set_name, free_counters, gpu_capacity, gpu_counters,
    mig_attributes, mig_capacity, slice_consumption, whole_gpu_attributes,
};
use crate::opaque::ConfigSource;
use crate::state::{AccessKind, ClaimRecord, DeviceSharing, RecordDevice};

pub use super::grpc_status::error;

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

/// The device name of a ClearHealth request.
pub fn device_name(device: String) -> Result<String, Status> {
    if device.is_empty() {
        return Err(Status::invalid_argument(
            "device is required: an inventory name such as gpu-0",
        ));
    }
    bounded("device", device)
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
                consumed_memory: d
                    .consumed_memory_bytes
                    .map(|b| {
                        u64::try_from(b).map_err(|_| {
                            Status::invalid_argument(format!(
                                "devices[].consumed_memory_bytes is {b}; it must not be negative"
                            ))
                        })
                    })
                    .transpose()?,
                share_id: bounded("devices[].share_id", d.share_id)?,
            })
        })
        .collect::<Result<_, Status>>()?;
    let configs = req
        .configs
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            let source = match pb::ConfigSource::try_from(c.source) {
                Ok(pb::ConfigSource::Class) => ConfigSource::Class,
                Ok(pb::ConfigSource::Claim) => ConfigSource::Claim,
                _ => {
                    return Err(Status::invalid_argument(format!(
                        "configs[{i}].source is {}; set CONFIG_SOURCE_CLASS (from the \
                         DeviceClass) or CONFIG_SOURCE_CLAIM (from the claim)",
                        c.source
                    )));
                }
            };
            Ok(ConfigRequest {
                source,
                requests: c.requests,
                parameters_json: c.parameters_json,
            })
        })
        .collect::<Result<_, Status>>()?;
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
            share_id: d.share_id.clone(),
            sharing: sharing_words(d),
        })
        .collect()
}

/// The device's kind of access, with what qualifies it: "exclusive",
/// "mig", "mps", "mps, memory 20.0 GiB", "timeslicing Long".
fn sharing_words(d: &RecordDevice) -> String {
    let kind = AccessKind::of_device(d);
    match &d.sharing {
        Some(DeviceSharing::TimeSlicing { interval }) => format!("{kind} {interval}"),
        Some(DeviceSharing::Mps(mps)) => match mps.memory_share {
            Some(bytes) => format!("{kind}, memory {}", gpuslice_quantity::show::gib(bytes)),
            None => kind.to_string(),
        },
        None => kind.to_string(),
    }
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

/// Every device of `view` with attributes, capacities, holders and (in
/// partitionable mode) counters. A MIG-managed GPU in layout mode is listed
/// whole but never available ([`crate::inventory::Inventory::offers_whole`]).
pub fn inventory_response(view: &NodeView) -> pb::GetInventoryResponse {
    let inventory = &view.inventory;
    let typed = |attrs: std::collections::BTreeMap<String, AttrValue>| {
        attrs.into_iter().map(|(k, v)| (k, attribute(v))).collect()
    };
    let partitionable = inventory.mig_offering == MigOffering::Partitionable;
    let devices = view
        .each_device()
        .map(|(found, state)| match found {
            DeviceRef::Gpu(gpu) => {
                let counters = match (&gpu.mig, partitionable) {
                    (Some(mig), true) => vec![pb::CounterConsumption {
                        counter_set: counter_set_name(&gpu.name),
                        counters: gpu_counters(mig).into_iter().collect(),
                    }],
                    _ => Vec::new(),
                };
                pb::Device {
                    features: Some(features(gpu, &state.timeslice_settings)),
                    ..device(
                        state,
                        typed(whole_gpu_attributes(gpu, &inventory.driver)),
                        gpu_capacity(&gpu.info).into_iter().collect(),
                        counters,
                    )
                }
            }
            DeviceRef::Mig(slice, parent) => {
                let counters = if partitionable {
                    vec![pb::CounterConsumption {
                        counter_set: counter_set_name(&parent.name),
                        counters: (parent.mig.as_ref())
                            .map(|mig| slice_consumption(mig, &slice.profile, slice.placement))
                            .unwrap_or_default()
                            .into_iter()
                            .collect(),
                    }]
                } else {
                    Vec::new()
                };
                device(
                    state,
                    typed(mig_attributes(slice, parent, &inventory.driver)),
                    mig_capacity(&slice.profile).into_iter().collect(),
                    counters,
                )
            }
        })
        .collect();
    let counter_sets = if partitionable {
        inventory
            .gpus
            .iter()
            .filter_map(|g| {
                g.mig.as_ref().map(|mig| pb::CounterSet {
                    name: counter_set_name(&g.name),
                    counters: free_counters(mig).into_iter().collect(),
                })
            })
            .collect()
    } else {
        Vec::new()
    };
    pb::GetInventoryResponse {
        devices,
        generation: view.generation,
        counter_sets,
        mig_advertise: None,
    }
}

/// What a whole GPU has.
fn features(gpu: &GpuDevice, timeslice: &TimeSliceSettings) -> pb::GpuFeatures {
    pb::GpuFeatures {
        mig: gpu.features.mig,
        mig_profiles: crate::features::profile_names(&gpu.model_profiles),
        mps: gpu.features.mps,
        mps_limits: gpu.features.mps_limits,
        timeslice_settings: timeslice.to_string(),
        nvlink_links: gpu.features.nvlink_links,
        clique: gpu.features.clique.clone().unwrap_or_default(),
    }
}

/// One device; an unhealthy one is not available to a new claim.
fn device(
    state: &DeviceState,
    attributes: std::collections::HashMap<String, pb::AttributeValue>,
    capacity: std::collections::HashMap<String, i64>,
    consumes_counters: Vec<pb::CounterConsumption>,
) -> pb::Device {
    pb::Device {
        name: state.name.clone(),
        attributes,
        capacity,
        available: state.available,
        holders: state.holders.clone(),
        consumes_counters,
        healthy: state.fault.is_none(),
        health_reason: (state.fault.as_ref())
            .map(|f| f.reason.clone())
            .unwrap_or_default(),
        memory_available: i64::try_from(state.memory_available).unwrap_or(i64::MAX),
        features: None,
    }
}

/// Every claim.
pub fn claims_response(engine: &Engine) -> pb::ListClaimsResponse {
    let records = engine.claims();
    let health = engine.claims_health(&records);
    let claims = records
        .iter()
        .zip(health)
        .map(|(r, health_problems)| pb::ClaimInfo {
            claim: Some(pb::ClaimRef {
                uid: r.uid.clone(),
                namespace: r.namespace.clone(),
                name: r.name.clone(),
            }),
            phase: r.phase.to_string(),
            devices: prepared_devices(r),
            cdi_spec_path: engine
                .settings()
                .cdi_dir
                .join(&r.cdi_spec_file)
                .display()
                .to_string(),
            prepared_at: r.prepared_at,
            health_problems: [engine.claim_health_problems(r), health_problems].concat(),
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
        mig_advertise: None,
        warnings: Vec::new(),
        sim_processes_dir: String::new(),
        claim_status: None,
    }
}
