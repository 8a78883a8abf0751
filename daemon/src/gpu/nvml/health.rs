//! Health events from NVML: one event set registered for critical XIDs and
//! ECC errors on every GPU (as NVIDIA's DRA driver registers them), plus a
//! probe that notices a GPU fell off the bus and notices it answer again.
//!
//! Registration is per GPU: a GPU that does not support an event type is
//! registered for the others; one that supports none, or refuses, is listed
//! as unmonitored and the rest are still watched (nvml-wrapper frees the set
//! when a registration fails, so the set is rebuilt from the GPUs already
//! registered). Waits go through `raw::wait_event`, which keeps the event's
//! GPU-instance and compute-instance ids. Every [`PROBE_EVERY`], and at once
//! when a wait answers GPU_IS_LOST, each GPU is looked up by UUID: a lookup
//! answering GPU_IS_LOST (or NOT_FOUND: the GPU left the bus) is a `GpuLost`
//! event, and a GPU that was lost and answers again is `Recovered`.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use nvml_wrapper::bitmasks::event::EventTypes;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::{EventSet, Nvml};

use super::convert::map_err;
use super::raw::{self, RawEvent};
use crate::gpu::{GpuError, HealthEvent, HealthEventKind, HealthWatch, Unmonitored, instance_id};

/// The events watched on every GPU.
const WATCHED: EventTypes = EventTypes::CRITICAL_XID_ERROR
    .union(EventTypes::DOUBLE_BIT_ECC_ERROR)
    .union(EventTypes::SINGLE_BIT_ECC_ERROR);

/// How often every GPU is probed for being lost (or back).
pub const PROBE_EVERY: Duration = Duration::from_secs(5);

/// Most events taken from the set in one `wait` once the first has arrived.
const DRAIN_MAX: usize = 64;

/// A GPU the watch knows.
#[derive(Debug, Clone)]
struct Watched {
    index: u32,
    uuid: String,
    events: EventTypes,
}

/// The NVML watch.
#[derive(Debug)]
pub(super) struct NvmlHealthWatch<'nvml> {
    nvml: &'nvml Nvml,
    /// `None` when no GPU could be registered (the probe still runs).
    set: Option<EventSet<'nvml>>,
    gpus: Vec<Watched>,
    unmonitored: Vec<Unmonitored>,
    lost: BTreeSet<u32>,
    next_probe: Instant,
}

/// Registers the event set on every GPU.
pub(super) fn watch(nvml: &Nvml) -> Result<NvmlHealthWatch<'_>, GpuError> {
    let count = nvml
        .device_count()
        .map_err(|e| map_err("nvmlDeviceGetCount_v2", "GPUs".into(), e))?;
    let mut candidates = Vec::new();
    let mut unmonitored = Vec::new();
    for index in 0..count {
        match candidate(nvml, index) {
            Ok(gpu) if gpu.events.is_empty() => unmonitored.push(Unmonitored {
                gpu_index: index,
                reason: "supports none of the XID and ECC events".into(),
            }),
            Ok(gpu) => candidates.push(gpu),
            Err(err) => unmonitored.push(Unmonitored {
                gpu_index: index,
                reason: err.to_string(),
            }),
        }
    }
    let mut registered = Vec::new();
    let mut set = None;
    for gpu in candidates {
        let current = match set.take() {
            Some(current) => current,
            None => new_set(nvml)?,
        };
        match register(nvml, &gpu, current) {
            Ok(next) => {
                set = Some(next);
                registered.push(gpu);
            }
            Err(err) => {
                unmonitored.push(Unmonitored {
                    gpu_index: gpu.index,
                    reason: err.to_string(),
                });
                set = rebuild(nvml, &mut registered, &mut unmonitored)?;
            }
        }
    }
    let unregistered: Vec<Watched> = all_gpus(nvml, count)
        .filter(|g| !registered.iter().any(|r| r.index == g.index))
        .collect();
    let mut gpus = registered;
    gpus.extend(unregistered);
    Ok(NvmlHealthWatch {
        nvml,
        set,
        gpus,
        unmonitored,
        lost: BTreeSet::new(),
        next_probe: Instant::now() + PROBE_EVERY,
    })
}

/// A GPU with the watched events it supports.
fn candidate(nvml: &Nvml, index: u32) -> Result<Watched, GpuError> {
    let on = |call| move |e| map_err(call, format!("GPU {index} health events"), e);
    let dev = nvml
        .device_by_index(index)
        .map_err(on("nvmlDeviceGetHandleByIndex_v2"))?;
    let supported = dev
        .supported_event_types()
        .map_err(on("nvmlDeviceGetSupportedEventTypes"))?;
    Ok(Watched {
        index,
        uuid: dev.uuid().map_err(on("nvmlDeviceGetUUID"))?,
        events: supported.intersection(WATCHED),
    })
}

/// Every GPU by index and UUID (for the probe), skipping ones that do not answer.
fn all_gpus(nvml: &Nvml, count: u32) -> impl Iterator<Item = Watched> + '_ {
    (0..count).filter_map(move |index| {
        let uuid = nvml.device_by_index(index).and_then(|d| d.uuid()).ok()?;
        Some(Watched {
            index,
            uuid,
            events: EventTypes::empty(),
        })
    })
}

fn new_set(nvml: &Nvml) -> Result<EventSet<'_>, GpuError> {
    nvml.create_event_set()
        .map_err(|e| map_err("nvmlEventSetCreate", "health events".into(), e))
}

fn register<'n>(
    nvml: &'n Nvml,
    gpu: &Watched,
    set: EventSet<'n>,
) -> Result<EventSet<'n>, GpuError> {
    let what = || format!("GPU {} health events", gpu.index);
    let dev = nvml
        .device_by_index(gpu.index)
        .map_err(|e| map_err("nvmlDeviceGetHandleByIndex_v2", what(), e))?;
    dev.register_events(gpu.events, set)
        .map_err(|e| map_err("nvmlDeviceRegisterEvents", what(), e.error))
}

/// A new set with every GPU of `registered`; one that now refuses moves to
/// `unmonitored`. `None` when none is left.
fn rebuild<'n>(
    nvml: &'n Nvml,
    registered: &mut Vec<Watched>,
    unmonitored: &mut Vec<Unmonitored>,
) -> Result<Option<EventSet<'n>>, GpuError> {
    'again: loop {
        if registered.is_empty() {
            return Ok(None);
        }
        let mut set = new_set(nvml)?;
        for (i, gpu) in registered.iter().enumerate() {
            match register(nvml, gpu, set) {
                Ok(next) => set = next,
                Err(err) => {
                    let gpu = registered.remove(i);
                    unmonitored.push(Unmonitored {
                        gpu_index: gpu.index,
                        reason: err.to_string(),
                    });
                    continue 'again;
                }
            }
        }
        return Ok(Some(set));
    }
}

impl NvmlHealthWatch<'_> {
    fn event(&self, raw: &RawEvent<'_>) -> Option<HealthEvent> {
        // NVML names the parent GPU; a MIG device handle is taken to its parent.
        let parent = raw.device.mig_parent_device().ok();
        let device = parent.as_ref().unwrap_or(&raw.device);
        let uuid = device.uuid().ok();
        let known = self.gpus.iter().find(|g| Some(&g.uuid) == uuid.as_ref());
        let (gpu_index, gpu_uuid) = match (known, device.index()) {
            (Some(g), _) => (g.index, g.uuid.clone()),
            (None, Ok(index)) => (index, uuid.unwrap_or_default()),
            (None, Err(err)) => {
                tracing::warn!(error = %err, event_type = raw.event_type, "health event from a GPU NVML cannot name; ignored");
                return None;
            }
        };
        let types = EventTypes::from_bits_truncate(raw.event_type);
        let kind = if types.contains(EventTypes::CRITICAL_XID_ERROR) {
            HealthEventKind::Xid(raw.data)
        } else if types.contains(EventTypes::DOUBLE_BIT_ECC_ERROR) {
            HealthEventKind::DoubleBitEcc
        } else if types.contains(EventTypes::SINGLE_BIT_ECC_ERROR) {
            HealthEventKind::SingleBitEcc
        } else {
            return None;
        };
        Some(HealthEvent {
            gpu_index,
            gpu_uuid,
            gpu_instance: instance_id(raw.gpu_instance),
            compute_instance: instance_id(raw.compute_instance),
            kind,
            message: format!("NVML event type {:#x}", raw.event_type),
        })
    }

    /// Events from the set: the first within `timeout`, then what is queued.
    /// `Ok(None)` when the set answered GPU_IS_LOST.
    fn take_events(
        &self,
        set: &EventSet<'_>,
        timeout: Duration,
    ) -> Result<Option<Vec<HealthEvent>>, GpuError> {
        let mut events = Vec::new();
        let mut wait_ms = u32::try_from(timeout.as_millis()).unwrap_or(u32::MAX);
        while events.len() < DRAIN_MAX {
            match raw::wait_event(set, wait_ms) {
                Ok(raw) => events.extend(self.event(&raw)),
                Err(NvmlError::Timeout) => break,
                Err(NvmlError::GpuLost) if events.is_empty() => return Ok(None),
                Err(NvmlError::GpuLost) => break,
                Err(err) => {
                    return Err(map_err("nvmlEventSetWait_v2", "health events".into(), err));
                }
            }
            wait_ms = 0;
        }
        Ok(Some(events))
    }

    /// Lost and recovered GPUs since the last probe.
    fn probe(&mut self) -> Vec<HealthEvent> {
        let mut events = Vec::new();
        for gpu in &self.gpus {
            let answer = self
                .nvml
                .device_by_uuid(gpu.uuid.as_str())
                .and_then(|d| d.pci_info());
            let (kind, message) = match answer {
                Err(err @ (NvmlError::GpuLost | NvmlError::NotFound))
                    if self.lost.insert(gpu.index) =>
                {
                    (
                        HealthEventKind::GpuLost,
                        format!("NVML answers {err} when looking the GPU up by UUID"),
                    )
                }
                Ok(_) if self.lost.remove(&gpu.index) => (
                    HealthEventKind::Recovered,
                    "the lost GPU answers NVML again".to_owned(),
                ),
                _ => continue,
            };
            events.push(HealthEvent {
                gpu_index: gpu.index,
                gpu_uuid: gpu.uuid.clone(),
                gpu_instance: None,
                compute_instance: None,
                kind,
                message,
            });
        }
        self.next_probe = Instant::now() + PROBE_EVERY;
        events
    }
}

/// Blocks the watch's thread for `duration` (parks, looping because a park
/// may end early).
fn pause(duration: Duration) {
    let deadline = Instant::now() + duration;
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        if left.is_zero() {
            return;
        }
        std::thread::park_timeout(left);
    }
}

impl HealthWatch for NvmlHealthWatch<'_> {
    fn wait(&mut self, timeout: Duration) -> Result<Vec<HealthEvent>, GpuError> {
        let taken = match &self.set {
            Some(set) => self.take_events(set, timeout)?,
            None => {
                pause(timeout);
                Some(Vec::new())
            }
        };
        let mut events = match taken {
            Some(events) => events,
            None => {
                // GPU_IS_LOST from the set: find which GPU now, and do not
                // spin on a set that keeps answering it.
                let lost = self.probe();
                pause(timeout);
                return Ok(lost);
            }
        };
        if Instant::now() >= self.next_probe {
            events.extend(self.probe());
        }
        Ok(events)
    }

    fn unmonitored(&self) -> Vec<Unmonitored> {
        self.unmonitored.clone()
    }
}
