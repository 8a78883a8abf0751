//! `[imex]`: the IMEX daemon gpusliced runs for the ComputeDomain whose
//! channels this node prepares (`domains`): where `nvidia-imex` and
//! `nvidia-imex-ctl` are, where each domain's folder goes, which address
//! the daemon binds and which networks it may reach, what runs it, and how
//! long a prepare waits for it to be ready. Parsed and defaulted here (the
//! rack network checked by `validate`); used by `domains`.

use std::net::IpAddr;
use std::path::PathBuf;

use serde::Deserialize;

use super::SupervisorKind;

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
    /// The address the IMEX daemon binds for its peers
    /// (`BIND_INTERFACE_IP`): the node's address on the rack's network, the
    /// one the plugin publishes in the ComputeDomain's status. Required for
    /// a channel to be prepared; default none.
    pub bind_address: Option<IpAddr>,
    /// The networks (CIDRs) the IMEX daemon may reach and a member's
    /// address must lie in: the rack's. Required for a channel to be
    /// prepared; default none. A network taking in loopback, link-local or
    /// unspecified space is refused unless it lies wholly inside it.
    pub rack_network: Vec<String>,
    /// What runs the daemon: `"auto"` (default: systemd, as an instance of
    /// `gpuslice-imex@.service`, when gpusliced runs as a systemd service,
    /// else a child), `"systemd"` or `"child"`.
    pub supervisor: SupervisorKind,
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
            rack_network: Vec::new(),
            supervisor: SupervisorKind::Auto,
            ready_timeout_s: 10,
        }
    }
}
