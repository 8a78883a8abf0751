//! How a domain's IMEX daemon runs, behind one interface ([`Runner`] starts
//! and finds daemons, [`Daemon`] is one of them):
//!
//! - under systemd ([`unit`]), as an instance of the shipped template unit
//!   `gpuslice-imex@<domain uid>.service`, started over the system bus:
//!   its own sandbox (the network IMEX needs, to the rack network only,
//!   which gpusliced's AF_UNIX-only unit could never give a child), its log
//!   in the journal, restarted by systemd and kept across restarts of
//!   gpusliced, found again by its name;
//! - without systemd ([`child`]: the simulator, the tests), as a child of
//!   gpusliced in a mount namespace of its own ([`launch`]), restarted when
//!   it dies, found again after a restart of gpusliced by the pid and start
//!   time kept in its folder.
//!
//! Either way the daemon reads the domain's `hosts` as its /etc/hosts, and
//! is told a new mapping with SIGUSR1 ([`Daemon::reload`]).

pub mod child;
pub mod launch;
pub mod unit;

use std::fmt::Debug;
use std::path::PathBuf;
use std::time::Duration;

use gpuslice_imex::network::RackNetwork;

use super::DomainError;
use super::folder::DomainFolder;
use crate::supervise::DaemonState;
use crate::supervise::process::ProcessId;

/// What a domain's daemon is started from.
#[derive(Debug, Clone)]
pub struct ImexSpec {
    /// Its folder (its uid, config, mapping, socket, log).
    pub folder: DomainFolder,
    /// nvidia-imex.
    pub program: PathBuf,
    /// The networks it may reach.
    pub rack: RackNetwork,
}

/// What `gpuslicectl` and the plugin are told of a daemon.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImexStatus {
    /// Its pid, while it runs.
    pub pid: Option<u32>,
    /// Running, restarting, failed or stopped.
    pub state: DaemonState,
    /// Restarts after it died: since this gpusliced watches it (child), or
    /// the unit's `NRestarts` (systemd).
    pub restarts: u32,
    /// Its systemd unit, under systemd.
    pub unit: Option<String>,
}

/// Starts and finds domains' daemons.
pub trait Runner: Send + Sync + Debug {
    /// "systemd" or "child", for the log.
    fn name(&self) -> &'static str;
    /// Starts the daemon of `spec` (its folder made).
    fn start(&self, spec: &ImexSpec) -> Result<Box<dyn Daemon>, DomainError>;
    /// The daemon a previous gpusliced started for `spec`, when it runs.
    fn adopt(&self, spec: &ImexSpec) -> Result<Option<Box<dyn Daemon>>, DomainError>;
    /// Stops what runs for `spec`'s domain, which has no claim left (found
    /// at start-up), and waits (bounded) until it is gone.
    fn stop_stale(&self, spec: &ImexSpec);
    /// The uids of the domains whose daemons run now.
    fn running(&self, imex_dir: &std::path::Path) -> Vec<String>;
}

/// One domain's daemon.
pub trait Daemon: Send + Sync + Debug {
    /// State, pid, restarts, unit now.
    fn status(&self) -> ImexStatus;
    /// Its process now, when one runs.
    fn process(&self) -> Option<ProcessId>;
    /// Why it is failed, when it is.
    fn problem(&self) -> Option<String>;
    /// Waits at most `bound` for its state to change (or simply `bound`).
    fn wait_for_change(&self, bound: Duration);
    /// Tells its process to re-read its members (SIGUSR1); whether the
    /// signal was delivered.
    fn reload(&self) -> bool;
    /// Stops it and waits (bounded) until it is gone.
    fn stop(&self);
    /// Lets go of it (gpusliced is ending): it runs on for the next
    /// gpusliced to find, and nothing restarts it meanwhile.
    fn let_go(&self);
}

/// How long a stopped daemon gets before it is killed.
pub const STOP_BOUND: Duration = Duration::from_secs(10);

/// The crash point after a daemon was started (its process, or its unit's
/// start job): both runners pass it.
fn passed_start() {
    crate::crash::crash_point("imex.after_daemon_started");
}

/// The crash point after a daemon was stopped and is gone.
fn passed_stop() {
    crate::crash::crash_point("imex.after_daemon_stopped");
}
