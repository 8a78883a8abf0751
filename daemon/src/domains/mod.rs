//! ComputeDomains on this node: the IMEX channels of NVIDIA's
//! `compute-domain.nvidia.com` driver, prepared beside (not inside) the GPU
//! claim engine, and the one IMEX daemon per domain that gpusliced runs for
//! them. A channel is not a GPU: it has no inventory entry, no MIG, no
//! sharing, and the kubelet prepares it through another driver; what it
//! shares with a GPU claim is the durable order of a prepare (record, then
//! effects, then CDI spec) and the rule that a crash or restart loses
//! nothing.
//!
//! Reading order: [`request`] (a channel claim checked, pure), [`record`]
//! (its record on disk), [`cdi`] (its CDI spec, pure), [`folder`] (a
//! domain's folder: the IMEX config, nodes config and log, and the
//! readiness query), [`imexd`] (the IMEX daemon's process, restarted when it
//! dies, found again after a restart of gpusliced), [`engine`] (prepare,
//! unprepare, peers, start-up).

pub mod cdi;
pub mod engine;
pub mod folder;
pub mod imexd;
pub mod record;
pub mod request;

use std::path::PathBuf;

pub use engine::{DomainSettings, DomainStatus, Domains, PreparedChannel};
pub use request::{ChannelDevice, ChannelRequest};

/// A channel operation that did not happen, saying what to fix.
#[derive(Debug, thiserror::Error)]
pub enum DomainError {
    /// A claim field that cannot be taken.
    #[error("{field}: {problem}")]
    InvalidField {
        /// The field, e.g. "claim.uid".
        field: String,
        /// What is wrong with it.
        problem: String,
    },
    /// The claim's configs name no domain, or one that cannot be taken.
    #[error("{0}")]
    Config(String),
    /// The node is not on a multi-node NVLink fabric.
    #[error(
        "this node has no multi-node NVLink fabric: none of its GPUs ({gpus}) reports an NVLink \
         clique, so it cannot join ComputeDomain {domain}; IMEX channels need GB200/GB300 NVL \
         nodes whose fabric manager registered the GPUs (nvidia-smi -q, Fabric)"
    )]
    NoFabric {
        /// The domain asked for.
        domain: String,
        /// The node's GPUs, with their fabric state.
        gpus: String,
    },
    /// The node's IMEX daemon serves another domain.
    #[error(
        "this node is a member of ComputeDomain {other} (channel claims {}); an IMEX daemon serves \
         one domain, so a channel of ComputeDomain {domain} cannot be prepared here until those \
         claims are unprepared: schedule the pod on another node of the clique",
        claims.join(", ")
    )]
    OtherDomain {
        /// The domain asked for.
        domain: String,
        /// The domain the node serves.
        other: String,
        /// Its claims, namespace/name.
        claims: Vec<String>,
    },
    /// The claim is prepared with other devices or another domain.
    #[error(
        "claim {uid} is already prepared as {prepared}; unprepare it before preparing it again \
         differently"
    )]
    PreparedDifferently {
        /// The claim.
        uid: String,
        /// What it is prepared as.
        prepared: String,
    },
    /// The domain's IMEX daemon did not report ready in time.
    #[error(
        "the IMEX daemon of ComputeDomain {domain} on this node is not ready after {seconds}s \
         (nvidia-imex-ctl -q said {answer:?}); waiting for it to report READY: the kubelet \
         retries the prepare; its log is {log}"
    )]
    NotReady {
        /// The domain.
        domain: String,
        /// How long the prepare waited.
        seconds: u64,
        /// What the last query printed.
        answer: String,
        /// The daemon's log file.
        log: PathBuf,
    },
    /// The domain's IMEX daemon exited and could not be started again.
    #[error(
        "the IMEX daemon of ComputeDomain {domain} on this node is not running ({problem}); see \
         its log {log} and check [imex] program"
    )]
    DaemonDown {
        /// The domain.
        domain: String,
        /// What happened.
        problem: String,
        /// The daemon's log file.
        log: PathBuf,
    },
    /// The set peers named an address that is not one.
    #[error("peer {peer:?} is not an IP address")]
    BadPeer {
        /// The text given.
        peer: String,
    },
    /// Peers were set for a domain with no channel on this node.
    #[error(
        "no channel of ComputeDomain {domain} is prepared on this node; peers are set for the \
         domains the node is a member of"
    )]
    NotMember {
        /// The domain.
        domain: String,
    },
    /// The channel device nodes cannot be made.
    #[error(
        "{path}: the driver registers no IMEX channel devices (no nvidia-caps-imex-channels in \
         /proc/devices under the driver root); load the NVIDIA driver 550 or later on a GB200 \
         node"
    )]
    NoChannelDevices {
        /// The /proc/devices read.
        path: PathBuf,
    },
    /// A file or process operation failed.
    #[error("cannot {action} {path}: {error}")]
    Io {
        /// What was tried.
        action: &'static str,
        /// On what.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
    /// A record that cannot be read or written.
    #[error("channel claim record {path}: {problem}")]
    Record {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
}

impl DomainError {
    /// An I/O error on `path`.
    pub(crate) fn io(action: &'static str, path: &std::path::Path, error: std::io::Error) -> Self {
        Self::Io {
            action,
            path: path.to_path_buf(),
            error,
        }
    }
}

#[cfg(test)]
mod tests;
