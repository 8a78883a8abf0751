//! What the load's clients ask for, and which answers each request may get:
//! the operations, the claims (plans) and their requests, what a client
//! holds and believes. [`super::chooser`] draws the operations. Pure.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use gpuslice_proto::gpuslice::v1 as pb;
use tonic::Code;

use super::node::Gpu;
use crate::stand_ins::{gpu_config, memory, shared_request, timeslicing};

/// Kinds of operation, for the figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OpKind {
    PrepareExclusive,
    PrepareMig,
    PrepareMps,
    PrepareTimeSlicing,
    Reprepare,
    Unprepare,
    UnprepareUnknown,
    Conflict,
    Invalid,
    /// A new claim prepared twice at once (a kubelet retry racing the first).
    RetryRace,
    /// A held claim unprepared and prepared again at once.
    UnprepareRace,
}

impl OpKind {
    pub const ALL: [Self; 11] = [
        Self::PrepareExclusive,
        Self::PrepareMig,
        Self::PrepareMps,
        Self::PrepareTimeSlicing,
        Self::Reprepare,
        Self::Unprepare,
        Self::UnprepareUnknown,
        Self::Conflict,
        Self::Invalid,
        Self::RetryRace,
        Self::UnprepareRace,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Self::PrepareExclusive => "prepare exclusive",
            Self::PrepareMig => "prepare MIG",
            Self::PrepareMps => "prepare MPS",
            Self::PrepareTimeSlicing => "prepare time-slicing",
            Self::Reprepare => "re-prepare",
            Self::Unprepare => "unprepare",
            Self::UnprepareUnknown => "unprepare unknown",
            Self::Conflict => "deliberate conflict",
            Self::Invalid => "invalid request",
            Self::RetryRace => "prepare twice at once",
            Self::UnprepareRace => "unprepare || prepare",
        }
    }
}

/// How a claim shares its devices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sharing {
    /// Its devices alone: whole GPUs or MIG slices.
    Alone,
    /// Under one MPS daemon over all its devices (whole GPUs, or its slices
    /// with a `MigDeviceConfig`), with an optional memory share per device.
    Mps { atp: u8, memory_gib: Option<u64> },
    /// Time-slicing of its whole GPUs at this interval.
    TimeSlicing(&'static str),
}

/// The answers a prepare may get.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// Prepared, or FAILED_PRECONDITION (held, shared otherwise).
    MayPrepare,
    /// Also RESOURCE_EXHAUSTED (a memory share).
    MayExhaust,
    /// Refused with exactly this code.
    Refused(Code),
}

/// One claim as its client asks for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub uid: String,
    pub devices: Vec<String>,
    pub sharing: Sharing,
    /// The sharing config is a `MigDeviceConfig` (MPS on slices).
    pub on_slices: bool,
    pub expect: Expect,
}

pub const INTERVALS: [&str; 4] = ["Default", "Short", "Medium", "Long"];

/// The thread percentage most claims on `gpu` ask for.
pub fn usual_atp(gpu: &Gpu) -> u8 {
    20 + 10 * u8::try_from(gpu.index % 6).expect("small")
}

/// The interval most claims on `gpu` ask for.
pub fn usual_interval(gpu: &Gpu) -> &'static str {
    INTERVALS[1 + gpu.index % 3]
}

impl Plan {
    /// The Prepare request.
    pub fn request(&self) -> pb::PrepareRequest {
        let devices: Vec<&str> = self.devices.iter().map(String::as_str).collect();
        let configs = match &self.sharing {
            Sharing::Alone => vec![],
            Sharing::Mps { atp, memory_gib } => {
                let mps = format!(
                    r#"{{"strategy":"MPS","mpsConfig":{{"defaultActiveThreadPercentage":{atp}}}}}"#
                );
                let mut configs = vec![if self.on_slices {
                    format!(
                        r#"{{"apiVersion":"resource.nvidia.com/v1beta1","kind":"MigDeviceConfig","sharing":{mps}}}"#
                    )
                } else {
                    gpu_config(&mps)
                }];
                configs.extend(memory_gib.map(|g| memory(&format!("{g}Gi"))));
                configs
            }
            Sharing::TimeSlicing(interval) => vec![timeslicing(interval)],
        };
        shared_request(&self.uid, &devices, &configs)
    }

    /// The CDI ids a prepare must return, in device order.
    pub fn cdi_ids(&self) -> Vec<String> {
        self.devices
            .iter()
            .map(|d| format!("k8s.gpuslice.dev/claim={}-{d}", self.uid))
            .collect()
    }

    /// The memory share of one of its devices, in bytes.
    pub fn memory_share(&self) -> u64 {
        match self.sharing {
            Sharing::Mps {
                memory_gib: Some(g),
                ..
            } => g << 30,
            _ => 0,
        }
    }
}

/// What a client last saw of the node.
#[derive(Debug, Clone, Default)]
pub struct Beliefs {
    /// Devices that looked free (no holder).
    pub free: HashSet<String>,
    /// Whole GPUs by name: "none", "mps" or "timeslicing".
    pub mode: HashMap<String, String>,
    /// Whole GPUs held whole by a claim.
    pub held_whole: HashSet<String>,
}

/// A claim a client holds, with the CDI ids its prepare returned.
#[derive(Debug, Clone)]
pub struct Held {
    pub plan: Arc<Plan>,
    pub ids: Vec<String>,
}

/// One operation.
#[derive(Debug, Clone)]
pub enum Op {
    /// A new claim.
    Prepare(Arc<Plan>, OpKind),
    /// Prepare the held claim at this index again, unchanged.
    Reprepare(usize),
    /// Prepare the held claim at this index with other devices: refused.
    Reshape(usize, Arc<Plan>),
    /// Unprepare the held claim at this index.
    Unprepare(usize),
    /// Unprepare a claim nobody prepared.
    UnprepareUnknown(String),
    /// Prepare a new claim with two calls at once.
    PrepareTwice(Arc<Plan>),
    /// Unprepare the held claim at this index while preparing it again.
    UnprepareRace(usize),
}
