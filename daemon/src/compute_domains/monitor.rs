//! One running domain: its IMEX daemon and the thread that keeps an eye on
//! it. The thread reads the daemon's state, asks `nvidia-imex-ctl` whether
//! it is READY and (once it knows its members) connected to them, keeps
//! what it saw for `ListDomains` (which so never waits on a process), and
//! sends the SIGUSR1 [`super::reload`] says is due after the mapping
//! changed. It looks every second while anything is amiss and every ten
//! once all is well; a new mapping or a stop wakes it at once.

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use gpuslice_imex::imex::Query;
use gpuslice_imex::names::Mapping;

use super::DomainError;
use super::ctl;
use super::folder::DomainFolder;
use super::reload::Reload;
use super::runner::{Daemon, ImexStatus};
use crate::supervise::DaemonState;
use crate::supervise::process::since_boot;

/// The longest one `nvidia-imex-ctl` run may take.
pub const QUERY_BOUND: Duration = Duration::from_secs(2);
/// How often the thread looks while anything is amiss.
const AMISS_EVERY: Duration = Duration::from_secs(1);
/// How often it looks once the daemon is ready, knows its members and is
/// connected to them.
const WELL_EVERY: Duration = Duration::from_secs(10);

/// Why a daemon whose members changed is not connected yet.
const NOT_TOLD: &str = "its members changed; not told yet";

/// What the thread last saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// The daemon's state.
    pub status: ImexStatus,
    /// What `nvidia-imex-ctl -q` said.
    pub ready: Query,
    /// The mapping in force.
    pub mapping: Mapping,
    /// Whether the daemon's process knows that mapping.
    pub knows: bool,
    /// Whether it is connected to every other member of it, and if not,
    /// who is not.
    pub connected: Result<(), String>,
}

#[derive(Debug)]
struct Shared {
    reload: Reload,
    seen: Option<Seen>,
    stopping: bool,
}

/// A running domain.
#[derive(Debug)]
pub struct Running {
    daemon: Box<dyn Daemon>,
    folder: DomainFolder,
    ctl: PathBuf,
    bind: IpAddr,
    shared: Mutex<Shared>,
    wake: Condvar,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Running {
    /// Watches `daemon`, just started (`fresh`) or found again after a
    /// restart of gpusliced.
    pub fn watch(
        daemon: Box<dyn Daemon>,
        folder: DomainFolder,
        ctl: PathBuf,
        bind: IpAddr,
        fresh: bool,
    ) -> Result<Arc<Self>, DomainError> {
        let now = since_boot();
        let reload = if fresh {
            let mut reload = Reload::default();
            reload.seen(daemon.process());
            reload
        } else {
            let (written, told) = folder.written_and_told(now);
            Reload::adopted(daemon.process(), written, told, now)
        };
        let running = Arc::new(Self {
            daemon,
            folder,
            ctl,
            bind,
            shared: Mutex::new(Shared {
                reload,
                seen: None,
                stopping: false,
            }),
            wake: Condvar::new(),
            thread: Mutex::new(None),
        });
        let watched = Arc::clone(&running);
        let domain = running.folder.domain().to_owned();
        let handle = std::thread::Builder::new()
            .name(format!("imexmon-{}", &domain[..8.min(domain.len())]))
            .spawn(move || watched.run())
            .map_err(|e| DomainError::io("start the monitor of", running.folder.root(), e))?;
        *running
            .thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(handle);
        Ok(running)
    }

    fn lock(&self) -> MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The daemon.
    pub fn daemon(&self) -> &dyn Daemon {
        self.daemon.as_ref()
    }

    /// The domain's folder.
    pub fn folder(&self) -> &DomainFolder {
        &self.folder
    }

    /// Writes `mapping` (in place) and lets the thread tell the daemon;
    /// whether it changed.
    pub fn set_mapping(&self, mapping: &Mapping) -> Result<bool, DomainError> {
        let mut shared = self.lock();
        let changed = self.folder.write_mapping(mapping)?;
        if changed {
            shared.reload.written(since_boot());
            if let Some(seen) = shared.seen.as_mut() {
                seen.mapping.clone_from(mapping);
                seen.knows = false;
                seen.connected = Err(NOT_TOLD.to_owned());
            }
            self.wake.notify_all();
        }
        Ok(changed)
    }

    /// What the thread last saw; looks now when it has not yet.
    pub fn seen(&self) -> Seen {
        if let Some(seen) = self.lock().seen.clone() {
            return seen;
        }
        self.look()
    }

    /// Stops the thread, then the daemon.
    pub fn stop(&self) {
        self.lock().stopping = true;
        self.wake.notify_all();
        let handle = self
            .thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(handle) = handle {
            let _ = handle.join();
        }
        self.daemon.stop();
    }

    /// Stops the thread and lets go of the daemon, which runs on
    /// (gpusliced is ending).
    pub fn let_go(&self) {
        self.lock().stopping = true;
        self.wake.notify_all();
        self.daemon.let_go();
    }

    /// Looks at once (after a change the caller made, e.g. a prepare that
    /// saw the daemon READY), so what is shown is current.
    pub fn refresh(&self) {
        self.look();
    }

    /// One look: the daemon, its readiness, its connections.
    fn look(&self) -> Seen {
        let process = self.daemon.process();
        let knows = {
            let mut shared = self.lock();
            shared.reload.seen(process);
            shared.reload.knows()
        };
        let status = self.daemon.status();
        let config = self.folder.config_path();
        let ready = if status.state == DaemonState::Running {
            ctl::ready(&self.ctl, &config, QUERY_BOUND)
        } else {
            Query::NotReady(format!("daemon {}", status.state))
        };
        let mapping = self.folder.mapping();
        let own = mapping
            .iter()
            .find(|(_, a)| **a == self.bind)
            .map(|(i, _)| *i);
        let connected = match (own, &ready, knows) {
            (_, Query::NotReady(_), _) => Err("not ready".to_owned()),
            (_, _, false) => Err(NOT_TOLD.to_owned()),
            (None, _, _) => Err(format!("{} is not among its members yet", self.bind)),
            (Some(own), Query::Ready, true) => {
                ctl::connections(&self.ctl, &config, own, &mapping, QUERY_BOUND)
            }
        };
        let seen = Seen {
            status,
            ready,
            mapping,
            knows,
            connected,
        };
        self.lock().seen = Some(seen.clone());
        seen
    }

    fn run(&self) {
        loop {
            let seen = self.look();
            let mut shared = self.lock();
            if shared.stopping {
                return;
            }
            let now = since_boot();
            let due = shared.reload.due(seen.connected.is_ok());
            if due.is_some_and(|due| due <= now) {
                drop(shared);
                let sent = self.daemon.reload();
                shared = self.lock();
                if sent {
                    shared.reload.sent(since_boot());
                    if let Err(err) = self.folder.mark_told() {
                        tracing::warn!(error = %err, "a restart of gpusliced will tell the IMEX daemon its members again");
                    }
                    tracing::info!(domain = %self.folder.domain(), "IMEX daemon told its members (SIGUSR1)");
                }
                continue;
            }
            let well = seen.ready == Query::Ready && seen.knows && seen.connected.is_ok();
            let every = if well { WELL_EVERY } else { AMISS_EVERY };
            let pause = due.map_or(every, |due| every.min(due.saturating_sub(now)));
            let (guard, _) = self
                .wake
                .wait_timeout(shared, pause)
                .unwrap_or_else(PoisonError::into_inner);
            if guard.stopping {
                return;
            }
        }
    }
}
