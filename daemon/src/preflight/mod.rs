//! What `gpusliced --check-config` judges beyond parsing: the problems a
//! config that loads still has, which start-up would only warn about (or
//! meet later, at a prepare), found without touching the GPUs or anything
//! the daemon owns.
//!
//! * [`mig`]: each `[[mig.gpu]]` layout placed on an empty GPU of its model,
//!   as start-up places it, and each entry's GPU found. The model is known
//!   only with `[backend] kind = "sim"` (the models are in the config); with
//!   NVML it is left to start-up, and [`Report::unchecked`] says so.
//! * [`host`]: the paths the config names that gpusliced runs, loads or
//!   writes into (tools, the NVML library, the driver root, the metrics
//!   textfile's folder), the socket's group, and the log filter.
//!
//! What the host may still change before start (the NVIDIA driver's files
//! under `driver_root`, loaded later at boot) is not judged here: start-up
//! reports it in the log and in `gpuslicectl status`.
//!
//! Reads the filesystem and the group database; writes nothing.

mod host;
mod mig;

use std::fmt;

use crate::config::{BackendKind, Config};

/// One problem, by config key, with what to fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The dotted key, e.g. "mig.gpu.layout".
    pub key: &'static str,
    /// What is wrong and what to do.
    pub text: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "config key {}: {}", self.key, self.text)
    }
}

/// What the check found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Each problem; the config is fine when there is none.
    pub problems: Vec<Problem>,
    /// What could not be judged without the hardware, in words.
    pub unchecked: Vec<String>,
}

/// Checks a loaded config.
pub fn check(config: &Config) -> Report {
    let mut report = Report::default();
    match config.backend.kind {
        BackendKind::Sim => report.problems.extend(mig::check_sim(config)),
        BackendKind::Nvml if !config.mig.gpu.is_empty() => report.unchecked.push(
            "whether each GPU [[mig.gpu]] selects supports MIG and has room for its layout: \
             that needs the GPUs' models; start-up says so in the log and `gpuslicectl status`"
                .to_owned(),
        ),
        BackendKind::Nvml => {}
    }
    report.problems.extend(host::check(config));
    report
}

#[cfg(test)]
mod tests;
