//! Which health events make a device unhealthy, which recover one, and which
//! are ignored. Pure: no I/O, no clock.
//!
//! Rules, after NVIDIA's DRA driver and device plugin:
//! * a critical XID makes its scope unhealthy unless it is ignored: NVIDIA's
//!   default list [`DEFAULT_IGNORED_XIDS`] (application errors: the GPU is
//!   fine, the process that caused them is not) plus `[health] ignore_xids`;
//! * a double-bit (uncorrectable) ECC error makes its scope unhealthy; a
//!   single-bit one was corrected and is ignored (XIDs 63, 64, 92, 94 and 95
//!   report the corrected errors that matter);
//! * a lost GPU is unhealthy as a whole, whatever instance the event names;
//! * `Recovered` clears its scope.
//!
//! The scope is what the event names: the whole GPU, or (MIG) one GPU
//! instance; the health table decides which devices that covers.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::gpu::{HealthEvent, HealthEventKind};

/// XIDs NVIDIA's DRA driver and device plugin ignore by default: 13 (graphics
/// engine exception), 31 (GPU memory page fault), 43 (GPU stopped
/// processing), 45 (preemptive cleanup), 68 (video processor exception) and
/// 109 (context switch timeout), all raised by a faulty application.
pub const DEFAULT_IGNORED_XIDS: [u64; 6] = [13, 31, 43, 45, 68, 109];

/// Why a device is unhealthy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// A critical XID that is not ignored.
    Xid(u64),
    /// An uncorrectable ECC error.
    DoubleBitEcc,
    /// The GPU fell off the bus or stopped answering.
    GpuLost,
}

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Cause::Xid(n) => match xid_meaning(*n) {
                Some(meaning) => write!(f, "XID {n} ({meaning})"),
                None => write!(f, "XID {n}"),
            },
            Cause::DoubleBitEcc => f.write_str("uncorrectable (double-bit) ECC error"),
            Cause::GpuLost => f.write_str("GPU lost (fell off the bus or stopped answering NVML)"),
        }
    }
}

/// What NVIDIA's XID catalog says a well-known XID means.
pub fn xid_meaning(xid: u64) -> Option<&'static str> {
    Some(match xid {
        13 => "graphics engine exception",
        31 => "GPU memory page fault",
        43 => "GPU stopped processing",
        45 => "preemptive cleanup, due to previous errors",
        48 => "double-bit ECC error",
        61 => "internal micro-controller breakpoint/warning",
        62 => "internal micro-controller halt",
        63 => "ECC page retirement or row remapping recording event",
        64 => "ECC page retirement or row remapper recording failure",
        68 => "video processor exception",
        74 => "NVLink error",
        79 => "GPU has fallen off the bus",
        92 => "high single-bit ECC error rate",
        94 => "contained ECC error",
        95 => "uncontained ECC error",
        109 => "context switch timeout",
        119 => "GSP RPC timeout",
        120 => "GSP error",
        999 => "unknown XID: NVML could not read it",
        _ => return None,
    })
}

/// What an event covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The whole GPU and every slice of it.
    Gpu,
    /// One MIG GPU instance.
    Instance {
        /// The GPU instance id.
        gpu_instance: u32,
    },
}

/// What to do with an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing: the event does not mean the hardware is bad.
    Ignore {
        /// Why, for the debug log.
        why: String,
    },
    /// The scope is unhealthy.
    Fault {
        /// What it covers.
        scope: Scope,
        /// Why.
        cause: Cause,
    },
    /// The scope is healthy again.
    Recover {
        /// What it covers.
        scope: Scope,
    },
}

/// The classification rules in force.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classifier {
    ignored: BTreeSet<u64>,
}

impl Classifier {
    /// NVIDIA's default ignore list plus `extra_ignored` (`[health] ignore_xids`).
    pub fn new(extra_ignored: &[u64]) -> Self {
        let ignored = DEFAULT_IGNORED_XIDS
            .iter()
            .chain(extra_ignored)
            .copied()
            .collect();
        Self { ignored }
    }

    /// Every ignored XID, ascending.
    pub fn ignored_xids(&self) -> Vec<u64> {
        self.ignored.iter().copied().collect()
    }

    /// The verdict on `event`.
    pub fn classify(&self, event: &HealthEvent) -> Verdict {
        let scope = match event.gpu_instance {
            Some(gpu_instance) => Scope::Instance { gpu_instance },
            None => Scope::Gpu,
        };
        let cause = match event.kind {
            HealthEventKind::Xid(n) if self.ignored.contains(&n) => {
                let from = if DEFAULT_IGNORED_XIDS.contains(&n) {
                    "NVIDIA's default ignore list"
                } else {
                    "[health] ignore_xids"
                };
                return Verdict::Ignore {
                    why: format!("XID {n} is an application error ({from})"),
                };
            }
            HealthEventKind::SingleBitEcc => {
                return Verdict::Ignore {
                    why: "a single-bit ECC error was corrected".into(),
                };
            }
            HealthEventKind::Recovered => return Verdict::Recover { scope },
            HealthEventKind::GpuLost => {
                return Verdict::Fault {
                    scope: Scope::Gpu,
                    cause: Cause::GpuLost,
                };
            }
            HealthEventKind::Xid(n) => Cause::Xid(n),
            HealthEventKind::DoubleBitEcc => Cause::DoubleBitEcc,
        };
        Verdict::Fault { scope, cause }
    }
}

impl Default for Classifier {
    fn default() -> Self {
        Self::new(&[])
    }
}
