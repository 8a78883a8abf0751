//! `[timeslice]`: where nvidia-smi is, the tool that sets a GPU's compute
//! time-slice. Parsed here, beside the kind that uses it; the whole file's
//! parse and checks are `config`'s (this file stands on its floor).

use std::path::PathBuf;

use serde::Deserialize;

/// `[timeslice]`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TimeSliceConfig {
    /// Host path of nvidia-smi. Default: `<driver_root>/usr/bin/nvidia-smi`.
    pub nvidia_smi: Option<PathBuf>,
}
