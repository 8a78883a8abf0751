//! [`NvidiaSmi`]: `nvidia-smi compute-policy -i <uuid> --set-timeslice=<N>`,
//! with N the level of [`TimeSliceInterval`] (Default 0, Short 1, Medium 2,
//! Long 3). A GPU that does not support it (NOT_SUPPORTED, e.g. Tesla P4) is a
//! warning for the caller, not a failure.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{TimeSliceError, TimeSliceSetter};
use crate::opaque::TimeSliceInterval;

/// What a set did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetOutcome {
    /// The GPU has the new level.
    Applied,
    /// The GPU cannot be time-sliced; its policy is unchanged. Log it as a
    /// warning and go on.
    NotSupported {
        /// nvidia-smi's words.
        message: String,
    },
}

/// Runs nvidia-smi.
#[derive(Debug, Clone)]
pub struct NvidiaSmi {
    program: PathBuf,
}

impl NvidiaSmi {
    /// nvidia-smi at `program` (a host path, driver root applied).
    pub fn new(program: &Path) -> Self {
        Self {
            program: program.to_path_buf(),
        }
    }
}

impl TimeSliceSetter for NvidiaSmi {
    fn set_timeslice(
        &self,
        uuid: &str,
        interval: TimeSliceInterval,
    ) -> Result<SetOutcome, TimeSliceError> {
        let level = format!("--set-timeslice={}", interval.level());
        let args = ["compute-policy", "-i", uuid, level.as_str()];
        let line = format!("{} {}", self.program.display(), args.join(" "));
        let failed = |problem: String| TimeSliceError::Command {
            command: line.clone(),
            problem,
        };
        let output = Command::new(&self.program)
            .args(args)
            .output()
            .map_err(|e| failed(format!("cannot run it: {e}")))?;
        let text = format!(
            "{} {}",
            String::from_utf8_lossy(&output.stdout).trim(),
            String::from_utf8_lossy(&output.stderr).trim()
        )
        .trim()
        .to_owned();
        if output.status.success() {
            crate::crash::crash_point("timeslice.after_set");
            return Ok(SetOutcome::Applied);
        }
        if text.to_ascii_lowercase().contains("not supported") {
            return Ok(SetOutcome::NotSupported { message: text });
        }
        Err(failed(format!("{} ({text})", output.status)))
    }
}
