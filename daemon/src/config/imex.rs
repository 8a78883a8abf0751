//! `[imex]`: the IMEX daemon gpusliced runs for the ComputeDomain whose
//! channels this node prepares (`domains`): where `nvidia-imex` and
//! `nvidia-imex-ctl` are, where each domain's folder goes, which address
//! the daemon binds, and how long a prepare waits for it to be ready.
//! Parsed and defaulted here; used by `domains`.

use std::net::IpAddr;
use std::path::PathBuf;

use serde::Deserialize;

/// `[imex]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ImexConfig {
    /// Host path of nvidia-imex. Default: `<driver_root>/usr/bin/nvidia-imex`.
    pub program: Option<PathBuf>,
    /// Host path of nvidia-imex-ctl. Default:
    /// `<driver_root>/usr/bin/nvidia-imex-ctl`.
    pub ctl_program: Option<PathBuf>,
    /// Where each domain's folder goes (`<run_dir>/imex/<domain uid>/`: its
    /// config, nodes config and log). Default /run/gpuslice.
    pub run_dir: PathBuf,
    /// The address the IMEX daemon binds, for its peers
    /// (`BIND_INTERFACE_IP`) and its command service
    /// (`IMEX_CMD_BIND_INTERFACE_IP`): the node's address on the NVLink
    /// domain's network, the one the plugin publishes in the ComputeDomain's
    /// status. Default: none, all interfaces, as NVIDIA's daemon config
    /// leaves it (the command service then on 127.0.0.1).
    pub bind_address: Option<IpAddr>,
    /// Seconds a prepare waits for a starting IMEX daemon to report READY
    /// before it fails (retryably: the kubelet asks again). Default 10.
    pub ready_timeout_s: u64,
}

impl Default for ImexConfig {
    fn default() -> Self {
        Self {
            program: None,
            ctl_program: None,
            run_dir: PathBuf::from("/run/gpuslice"),
            bind_address: None,
            ready_timeout_s: 10,
        }
    }
}
