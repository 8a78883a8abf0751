//! NVML's event sets over the simulator's health events (its fault
//! interface: `[backend.sim] health_events`, one event a line), in safe
//! code. A set made by `nvmlEventSetCreate` sees what arrives after it is
//! made, as NVML's sets do; GPUs are registered for XID and ECC events
//! (what the simulated GPUs support); a wait answers the next event of a
//! registered type on a registered GPU, with the GPU- and compute-instance
//! ids of a MIG-scoped one (0xFFFFFFFF otherwise), or TIMEOUT.
//!
//! A `lost` event is not an NVML event: the GPU answers GPU_IS_LOST from
//! then on (to every process's call naming it, in this process), and the
//! wait answers GPU_IS_LOST; `recovered` makes it answer again. Both are
//! this library's own, since a real GPU leaves the bus and comes back by
//! itself.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use gpuslice::gpu::sim::SimHealthWatch;
use gpuslice::gpu::{HealthEvent, HealthEventKind, HealthWatch, NO_INSTANCE};
use nvml_wrapper_sys::bindings as sys;

use crate::code::{Answer, GPU_IS_LOST, INVALID_ARGUMENT, NOT_SUPPORTED, TIMEOUT, UNKNOWN};
use crate::handle::{Handle, MAX_EVENT_SETS};
use crate::node::Node;

/// The event types every simulated GPU supports.
pub const SUPPORTED: u64 = (sys::nvmlEventTypeXidCriticalError
    | sys::nvmlEventTypeSingleBitEccError
    | sys::nvmlEventTypeDoubleBitEccError) as u64;

/// One event as `nvmlEventData_t` carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    /// The GPU's index.
    pub gpu: u32,
    /// `nvmlEventType*`.
    pub kind: u64,
    /// The XID of an XID event, else 0.
    pub data: u64,
    /// GPU instance id, or [`NO_INSTANCE`].
    pub gi: u32,
    /// Compute instance id, or [`NO_INSTANCE`].
    pub ci: u32,
}

/// One event set.
#[derive(Debug)]
struct EventSet {
    watch: SimHealthWatch<'static>,
    /// Types registered per GPU.
    registered: BTreeMap<u32, u64>,
    queue: VecDeque<Event>,
}

type Shared = Arc<Mutex<EventSet>>;

static SETS: Mutex<BTreeMap<u32, Shared>> = Mutex::new(BTreeMap::new());
static NEXT: AtomicU32 = AtomicU32::new(0);

fn sets() -> std::sync::MutexGuard<'static, BTreeMap<u32, Shared>> {
    SETS.lock().unwrap_or_else(PoisonError::into_inner)
}

fn set(handle: Handle) -> Answer<Shared> {
    let Handle::EventSet(n) = handle else {
        return Err(INVALID_ARGUMENT);
    };
    sets().get(&n).cloned().ok_or(INVALID_ARGUMENT)
}

/// `nvmlEventSetCreate`.
pub fn create(node: &'static Node) -> Answer<Handle> {
    let mut all = sets();
    if u32::try_from(all.len()).map_or(true, |n| n >= MAX_EVENT_SETS) {
        return Err(UNKNOWN);
    }
    let mut n = NEXT.fetch_add(1, Ordering::SeqCst) % MAX_EVENT_SETS;
    while all.contains_key(&n) {
        n = NEXT.fetch_add(1, Ordering::SeqCst) % MAX_EVENT_SETS;
    }
    let set = EventSet {
        watch: node.sim.health_watch(),
        registered: BTreeMap::new(),
        queue: VecDeque::new(),
    };
    all.insert(n, Arc::new(Mutex::new(set)));
    Ok(Handle::EventSet(n))
}

/// `nvmlEventSetFree`.
pub fn free(handle: Handle) -> Answer<()> {
    let Handle::EventSet(n) = handle else {
        return Err(INVALID_ARGUMENT);
    };
    sets().remove(&n).map(drop).ok_or(INVALID_ARGUMENT)
}

/// `nvmlDeviceRegisterEvents` of GPU `gpu`: NOT_SUPPORTED for a type it
/// does not support.
pub fn register(handle: Handle, gpu: u32, types: u64) -> Answer<()> {
    if types & !SUPPORTED != 0 {
        return Err(NOT_SUPPORTED);
    }
    let set = set(handle)?;
    let mut set = set.lock().unwrap_or_else(PoisonError::into_inner);
    *set.registered.entry(gpu).or_default() |= types;
    Ok(())
}

/// The NVML event a health event is, if it is one.
fn nvml_event(event: &HealthEvent) -> Option<Event> {
    let (kind, data) = match event.kind {
        HealthEventKind::Xid(xid) => (u64::from(sys::nvmlEventTypeXidCriticalError), xid),
        HealthEventKind::DoubleBitEcc => (u64::from(sys::nvmlEventTypeDoubleBitEccError), 0),
        HealthEventKind::SingleBitEcc => (u64::from(sys::nvmlEventTypeSingleBitEccError), 0),
        HealthEventKind::GpuLost | HealthEventKind::Recovered => return None,
    };
    Some(Event {
        gpu: event.gpu_index,
        kind,
        data,
        gi: event.gpu_instance.unwrap_or(NO_INSTANCE),
        ci: event.compute_instance.unwrap_or(NO_INSTANCE),
    })
}

/// `nvmlEventSetWait_v2`: the next event within `timeout`.
pub fn wait(node: &Node, handle: Handle, timeout: Duration) -> Answer<Event> {
    let set = set(handle)?;
    let mut set = set.lock().unwrap_or_else(PoisonError::into_inner);
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(event) = set.queue.pop_front() {
            return Ok(event);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        let events = set.watch.wait(left).map_err(|_| UNKNOWN)?;
        let mut lost = false;
        for event in &events {
            let registered = set.registered.get(&event.gpu_index).copied();
            match event.kind {
                HealthEventKind::GpuLost => {
                    node.set_lost(event.gpu_index, true);
                    lost |= registered.is_some();
                }
                HealthEventKind::Recovered => node.set_lost(event.gpu_index, false),
                _ => {}
            }
            if let Some(found) = nvml_event(event)
                && registered.is_some_and(|types| types & found.kind != 0)
            {
                set.queue.push_back(found);
            }
        }
        if lost {
            return Err(GPU_IS_LOST);
        }
        if set.queue.is_empty() && Instant::now() >= deadline {
            return Err(TIMEOUT);
        }
    }
}
