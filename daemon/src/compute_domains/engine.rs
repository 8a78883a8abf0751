//! The engine of channel claims: prepare (checked request, record
//! `preparing`, channel device nodes, the domain's IMEX daemon started or
//! already running and READY, CDI spec, record `prepared`) and unprepare
//! (spec, record, and the daemon with its folder once the domain's last
//! claim on the node is gone). A prepare that fails leaves nothing of its
//! own: no record, no spec, no daemon it started. The members the plugin
//! sets and what ListDomains shows are [`super::members`]'; start-up is
//! [`super::startup`]'s.
//!
//! One lock over what the node holds ([`Held`]): the prepares of one node
//! are few (a pod or two of each domain), and a prepare that waits for a
//! starting daemon holds it for at most `[imex] ready_timeout_s`.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use gpuslice_imex::imex::Query;
use gpuslice_imex::names::Mapping;
use gpuslice_imex::network::RackNetwork;

use super::DomainError;
use super::cdi::{cdi_device_id, channel_spec};
use super::ctl;
use super::folder::DomainFolder;
use super::monitor::{QUERY_BOUND, Running};
use super::nodes::NodeMaker;
use super::record::{ChannelRecord, RecordStore};
use super::request::{ChannelRequest, check_uuid};
use super::runner::{ImexSpec, Runner};
use super::spec;
use crate::state::Phase;
use crate::supervise::DaemonState;

/// How often a prepare asks a starting daemon again.
const QUERY_EVERY: Duration = Duration::from_millis(100);
/// The least time one query of a prepare gets, even past its deadline: a
/// query cut shorter would hide what the daemon said behind a timeout.
const QUERY_LEAST: Duration = Duration::from_secs(1);

/// What the engine is built from (`run` fills it from the config and the
/// inventory).
#[derive(Debug, Clone)]
pub struct DomainSettings {
    /// The state folder (records in `compute-domains/`).
    pub state_dir: PathBuf,
    /// Where CDI specs go.
    pub cdi_dir: PathBuf,
    /// The channel device nodes.
    pub nodes: NodeMaker,
    /// `<run_dir>/imex`.
    pub imex_dir: PathBuf,
    /// nvidia-imex.
    pub program: PathBuf,
    /// nvidia-imex-ctl.
    pub ctl_program: PathBuf,
    /// `[imex] bind_address`.
    pub bind_address: Option<IpAddr>,
    /// `[imex] rack_network`.
    pub rack: RackNetwork,
    /// How long a prepare waits for READY.
    pub ready_bound: Duration,
    /// The node's NVLink clique (`<cluster uuid>.<clique id>`), when its
    /// GPUs report one.
    pub clique: Option<String>,
    /// The node's GPUs and their fabric, for the refusal without a clique.
    pub fabric_summary: String,
}

/// A prepared channel claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PreparedChannel {
    /// Prepared now.
    Created(ChannelRecord),
    /// Prepared before, the same.
    AlreadyPrepared(ChannelRecord),
}

impl PreparedChannel {
    /// The record.
    pub fn record(&self) -> &ChannelRecord {
        match self {
            Self::Created(r) | Self::AlreadyPrepared(r) => r,
        }
    }

    /// The claim's CDI device id.
    pub fn cdi_device_id(&self) -> String {
        cdi_device_id(&self.record().uid)
    }
}

/// What the node holds: its channel claims and its domains' running
/// daemons.
#[derive(Debug, Default)]
pub(super) struct Held {
    pub(super) claims: BTreeMap<String, ChannelRecord>,
    pub(super) running: BTreeMap<String, Arc<Running>>,
}

impl Held {
    pub(super) fn members(&self, domain: &str) -> Vec<&ChannelRecord> {
        self.claims
            .values()
            .filter(|r| r.domain == domain)
            .collect()
    }
}

/// The channel claims of this node and their domains' daemons.
#[derive(Debug)]
pub struct Domains {
    pub(super) settings: DomainSettings,
    pub(super) records: RecordStore,
    pub(super) runner: Arc<dyn Runner>,
    held: Mutex<Held>,
}

impl Domains {
    /// The engine over `settings`' folders, running daemons with `runner`;
    /// [`Domains::start_up`] next.
    pub fn new(settings: DomainSettings, runner: Arc<dyn Runner>) -> Result<Self, DomainError> {
        let records = super::record::open_records(&settings.state_dir)?;
        tracing::info!(
            runner = runner.name(),
            "IMEX daemons run as {}",
            match runner.name() {
                "systemd" => "instances of gpuslice-imex@.service",
                _ => "children of gpusliced",
            }
        );
        Ok(Self {
            settings,
            records,
            runner,
            held: Mutex::default(),
        })
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, Held> {
        self.held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(super) fn folder(&self, domain: &str) -> DomainFolder {
        DomainFolder::new(&self.settings.imex_dir, domain)
    }

    pub(super) fn imex_spec(&self, domain: &str) -> ImexSpec {
        ImexSpec {
            folder: self.folder(domain),
            program: self.settings.program.clone(),
            rack: self.settings.rack.clone(),
        }
    }

    /// The address the daemons bind and the rack network, or why a domain
    /// cannot run here.
    fn network(&self) -> Result<IpAddr, DomainError> {
        let bind = self
            .settings
            .bind_address
            .ok_or(DomainError::NoBindAddress)?;
        if self.settings.rack.is_empty() {
            return Err(DomainError::NoRackNetwork);
        }
        Ok(bind)
    }

    /// Prepares a channel claim.
    pub fn prepare(&self, request: &ChannelRequest) -> Result<PreparedChannel, DomainError> {
        let ask = request.validate()?;
        let mut held = self.lock();
        if let Some(record) = held.claims.get(&ask.uid) {
            if !record.same_as(&ask) {
                return Err(DomainError::PreparedDifferently {
                    uid: ask.uid.clone(),
                    prepared: format!("{} of ComputeDomain {}", record.device, record.domain),
                });
            }
            let record = record.clone();
            self.settings.nodes.ensure(&record.channels())?;
            self.write_spec(&record)?;
            return Ok(PreparedChannel::AlreadyPrepared(record));
        }
        if self.settings.clique.is_none() {
            return Err(DomainError::NoFabric {
                domain: ask.domain,
                gpus: self.settings.fabric_summary.clone(),
            });
        }
        let bind = self.network()?;
        // A domain lives in one namespace: a claim of another namespace
        // naming the same uid is another tenant's, whatever it was vouched as.
        if let Some(member) = held
            .members(&ask.domain)
            .into_iter()
            .find(|r| r.namespace != ask.namespace || r.domain_name != ask.domain_name)
        {
            return Err(DomainError::OtherTenant {
                domain: format!("{}/{}", member.namespace, member.domain_name),
                domain_namespace: member.namespace.clone(),
                claim: format!("{}/{}", ask.namespace, ask.name),
                claim_namespace: ask.namespace.clone(),
            });
        }
        if let Some(other) = held.claims.values().find(|r| r.domain != ask.domain) {
            let other = other.domain.clone();
            return Err(DomainError::OtherDomain {
                domain: ask.domain,
                claims: held
                    .members(&other)
                    .iter()
                    .map(|r| r.claim_name())
                    .collect(),
                other,
            });
        }
        let mut record = ChannelRecord::preparing(&ask);
        self.records.save(&record)?;
        let started = match self
            .settings
            .nodes
            .ensure(&record.channels())
            .and_then(|()| self.ensure_daemon(&mut held, &ask.domain, bind))
        {
            Ok(started) => started,
            Err(err) => {
                self.undo(&mut held, &record, false);
                return Err(err);
            }
        };
        let done = self
            .wait_ready(&held, &ask.domain)
            .and_then(|()| self.write_spec(&record))
            .and_then(|()| {
                record.phase = Phase::Prepared;
                Ok(self.records.save(&record)?)
            });
        if let Err(err) = done {
            self.undo(&mut held, &record, started);
            return Err(err);
        }
        if let Some(running) = held.running.get(&ask.domain) {
            running.refresh();
        }
        tracing::info!(claim = %record.claim_name(), domain = %record.domain, channel = record.channel, "IMEX channel prepared");
        held.claims.insert(record.uid.clone(), record.clone());
        Ok(PreparedChannel::Created(record))
    }

    /// Undoes a prepare that failed: its spec and record, and the daemon
    /// when it started it.
    fn undo(&self, held: &mut Held, record: &ChannelRecord, started: bool) {
        if let Err(err) = spec::remove(&self.settings.cdi_dir, &record.uid) {
            tracing::error!(error = %err, "channel claim spec not removed after a failed prepare");
        }
        if let Err(err) = self.records.remove(&record.uid) {
            tracing::error!(error = %err, "channel claim record not removed after a failed prepare");
        }
        if started && held.members(&record.domain).is_empty() {
            self.stop_domain(held, &record.domain);
        }
    }

    /// Starts the domain's daemon unless it runs; whether it started it.
    fn ensure_daemon(
        &self,
        held: &mut Held,
        domain: &str,
        bind: IpAddr,
    ) -> Result<bool, DomainError> {
        if let Some(running) = held.running.get(domain) {
            if running.daemon().status().state != DaemonState::Failed {
                return Ok(false);
            }
            running.stop();
            held.running.remove(domain);
        }
        let spec = self.imex_spec(domain);
        spec.folder.make(bind, &Mapping::new())?;
        let daemon = self.runner.start(&spec)?;
        tracing::info!(%domain, pid = ?daemon.status().pid, unit = ?daemon.status().unit, "IMEX daemon started");
        let running = Running::watch(
            daemon,
            spec.folder,
            self.settings.ctl_program.clone(),
            bind,
            true,
        )?;
        held.running.insert(domain.to_owned(), running);
        Ok(true)
    }

    /// Waits (bounded) for the domain's daemon to report READY.
    fn wait_ready(&self, held: &Held, domain: &str) -> Result<(), DomainError> {
        let Some(running) = held.running.get(domain) else {
            return Err(self.down(domain, "it is not running".to_owned(), None));
        };
        let daemon = running.daemon();
        let deadline = Instant::now() + self.settings.ready_bound;
        let config = running.folder().config_path();
        loop {
            if daemon.status().state == DaemonState::Failed {
                let problem = daemon.problem().unwrap_or_else(|| "failed".to_owned());
                return Err(self.down(domain, problem, daemon.status().unit));
            }
            let now = Instant::now();
            let bound = deadline.saturating_duration_since(now).min(QUERY_BOUND);
            let answer =
                match ctl::ready(&self.settings.ctl_program, &config, bound.max(QUERY_LEAST)) {
                    Query::Ready => return Ok(()),
                    Query::NotReady(answer) => answer,
                };
            if Instant::now() >= deadline {
                return Err(DomainError::NotReady {
                    domain: domain.to_owned(),
                    seconds: self.settings.ready_bound.as_secs(),
                    answer,
                    log: self.log_of(domain, daemon.status().unit),
                });
            }
            daemon.wait_for_change(QUERY_EVERY);
        }
    }

    /// Where the daemon's output goes (its unit's journal, or its folder's
    /// log, whose last lines are quoted: a failed prepare removes it).
    fn log_of(&self, domain: &str, unit: Option<String>) -> String {
        if let Some(unit) = unit {
            return format!("journalctl -u {unit}");
        }
        let folder = self.folder(domain);
        let path = folder.log_path().display().to_string();
        match folder.log_tail() {
            Some(tail) => format!("{path}, which ended: {tail}"),
            None => path,
        }
    }

    fn down(&self, domain: &str, problem: String, unit: Option<String>) -> DomainError {
        DomainError::DaemonDown {
            domain: domain.to_owned(),
            problem,
            log: self.log_of(domain, unit),
        }
    }

    pub(super) fn stop_domain(&self, held: &mut Held, domain: &str) {
        if let Some(running) = held.running.remove(domain) {
            running.stop();
            tracing::info!(%domain, "IMEX daemon stopped: no channel of its domain is left");
        }
        if let Err(err) = self.folder(domain).remove() {
            tracing::warn!(error = %err, "IMEX domain folder not removed");
        }
    }

    /// Unprepares a channel claim; whether it was prepared.
    pub fn unprepare(&self, uid: &str) -> Result<bool, DomainError> {
        check_uuid("claim.uid", uid)?;
        let mut held = self.lock();
        let Some(record) = held.claims.get(uid).cloned() else {
            return Ok(false);
        };
        spec::remove(&self.settings.cdi_dir, uid)?;
        self.records.remove(uid)?;
        held.claims.remove(uid);
        if held.members(&record.domain).is_empty() {
            self.stop_domain(&mut held, &record.domain);
        }
        tracing::info!(claim = %record.claim_name(), domain = %record.domain, "IMEX channel unprepared");
        Ok(true)
    }

    /// Writes the claim's spec.
    pub(super) fn write_spec(&self, record: &ChannelRecord) -> Result<(), DomainError> {
        let spec = channel_spec(
            &record.uid,
            &record.channels(),
            &self.settings.nodes.dev_root,
            self.settings.nodes.major(),
        );
        spec::write(&self.settings.cdi_dir, &record.uid, &spec)
    }

    /// The node's NVLink clique, when it has one.
    pub fn clique(&self) -> Option<&str> {
        self.settings.clique.as_deref()
    }

    /// The address the IMEX daemons bind, when set.
    pub(crate) fn bind_address(&self) -> Option<IpAddr> {
        self.settings.bind_address
    }

    /// `[imex] rack_network`.
    pub(crate) fn rack_network(&self) -> &RackNetwork {
        &self.settings.rack
    }

    /// The domain's running daemon (tests and the status).
    pub fn running(&self, domain: &str) -> Option<Arc<Running>> {
        self.lock().running.get(domain).cloned()
    }
}

impl Drop for Domains {
    /// gpusliced is ending: the daemons run on for the next one to find;
    /// their monitors stop.
    fn drop(&mut self) {
        for running in self.lock().running.values() {
            running.let_go();
        }
    }
}
