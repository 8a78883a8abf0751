//! [`MpsLimits`]: a control daemon's default limits, and the exact control
//! commands and client environment that carry them. Pure.
//!
//! What NVIDIA's control daemon (550.163.01 and 555.58.02, run without a
//! GPU; `tests/tools/fake-mps-control.transcript` replays it) takes and
//! answers, which these commands follow:
//!
//! - `set_default_device_pinned_mem_limit <dev> <value>` reads `<dev>` as a
//!   device *ordinal*, 0 to 31, the way `sscanf("%d")` does: a UUID is no
//!   number, so it is read as device 0 with no value, which *clears* device
//!   0's limit (rc 0, no answer). NVIDIA's device plugin moved to ordinals for
//!   this reason (k8s-device-plugin 0.15.0). The ordinal is the device's
//!   position in the daemon's `CUDA_VISIBLE_DEVICES` (CUDA numbers the
//!   visible devices from 0 in the order listed, and the MPS server is a CUDA
//!   process; NVIDIA's MPS guide: the server renumbers devices), which is the
//!   key's sorted order; a MIG slice alone in its daemon is device 0.
//! - `<value>` is a whole number followed by `G` (GiB) or anything else
//!   (MiB); gpusliced sends whole MiB (`10240M`), which the daemon keeps.
//! - `get_default_device_pinned_mem_limit <dev>` prints the limit *rounded
//!   down* to whole GiB as `<n>G` from 1 GiB up (`16311M` reads back `15G`),
//!   `<n>M` below it, and nothing at all when none is set.

use std::collections::BTreeMap;

use super::MpsError;
use super::key::MpsKey;

const MIB: u64 = 1024 * 1024;
/// Device ordinals the control daemon takes (0..=31; others are refused
/// with "Invalid device ordinal!").
pub const MAX_ORDINALS: usize = 32;

/// Defaults every server of one control daemon gets; every claim sharing the
/// daemon must ask for the same.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MpsLimits {
    /// `set_default_active_thread_percentage`, 1..100; none: 100.
    pub active_thread_percentage: Option<u8>,
    /// `set_default_device_pinned_mem_limit`: device UUID → bytes (rounded
    /// down to whole MiB, as MPS counts). Absent devices: no limit.
    pub pinned_memory_limits: BTreeMap<String, u64>,
}

impl MpsLimits {
    /// The control commands that apply these limits to the daemon of `key`,
    /// in order: each pinned limit by its device's ordinal in the daemon.
    /// Refused: a limit on a device the key lacks, or past ordinal 31.
    pub fn commands(&self, key: &MpsKey) -> Result<Vec<String>, MpsError> {
        let mut out = Vec::new();
        if let Some(p) = self.active_thread_percentage {
            out.push(format!("set_default_active_thread_percentage {p}"));
        }
        for (ordinal, bytes) in self.by_ordinal(key)? {
            out.push(format!(
                "set_default_device_pinned_mem_limit {ordinal} {}M",
                bytes / MIB
            ));
        }
        Ok(out)
    }

    /// Read-back commands and the value each must answer once applied, so
    /// readiness is checked through the control program, not assumed.
    pub fn checks(&self, key: &MpsKey) -> Result<Vec<(String, Expected)>, MpsError> {
        let mut out = Vec::new();
        if let Some(p) = self.active_thread_percentage {
            out.push((
                "get_default_active_thread_percentage".to_owned(),
                Expected::Percentage(p),
            ));
        }
        for (ordinal, bytes) in self.by_ordinal(key)? {
            out.push((
                format!("get_default_device_pinned_mem_limit {ordinal}"),
                Expected::Mib(bytes / MIB),
            ));
        }
        Ok(out)
    }

    /// The pinned limits by the ordinal the daemon of `key` knows each
    /// device by, in ordinal order.
    fn by_ordinal(&self, key: &MpsKey) -> Result<Vec<(usize, u64)>, MpsError> {
        let mut out = Vec::new();
        for (uuid, bytes) in &self.pinned_memory_limits {
            let refused = |problem: String| MpsError::LimitDevice {
                key: key.clone(),
                device: uuid.clone(),
                problem,
            };
            let ordinal = key
                .uuids()
                .iter()
                .position(|u| u == uuid)
                .ok_or_else(|| refused("it is not one of the daemon's devices".to_owned()))?;
            if ordinal >= MAX_ORDINALS {
                return Err(refused(format!(
                    "it is device {ordinal} of the daemon, and the MPS control daemon takes \
                     pinned memory limits for devices 0 to {} only; share fewer devices \
                     through one daemon, or set no pinned memory limit",
                    MAX_ORDINALS - 1
                )));
            }
            out.push((ordinal, *bytes));
        }
        out.sort_unstable();
        Ok(out)
    }

    /// Environment for the daemon itself. `CUDA_MPS_ACTIVE_THREAD_PERCENTAGE`
    /// is the control daemon's default percentage, read at its start, so a
    /// daemon that systemd or the supervisor restarts has it before anyone
    /// re-applies the commands. `CUDA_MPS_PINNED_DEVICE_MEM_LIMIT` (by UUID)
    /// is *not* read by the control daemon (its pinned limits start empty
    /// whatever it holds); the daemon only passes its environment on to the
    /// servers it starts, so the variable reaches them, and the limits
    /// themselves are the commands, which the restart hook sends again.
    pub fn daemon_env(&self) -> Vec<(String, String)> {
        let mut env: Vec<(String, String)> = self
            .active_thread_percentage
            .map(|p| {
                (
                    "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE".to_owned(),
                    p.to_string(),
                )
            })
            .into_iter()
            .collect();
        if let Some(list) = memory_list(&self.pinned_memory_limits) {
            env.push(("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT".to_owned(), list));
        }
        env
    }
}

/// `CUDA_MPS_PINNED_DEVICE_MEM_LIMIT` for one claim's clients: per device
/// UUID, e.g. "GPU-a=20480M,GPU-b=1024M". It can only lower the daemon's
/// limit, binds each client process (not the claim), and a process that
/// unsets it escapes it: it is advice to well-behaved clients.
pub fn client_memory_env(share: &BTreeMap<String, u64>) -> Option<String> {
    memory_list(share).map(|list| format!("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT={list}"))
}

/// "GPU-a=20480M,GPU-b=1024M", or none for an empty map.
fn memory_list(limits: &BTreeMap<String, u64>) -> Option<String> {
    if limits.is_empty() {
        return None;
    }
    let list: Vec<String> = limits
        .iter()
        .map(|(uuid, bytes)| format!("{uuid}={}M", bytes / MIB))
        .collect();
    Some(list.join(","))
}

/// The value a read-back command must give.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expected {
    /// A percentage; the daemon prints it as "50.0".
    Percentage(u8),
    /// A pinned limit of whole MiB, as the daemon prints it: see
    /// [`Expected::shown`].
    Mib(u64),
}

impl Expected {
    /// Whether `answer` (the control program's output, trimmed) says so.
    /// A pinned limit must read back exactly as the daemon prints what was
    /// set (rounded down to whole GiB from 1 GiB up, or MiB below), or as
    /// the whole MiB that were sent (a daemon that prints them unrounded);
    /// nothing at all means no limit, which is never a match.
    pub fn matches(self, answer: &str) -> bool {
        let answer = answer.trim();
        match self {
            Self::Percentage(p) => answer
                .parse::<f64>()
                .is_ok_and(|v| (v - f64::from(p)).abs() < 0.01),
            Self::Mib(m) => answer == self.shown() || answer == format!("{m}M"),
        }
    }

    /// The answer NVIDIA's daemon gives once the value is applied: "50.0",
    /// "15G" for 16311 MiB, "512M" for 512 MiB.
    pub fn shown(self) -> String {
        match self {
            Self::Percentage(p) => format!("{p}.0"),
            Self::Mib(m) if m >= 1024 => format!("{}G", m / 1024),
            Self::Mib(m) => format!("{m}M"),
        }
    }
}

impl std::fmt::Display for Expected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Percentage(p) => write!(f, "{:?} (a thread percentage of {p})", self.shown()),
            Self::Mib(m) => write!(
                f,
                "{:?} (a pinned limit of {m} MiB, as the daemon prints it)",
                self.shown()
            ),
        }
    }
}
