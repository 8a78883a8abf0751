//! How a control daemon's process is kept running: the [`Supervisor`] trait,
//! the [`DaemonSpec`] it starts from, and the status it reports. Two
//! implementations: [`super::child::ChildSupervisor`] (a child process,
//! restarted by a watcher thread) and [`super::systemd::SystemdSupervisor`]
//! (a transient systemd unit over D-Bus). The daemon always runs in the
//! foreground (`-f`) so its supervisor sees it exit.

use std::path::PathBuf;
use std::sync::Arc;

use super::MpsError;
use super::folders::DaemonFolders;
use super::key::MpsKey;

/// Everything needed to start one control daemon.
#[derive(Debug, Clone)]
pub struct DaemonSpec {
    /// The devices it covers.
    pub key: MpsKey,
    /// Its folders.
    pub folders: DaemonFolders,
    /// `nvidia-cuda-mps-control`, a host path.
    pub program: PathBuf,
    /// Environment of the daemon (CUDA_VISIBLE_DEVICES, pipe and log dirs, …).
    pub env: Vec<(String, String)>,
    /// Bind the daemon's shm tmpfs at /dev/shm in the daemon's own mount
    /// namespace, so server and clients share one /dev/shm.
    pub bind_shm: bool,
}

impl DaemonSpec {
    /// The unit name under systemd, also used in logs: `gpuslice-mps-<hash>.service`.
    pub fn unit_name(&self) -> String {
        unit_name(&self.key.hash())
    }
}

/// Set in every control daemon's environment to its folder
/// (`<run_dir>/mps/<hash>`): the process (and the MPS server it starts) can
/// be found by it before it has written its pid file, by a gpusliced that
/// restarted after a crash right after the start. Clients and containers
/// never have it.
pub const DAEMON_MARKER: &str = "GPUSLICE_MPS_DAEMON";

/// `gpuslice-mps-<hash>.service`.
pub fn unit_name(hash: &str) -> String {
    format!("gpuslice-mps-{hash}.service")
}

/// Run after the supervisor restarts a daemon that died: waits for it and
/// re-applies its limits (they are lost with the process). Its argument says
/// whether the new process still runs; its result becomes the daemon's health.
pub type RestartHook = Arc<dyn Fn(&dyn Fn() -> bool) -> Result<(), MpsError> + Send + Sync>;

pub use crate::supervise::DaemonState;

/// What `gpuslicectl` shows of one daemon.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DaemonStatus {
    /// The process id of the control daemon, when known.
    pub pid: Option<u32>,
    /// The systemd unit, under systemd.
    pub unit: Option<String>,
    /// The state.
    pub state: DaemonState,
    /// How often it was restarted: since this gpusliced started it (child),
    /// or the unit's `NRestarts` (systemd; it survives a restart of
    /// gpusliced).
    pub restarts: u32,
}

/// One daemon under supervision.
pub trait Supervised: Send + Sync + std::fmt::Debug {
    /// Whether the process runs now (used while waiting for it to start).
    fn is_alive(&self) -> bool;
    /// State, pid, unit, restarts.
    fn status(&self) -> DaemonStatus;
    /// Ends supervision, runs `quit` (which asks the daemon to exit through
    /// the control program) and waits for the process to exit; kills it when
    /// it does not exit within a bound.
    fn stop(&self, quit: &dyn Fn()) -> Result<(), MpsError>;
    /// Waits until the daemon has been restarted `count` times in all and is
    /// back (or failed), at most `bound`; supervisors that cannot wait on
    /// that answer the status now.
    fn wait_for_restarts(&self, _count: u32, _bound: std::time::Duration) -> DaemonStatus {
        self.status()
    }
}

/// Starts daemons and finds ones a previous gpusliced left.
pub trait Supervisor: Send + Sync + std::fmt::Debug {
    /// "child" or "systemd", for logs and status.
    fn name(&self) -> &'static str;
    /// Starts the daemon of `spec`; `on_restart` runs after each restart.
    fn start(
        &self,
        spec: &DaemonSpec,
        on_restart: RestartHook,
    ) -> Result<Arc<dyn Supervised>, MpsError>;
    /// Takes over a daemon a previous gpusliced started for `spec`, when it
    /// still runs; `None` when there is none. `on_restart` runs after each
    /// restart where the supervisor still restarts it (systemd does; an
    /// adopted child is nobody's to restart).
    fn adopt(
        &self,
        spec: &DaemonSpec,
        on_restart: RestartHook,
    ) -> Result<Option<Arc<dyn Supervised>>, MpsError>;
    /// Stops whatever this supervisor still runs for the daemon `hash` (a
    /// unit, a process): runs `quit` (which asks the daemon to exit through
    /// the control program; a no-op where it was asked already), then waits
    /// for the process to go, stopping or killing it when it does not. Used
    /// at start-up for daemons whose claims are gone, and after a stop.
    fn stop_stale(
        &self,
        hash: &str,
        folders: &DaemonFolders,
        quit: &dyn Fn(),
    ) -> Result<(), MpsError>;
    /// Hashes of daemons of this gpusliced (their pipe dirs under
    /// `mps_dir`) that this supervisor knows to be running outside any
    /// folder (systemd units); the child supervisor knows none.
    fn running_hashes(&self, mps_dir: &std::path::Path) -> Result<Vec<String>, MpsError>;
}
