//! The engine of channel claims: prepare (checked request, record
//! `preparing`, channel device nodes, the domain's IMEX daemon started or
//! already running and READY, CDI spec, record `prepared`), unprepare (spec,
//! record, and the daemon with its folder once the domain's last claim on
//! the node is gone), the peers the plugin sets, the status it reads, and
//! start-up (roll back what a crash cut short, take over running daemons,
//! stop the ones of domains that are gone). A prepare that fails leaves
//! nothing of its own: no record, no spec, no daemon it started.
//!
//! One lock over the books: the prepares of one node are few (a pod or two
//! of each domain), and a prepare that waits for a starting daemon holds it
//! for at most `[imex] ready_timeout_s`.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use gpuslice_cdi::atomic::{remove_durable, write_atomic};
use gpuslice_imex::channels::{DEVICE_FOLDER, DEVICE_MODE, channel_major};
use gpuslice_imex::imex::Query;

use super::DomainError;
use super::cdi::{cdi_device_id, channel_spec, claim_uid_of_spec_file, spec_file_name};
use super::folder::{DomainFolder, checked_peers, query};
use super::imexd::{ImexDaemon, ImexSpec, ImexStatus};
use super::record::{ChannelRecord, RecordStore};
use super::request::{ChannelRequest, check_uuid};
use crate::mps::DaemonState;
use crate::state::Phase;

/// The longest a single readiness query may take.
const QUERY_BOUND: Duration = Duration::from_secs(2);
/// How often a prepare asks a starting daemon again.
const QUERY_EVERY: Duration = Duration::from_millis(100);

/// How a channel's device node comes to exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChannelNodes {
    /// The driver's: a missing node is made with mknod (the driver's major,
    /// minor the channel), as NVIDIA's plugin does.
    Driver,
    /// The simulator's: a plain file under the simulated driver root.
    Simulated,
}

/// What the engine is built from (`run` fills it from the config and the
/// inventory).
#[derive(Debug, Clone)]
pub struct DomainSettings {
    /// The state folder (records in `compute-domains/`).
    pub state_dir: PathBuf,
    /// Where CDI specs go.
    pub cdi_dir: PathBuf,
    /// The driver root (its /proc/devices).
    pub driver_root: PathBuf,
    /// The root of /dev.
    pub dev_root: PathBuf,
    /// `<run_dir>/imex`.
    pub imex_dir: PathBuf,
    /// nvidia-imex.
    pub program: PathBuf,
    /// nvidia-imex-ctl.
    pub ctl_program: PathBuf,
    /// `[imex] bind_address`.
    pub bind_address: Option<IpAddr>,
    /// How long a prepare waits for READY.
    pub ready_bound: Duration,
    /// How channel nodes are made.
    pub channel_nodes: ChannelNodes,
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

/// A domain the node is a member of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DomainStatus {
    /// The ComputeDomain's uid.
    pub domain: String,
    /// Its channel claims here, namespace/name.
    pub claims: Vec<String>,
    /// The peers in its nodes config.
    pub peers: Vec<String>,
    /// Its daemon.
    pub daemon: ImexStatus,
    /// What `nvidia-imex-ctl -q` says now.
    pub ready: Query,
}

#[derive(Debug, Default)]
struct Books {
    claims: BTreeMap<String, ChannelRecord>,
    daemons: BTreeMap<String, Arc<ImexDaemon>>,
}

impl Books {
    fn members(&self, domain: &str) -> Vec<&ChannelRecord> {
        self.claims
            .values()
            .filter(|r| r.domain == domain)
            .collect()
    }
}

/// The channel claims of this node and their domains' daemons.
#[derive(Debug)]
pub struct Domains {
    settings: DomainSettings,
    records: RecordStore,
    books: Mutex<Books>,
}

impl Domains {
    /// The engine over `settings`' folders; [`Domains::start_up`] next.
    pub fn new(settings: DomainSettings) -> Result<Self, DomainError> {
        let records = RecordStore::open(&settings.state_dir)?;
        Ok(Self {
            settings,
            records,
            books: Mutex::default(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Books> {
        self.books
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn folder(&self, domain: &str) -> DomainFolder {
        DomainFolder::new(&self.settings.imex_dir, domain)
    }

    fn spec(&self, domain: &str) -> ImexSpec {
        ImexSpec {
            domain: domain.to_owned(),
            program: self.settings.program.clone(),
            folder: self.folder(domain),
        }
    }

    /// Prepares a channel claim.
    pub fn prepare(&self, request: &ChannelRequest) -> Result<PreparedChannel, DomainError> {
        let ask = request.validate()?;
        let mut books = self.lock();
        if let Some(record) = books.claims.get(&ask.uid) {
            if !record.same_as(&ask) {
                return Err(DomainError::PreparedDifferently {
                    uid: ask.uid.clone(),
                    prepared: format!("{} of ComputeDomain {}", record.device, record.domain),
                });
            }
            let record = record.clone();
            self.ensure_nodes(&record)?;
            self.write_spec(&record)?;
            return Ok(PreparedChannel::AlreadyPrepared(record));
        }
        if self.settings.clique.is_none() {
            return Err(DomainError::NoFabric {
                domain: ask.domain,
                gpus: self.settings.fabric_summary.clone(),
            });
        }
        if let Some(other) = books.claims.values().find(|r| r.domain != ask.domain) {
            let other = other.domain.clone();
            return Err(DomainError::OtherDomain {
                domain: ask.domain,
                claims: books
                    .members(&other)
                    .iter()
                    .map(|r| r.claim_name())
                    .collect(),
                other,
            });
        }
        let mut record = ChannelRecord::preparing(&ask);
        self.ensure_nodes(&record)?;
        self.records.save(&record)?;
        let started = match self.ensure_daemon(&mut books, &ask.domain) {
            Ok(started) => started,
            Err(err) => {
                self.undo(&mut books, &record, false);
                return Err(err);
            }
        };
        let done = self
            .wait_ready(&books, &ask.domain)
            .and_then(|()| self.write_spec(&record))
            .and_then(|()| {
                record.phase = Phase::Prepared;
                self.records.save(&record)
            });
        if let Err(err) = done {
            self.undo(&mut books, &record, started);
            return Err(err);
        }
        tracing::info!(claim = %record.claim_name(), domain = %record.domain, channel = record.channel, "IMEX channel prepared");
        books.claims.insert(record.uid.clone(), record.clone());
        Ok(PreparedChannel::Created(record))
    }

    /// Undoes a prepare that failed: its spec and record, and the daemon
    /// when it started it.
    fn undo(&self, books: &mut Books, record: &ChannelRecord, started: bool) {
        let _ = remove_durable(&self.settings.cdi_dir, &spec_file_name(&record.uid));
        if let Err(err) = self.records.remove(&record.uid) {
            tracing::error!(error = %err, "channel claim record not removed after a failed prepare");
        }
        if started && books.members(&record.domain).is_empty() {
            self.stop_domain(books, &record.domain);
        }
    }

    /// Starts the domain's daemon unless it runs; whether it started it.
    fn ensure_daemon(&self, books: &mut Books, domain: &str) -> Result<bool, DomainError> {
        if let Some(daemon) = books.daemons.get(domain) {
            if daemon.status().state != DaemonState::Failed {
                return Ok(false);
            }
            daemon.stop();
            books.daemons.remove(domain);
        }
        let folder = self.folder(domain);
        folder.write(self.settings.bind_address, &self.initial_peers(&folder))?;
        let daemon = ImexDaemon::start(&self.spec(domain))?;
        tracing::info!(%domain, pid = ?daemon.status().pid, "IMEX daemon started");
        books.daemons.insert(domain.to_owned(), Arc::new(daemon));
        Ok(true)
    }

    /// The peers a daemon starts with: those kept in its folder, else the
    /// node itself (when it has a bind address), until the plugin sets them.
    fn initial_peers(&self, folder: &DomainFolder) -> Vec<String> {
        let kept = folder.peers();
        if !kept.is_empty() {
            return kept;
        }
        self.settings
            .bind_address
            .map(|ip| vec![ip.to_string()])
            .unwrap_or_default()
    }

    /// Waits (bounded) for the domain's daemon to report READY.
    fn wait_ready(&self, books: &Books, domain: &str) -> Result<(), DomainError> {
        let Some(daemon) = books.daemons.get(domain) else {
            return Err(self.down(domain, "it is not running".to_owned()));
        };
        let deadline = Instant::now() + self.settings.ready_bound;
        let config = daemon.folder().config_path();
        loop {
            if daemon.status().state == DaemonState::Failed {
                let problem = daemon.problem().unwrap_or_else(|| "failed".to_owned());
                return Err(self.down(domain, problem));
            }
            let now = Instant::now();
            let bound = deadline.saturating_duration_since(now).min(QUERY_BOUND);
            let answer = match query(&self.settings.ctl_program, &config, bound.max(QUERY_EVERY)) {
                Query::Ready => return Ok(()),
                Query::NotReady(answer) => answer,
            };
            if Instant::now() >= deadline {
                return Err(DomainError::NotReady {
                    domain: domain.to_owned(),
                    seconds: self.settings.ready_bound.as_secs(),
                    answer,
                    log: daemon.folder().log_path(),
                });
            }
            daemon.wait_for_change(QUERY_EVERY);
        }
    }

    fn down(&self, domain: &str, problem: String) -> DomainError {
        DomainError::DaemonDown {
            domain: domain.to_owned(),
            problem,
            log: self.folder(domain).log_path(),
        }
    }

    fn stop_domain(&self, books: &mut Books, domain: &str) {
        if let Some(daemon) = books.daemons.remove(domain) {
            daemon.stop();
            tracing::info!(%domain, "IMEX daemon stopped: no channel of its domain is left");
        }
        if let Err(err) = self.folder(domain).remove() {
            tracing::warn!(error = %err, "IMEX domain folder not removed");
        }
    }

    /// Unprepares a channel claim; whether it was prepared.
    pub fn unprepare(&self, uid: &str) -> Result<bool, DomainError> {
        check_uuid("claim.uid", uid)?;
        let mut books = self.lock();
        let Some(record) = books.claims.get(uid).cloned() else {
            return Ok(false);
        };
        remove_durable(&self.settings.cdi_dir, &spec_file_name(uid)).map_err(|e| {
            DomainError::Io {
                action: "remove",
                path: self.settings.cdi_dir.join(spec_file_name(uid)),
                error: std::io::Error::other(e.to_string()),
            }
        })?;
        self.records.remove(uid)?;
        books.claims.remove(uid);
        if books.members(&record.domain).is_empty() {
            self.stop_domain(&mut books, &record.domain);
        }
        tracing::info!(claim = %record.claim_name(), domain = %record.domain, "IMEX channel unprepared");
        Ok(true)
    }

    /// Sets the peers of a domain the node is a member of; whether they
    /// changed (the daemon is then restarted on them).
    pub fn set_peers(&self, domain: &str, peers: &[String]) -> Result<bool, DomainError> {
        check_uuid("domain", domain)?;
        let peers = checked_peers(peers)?;
        let books = self.lock();
        if books.members(domain).is_empty() {
            return Err(DomainError::NotMember {
                domain: domain.to_owned(),
            });
        }
        let changed = self
            .folder(domain)
            .write(self.settings.bind_address, &peers)?;
        if changed && let Some(daemon) = books.daemons.get(domain) {
            tracing::info!(%domain, peers = %peers.join(","), "IMEX peers changed; restarting its daemon on them");
            daemon.reload();
        }
        Ok(changed)
    }

    /// The domains the node is a member of, with their daemons' state and
    /// readiness now.
    pub fn list(&self) -> Vec<DomainStatus> {
        let books = self.lock();
        books
            .daemons
            .iter()
            .map(|(domain, daemon)| {
                let status = daemon.status();
                let ready = if status.state == DaemonState::Running {
                    query(
                        &self.settings.ctl_program,
                        &daemon.folder().config_path(),
                        QUERY_BOUND,
                    )
                } else {
                    Query::NotReady(format!("daemon {}", status.state))
                };
                DomainStatus {
                    domain: domain.clone(),
                    claims: books
                        .members(domain)
                        .iter()
                        .map(|r| r.claim_name())
                        .collect(),
                    peers: daemon.folder().peers(),
                    daemon: status,
                    ready,
                }
            })
            .collect()
    }

    /// The node's NVLink clique, when it has one.
    pub fn clique(&self) -> Option<&str> {
        self.settings.clique.as_deref()
    }

    /// The address the IMEX daemons bind, when set.
    pub fn bind_address(&self) -> Option<IpAddr> {
        self.settings.bind_address
    }

    /// The domain's daemon (tests and the status).
    pub fn daemon(&self, domain: &str) -> Option<Arc<ImexDaemon>> {
        self.lock().daemons.get(domain).cloned()
    }

    /// Start-up: rolls back `preparing` records, serves `prepared` ones
    /// again (taking over their domains' running daemons, starting the
    /// others), stops the daemons and removes the folders and specs of
    /// claims that are gone. What it could not do, for an operator.
    pub fn start_up(&self) -> Result<Vec<String>, DomainError> {
        let (records, mut problems) = self.records.load_all()?;
        let mut books = self.lock();
        for record in records {
            match record.phase {
                Phase::Preparing => {
                    let _ = remove_durable(&self.settings.cdi_dir, &spec_file_name(&record.uid));
                    self.records.remove(&record.uid)?;
                    tracing::warn!(claim = %record.claim_name(), "channel prepare cut short by a crash; rolled back");
                }
                Phase::Prepared => {
                    books.claims.insert(record.uid.clone(), record);
                }
            }
        }
        let domains: Vec<String> = books.claims.values().map(|r| r.domain.clone()).collect();
        for domain in domains {
            if books.daemons.contains_key(&domain) {
                continue;
            }
            if let Some(daemon) = ImexDaemon::adopt(&self.spec(&domain))? {
                tracing::info!(%domain, pid = ?daemon.status().pid, "took over a running IMEX daemon");
                books.daemons.insert(domain, Arc::new(daemon));
            } else if let Err(err) = self.ensure_daemon(&mut books, &domain) {
                problems.push(format!("ComputeDomain {domain}: {err}"));
            }
        }
        self.sweep(&books, &mut problems);
        for record in books.claims.values() {
            if let Err(err) = self
                .ensure_nodes(record)
                .and_then(|()| self.write_spec(record))
            {
                problems.push(format!("channel claim {}: {err}", record.claim_name()));
            }
        }
        Ok(problems)
    }

    /// Stops the daemons and removes the folders of domains without a
    /// claim, and removes channel specs without a prepared claim.
    fn sweep(&self, books: &Books, problems: &mut Vec<String>) {
        let folders = std::fs::read_dir(&self.settings.imex_dir)
            .into_iter()
            .flatten();
        for entry in folders.flatten() {
            let domain = entry.file_name().to_string_lossy().into_owned();
            if books.daemons.contains_key(&domain) || check_uuid("domain", &domain).is_err() {
                continue;
            }
            let folder = self.folder(&domain);
            ImexDaemon::stop_stale(&folder);
            tracing::info!(%domain, "stopped the IMEX daemon of a domain with no channel left");
            if let Err(err) = folder.remove() {
                problems.push(err.to_string());
            }
        }
        let specs = std::fs::read_dir(&self.settings.cdi_dir)
            .into_iter()
            .flatten();
        for entry in specs.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if claim_uid_of_spec_file(&name).is_some_and(|uid| !books.claims.contains_key(uid)) {
                let _ = remove_durable(&self.settings.cdi_dir, &name);
            }
        }
    }

    /// The claim's channel device nodes exist.
    fn ensure_nodes(&self, record: &ChannelRecord) -> Result<(), DomainError> {
        let folder = self
            .settings
            .dev_root
            .join(DEVICE_FOLDER.trim_start_matches('/'));
        let major = self.major();
        for id in record.channels() {
            let path = folder.join(format!("channel{id}"));
            if path.exists() {
                continue;
            }
            std::os::unix::fs::DirBuilderExt::mode(
                std::fs::DirBuilder::new().recursive(true),
                0o755,
            )
            .create(&folder)
            .map_err(|e| DomainError::io("create", &folder, e))?;
            make_node(&path, self.settings.channel_nodes, major, id).map_err(|e| match e {
                NodeError::NoMajor => DomainError::NoChannelDevices {
                    path: self.proc_devices(),
                },
                NodeError::Io(error) => DomainError::io("make the channel node", &path, error),
            })?;
        }
        Ok(())
    }

    fn proc_devices(&self) -> PathBuf {
        self.settings.driver_root.join("proc/devices")
    }

    fn major(&self) -> Option<u32> {
        std::fs::read_to_string(self.proc_devices())
            .ok()
            .and_then(|text| channel_major(&text))
    }

    fn write_spec(&self, record: &ChannelRecord) -> Result<(), DomainError> {
        let spec = channel_spec(
            &record.uid,
            &record.channels(),
            &self.settings.dev_root,
            self.major(),
        );
        let name = spec_file_name(&record.uid);
        let path = self.settings.cdi_dir.join(&name);
        let other = |e: String| DomainError::Io {
            action: "write",
            path: path.clone(),
            error: std::io::Error::other(e),
        };
        let bytes = gpuslice_cdi::validate::to_json(&spec).map_err(|e| other(e.to_string()))?;
        write_atomic(&self.settings.cdi_dir, &name, &bytes, 0o644).map_err(|e| other(e.to_string()))
    }
}

enum NodeError {
    NoMajor,
    Io(std::io::Error),
}

/// Makes channel `id`'s node at `path`.
fn make_node(path: &Path, how: ChannelNodes, major: Option<u32>, id: u32) -> Result<(), NodeError> {
    match how {
        ChannelNodes::Simulated => std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .and_then(|f| {
                f.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(DEVICE_MODE))
            })
            .map_err(NodeError::Io),
        ChannelNodes::Driver => {
            let major = major.ok_or(NodeError::NoMajor)?;
            nix::sys::stat::mknod(
                path,
                nix::sys::stat::SFlag::S_IFCHR,
                nix::sys::stat::Mode::from_bits_truncate(DEVICE_MODE),
                nix::sys::stat::makedev(u64::from(major), u64::from(id)),
            )
            .map_err(|e| NodeError::Io(std::io::Error::from(e)))
        }
    }
}
