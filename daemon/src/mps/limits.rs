//! [`MpsLimits`]: a control daemon's default limits, and the exact control
//! commands and client environment that carry them. Pure.

use std::collections::BTreeMap;

const MIB: u64 = 1024 * 1024;

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
    /// The control commands that apply these limits, in order.
    pub fn commands(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(p) = self.active_thread_percentage {
            out.push(format!("set_default_active_thread_percentage {p}"));
        }
        for (uuid, bytes) in &self.pinned_memory_limits {
            out.push(format!(
                "set_default_device_pinned_mem_limit {uuid} {}",
                mib(*bytes)
            ));
        }
        out
    }

    /// Read-back commands and the value each must answer once applied, so
    /// readiness is checked through the control program, not assumed.
    pub fn checks(&self) -> Vec<(String, Expected)> {
        let mut out = Vec::new();
        if let Some(p) = self.active_thread_percentage {
            out.push((
                "get_default_active_thread_percentage".to_owned(),
                Expected::Percentage(p),
            ));
        }
        for (uuid, bytes) in &self.pinned_memory_limits {
            out.push((
                format!("get_default_device_pinned_mem_limit {uuid}"),
                Expected::Mib(bytes / MIB),
            ));
        }
        out
    }

    /// Environment for the daemon itself: the thread percentage as
    /// `CUDA_MPS_ACTIVE_THREAD_PERCENTAGE` and the pinned memory limits as
    /// `CUDA_MPS_PINNED_DEVICE_MEM_LIMIT` (both read by the control daemon as
    /// its defaults), so a daemon that systemd or the supervisor restarts has
    /// them before anyone re-applies the commands.
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
        .map(|(uuid, bytes)| format!("{uuid}={}", mib(*bytes)))
        .collect();
    Some(list.join(","))
}

/// Whole MiB with MPS's "M" suffix.
fn mib(bytes: u64) -> String {
    format!("{}M", bytes / MIB)
}

/// The value a read-back command must give.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expected {
    /// A percentage; the answer may be "50" or "50.0".
    Percentage(u8),
    /// Whole MiB; the answer may be "1024M", "1024MB", "1G" or "1024".
    Mib(u64),
}

impl Expected {
    /// Whether `answer` (the control program's output, trimmed) says so.
    pub fn matches(self, answer: &str) -> bool {
        let answer = answer.trim();
        match self {
            Self::Percentage(p) => answer
                .parse::<f64>()
                .is_ok_and(|v| (v - f64::from(p)).abs() < 0.01),
            Self::Mib(m) => answer_mib(answer) == Some(m),
        }
    }
}

fn answer_mib(answer: &str) -> Option<u64> {
    let split = answer
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(answer.len());
    let (number, suffix) = answer.split_at(split);
    let number: u64 = number.parse().ok()?;
    match suffix.trim() {
        "" | "M" | "MB" | "Mi" | "MiB" => Some(number),
        "G" | "GB" | "Gi" | "GiB" => number.checked_mul(1024),
        _ => None,
    }
}
