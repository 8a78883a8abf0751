//! ComputeDomains on this node: the IMEX channels of NVIDIA's
//! `compute-domain.nvidia.com` driver, prepared beside (not inside) the GPU
//! claim engine, and the one IMEX daemon per domain that gpusliced runs for
//! them. A channel is not a GPU: it has no inventory entry, no MIG, no
//! sharing, and the kubelet prepares it through another driver; what it
//! shares with a GPU claim is the durable order of a prepare (record, then
//! effects, then CDI spec, each write passing its crash points) and the rule
//! that a crash or restart loses nothing.
//!
//! A domain's daemon is never restarted for its members: they are names in
//! a nodes config written once, mapped to addresses by a private hosts file
//! that changes in place, and the daemon is told with SIGUSR1 (a restart
//! would end what the other nodes imported from it).
//!
//! Reading order: [`request`] (a channel claim checked against the domain
//! the caller vouches for, pure), [`record`] (its record on disk), [`cdi`]
//! (its CDI spec, pure) and [`spec`] (on disk), [`nodes`] (the channel
//! device nodes), [`folder`] (a domain's folder: config, names, mapping,
//! socket, log), [`ctl`] (`nvidia-imex-ctl`: ready, connected),
//! [`reload`] (when SIGUSR1 is due, pure), [`runner`] (the daemon as a
//! systemd unit or a child), [`monitor`] (one running domain, watched),
//! [`engine`] (prepare, unprepare), [`members`] (the members the plugin
//! sets, what ListDomains shows), [`startup`] (start-up: roll back, find
//! again, sweep).

pub mod cdi;
pub mod ctl;
pub mod engine;
pub mod folder;
pub mod members;
pub mod monitor;
pub mod nodes;
pub mod record;
pub mod reload;
pub mod request;
pub mod runner;
pub mod spec;
pub mod startup;

use std::path::PathBuf;

pub use engine::{DomainSettings, Domains, PreparedChannel};
pub use members::DomainStatus;
pub use request::{ChannelDevice, ChannelRequest, DomainRef};

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
         retries the prepare; its log: {log}"
    )]
    NotReady {
        /// The domain.
        domain: String,
        /// How long the prepare waited.
        seconds: u64,
        /// What the last query printed.
        answer: String,
        /// Where the daemon's log is.
        log: String,
    },
    /// The domain's IMEX daemon exited and could not be started again.
    #[error(
        "the IMEX daemon of ComputeDomain {domain} on this node is not running ({problem}); see \
         its log ({log}) and check [imex] program"
    )]
    DaemonDown {
        /// The domain.
        domain: String,
        /// What happened.
        problem: String,
        /// Where the daemon's log is.
        log: String,
    },
    /// The caller did not vouch for the claim's domain.
    #[error(
        "the claim's ComputeDomainChannelConfig names ComputeDomain {domain}, which the caller \
         did not vouch for: the plugin reads the domain from the API server and sends it with \
         the claim (upgrade gpuslice-dra-plugin with gpusliced; gpuslicectl prepare takes \
         --compute-domain)"
    )]
    NotVouched {
        /// The domain the config names.
        domain: String,
    },
    /// The claim and its domain are in different namespaces.
    #[error(
        "claim {claim} (namespace {claim_namespace}) names ComputeDomain {domain} of namespace \
         {domain_namespace}: a claim may use only a ComputeDomain of its own namespace"
    )]
    OtherTenant {
        /// The domain, namespace/name.
        domain: String,
        /// Its namespace.
        domain_namespace: String,
        /// The claim, namespace/name.
        claim: String,
        /// Its namespace.
        claim_namespace: String,
    },
    /// `[imex] bind_address` is not set.
    #[error(
        "[imex] bind_address is not set: an IMEX daemon binds the node's own address on the \
         rack's network, which its peers reach it on; set it in gpuslice.toml"
    )]
    NoBindAddress,
    /// `[imex] rack_network` is not set.
    #[error(
        "[imex] rack_network is not set: the IMEX daemon reaches only the rack's network, and \
         a member's address is taken only inside it; set it in gpuslice.toml (e.g. \
         [\"10.0.0.0/16\"])"
    )]
    NoRackNetwork,
    /// The IMEX unit runs another program than `[imex] program`.
    #[error(
        "{unit} runs {runs}, but [imex] program is {program}: make them agree (a drop-in for \
         gpuslice-imex@.service with its ExecStart=, or [imex] program)"
    )]
    UnitProgram {
        /// The unit.
        unit: String,
        /// What its ExecStart= runs.
        runs: String,
        /// `[imex] program`.
        program: String,
    },
    /// systemd refused a call.
    #[error(transparent)]
    Systemd(crate::supervise::bus::BusError),
    /// Members were set for a domain with no channel on this node.
    #[error(
        "no channel of ComputeDomain {domain} is prepared on this node; members are set for \
         the domains the node is a member of"
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
    #[error(transparent)]
    Record(#[from] crate::state::StateError),
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
