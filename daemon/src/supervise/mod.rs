//! Daemons gpusliced keeps running beside itself (MPS control daemons, IMEX
//! daemons), as the host sees them: the neutral [`DaemonState`] every
//! supervisor reports, a process known again by its pid and start time
//! ([`process`]: never by a marker in its environment, which any process
//! can set), and systemd's manager over the system bus ([`bus`]: units
//! started, stopped, signalled and read), and the one restart policy both
//! kinds of daemon follow, under either supervisor ([`restart`]). Which
//! daemons run, and why, is their owners' business (the MPS kind of access,
//! `compute_domains`); this module knows processes and units only.

pub mod bus;
pub mod process;
pub mod restart;

/// The state of a supervised daemon. Its text is what `gpuslicectl` shows
/// and the metric label: "running", "restarting", "failed", "stopped".
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::Display)]
#[derive(strum::IntoStaticStr, strum::VariantArray)]
#[strum(serialize_all = "lowercase")]
pub enum DaemonState {
    /// Running and doing its work (set up as its owner needs it).
    Running,
    /// Died and being restarted, or restarted and not set up again yet.
    Restarting,
    /// Died and could not be restarted.
    Failed,
    /// Stopped on purpose.
    Stopped,
}
