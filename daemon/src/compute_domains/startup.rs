//! Start-up of the channel engine, before gpusliced's socket opens: the
//! records read (a `preparing` one, cut short by a crash, rolled back: its
//! spec and record); each domain with a prepared claim gets its daemon back
//! (the one a previous gpusliced started, found again by its runner, else a
//! new one); the daemons, folders and specs of domains and claims that are
//! gone are removed, with the temp files of spec writes a crash cut short;
//! every prepared claim's nodes and spec are made again (/var/run/cdi and
//! /dev are wiped at reboot).

use super::DomainError;
use super::cdi::{claim_uid_of_spec_file, is_spec_temp};
use super::engine::{Domains, Held};
use super::monitor::Running;
use super::request::check_uuid;
use super::spec;
use crate::state::Phase;

impl Domains {
    /// Start-up; what it could not do, for an operator.
    pub fn start_up(&self) -> Result<Vec<String>, DomainError> {
        let loaded = self.records.load_all()?;
        let (records, mut problems) = (loaded.records, loaded.unreadable);
        let mut held = self.lock();
        for record in records {
            match record.phase {
                Phase::Preparing => {
                    spec::remove(&self.settings.cdi_dir, &record.uid)?;
                    self.records.remove(&record.uid)?;
                    tracing::warn!(claim = %record.claim_name(), "channel prepare cut short by a crash; rolled back");
                }
                Phase::Prepared => {
                    held.claims.insert(record.uid.clone(), record);
                }
            }
        }
        self.bring_back(&mut held, &mut problems);
        self.sweep(&held, &mut problems);
        for record in held.claims.values() {
            if let Err(err) = self
                .settings
                .nodes
                .ensure(&record.channels())
                .and_then(|()| self.write_spec(record))
            {
                problems.push(format!("channel claim {}: {err}", record.claim_name()));
            }
        }
        Ok(problems)
    }

    /// Each domain with a prepared claim gets its daemon: found again, or
    /// started.
    fn bring_back(&self, held: &mut Held, problems: &mut Vec<String>) {
        let domains: Vec<String> = held.claims.values().map(|r| r.domain.clone()).collect();
        for domain in domains {
            if held.running.contains_key(&domain) {
                continue;
            }
            match self.bring_back_one(&domain) {
                Ok(running) => {
                    held.running.insert(domain, running);
                }
                Err(err) => problems.push(format!("ComputeDomain {domain}: {err}")),
            }
        }
    }

    fn bring_back_one(&self, domain: &str) -> Result<std::sync::Arc<Running>, DomainError> {
        let bind = self
            .settings
            .bind_address
            .ok_or(DomainError::NoBindAddress)?;
        let spec = self.imex_spec(domain);
        let mapping = spec.folder.mapping();
        spec.folder.make(bind, &mapping)?;
        let ctl = self.settings.ctl_program.clone();
        if let Some(daemon) = self.runner.adopt(&spec)? {
            tracing::info!(%domain, pid = ?daemon.status().pid, unit = ?daemon.status().unit, "took over a running IMEX daemon");
            return Running::watch(daemon, spec.folder, ctl, bind, false);
        }
        let daemon = self.runner.start(&spec)?;
        tracing::info!(%domain, pid = ?daemon.status().pid, "IMEX daemon started again");
        Running::watch(daemon, spec.folder, ctl, bind, true)
    }

    /// Stops the daemons and removes the folders of domains without a
    /// claim, and removes channel specs without a prepared claim and the
    /// temp files of spec writes.
    fn sweep(&self, held: &Held, problems: &mut Vec<String>) {
        let mut gone: Vec<String> = self.runner.running(&self.settings.imex_dir);
        let folders = std::fs::read_dir(&self.settings.imex_dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned());
        gone.extend(folders);
        gone.sort();
        gone.dedup();
        for domain in gone {
            if held.running.contains_key(&domain) || check_uuid("domain", &domain).is_err() {
                continue;
            }
            self.runner.stop_stale(&self.imex_spec(&domain));
            tracing::info!(%domain, "stopped the IMEX daemon of a domain with no channel left");
            if let Err(err) = self.folder(&domain).remove() {
                problems.push(err.to_string());
            }
        }
        let specs = std::fs::read_dir(&self.settings.cdi_dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned());
        for name in specs {
            if is_spec_temp(&name) {
                // A write a crash cut short: the spec it would have
                // replaced, if any, is whole beside it.
                let path = self.settings.cdi_dir.join(&name);
                if let Err(err) = std::fs::remove_file(&path)
                    && err.kind() != std::io::ErrorKind::NotFound
                {
                    problems.push(DomainError::io("remove", &path, err).to_string());
                }
                continue;
            }
            if let Some(uid) = claim_uid_of_spec_file(&name)
                && !held.claims.contains_key(uid)
                && let Err(err) = spec::remove(&self.settings.cdi_dir, uid)
            {
                problems.push(err.to_string());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};
    use std::sync::Arc;
    use std::time::Duration;

    use super::super::cdi::spec_file_name;
    use super::super::engine::{DomainSettings, Domains};
    use super::super::nodes::{ChannelNodes, NodeMaker};
    use super::super::runner::{Daemon, ImexSpec, Runner};
    use super::DomainError;

    const UID: &str = "0b4c9f3e-1111-4a2b-8c3d-0123456789ab";

    /// A node with no daemon running and none to start.
    #[derive(Debug)]
    struct NoDaemons;

    impl Runner for NoDaemons {
        fn name(&self) -> &'static str {
            "none"
        }
        fn start(&self, _: &ImexSpec) -> Result<Box<dyn Daemon>, DomainError> {
            Err(DomainError::NoBindAddress)
        }
        fn adopt(&self, _: &ImexSpec) -> Result<Option<Box<dyn Daemon>>, DomainError> {
            Ok(None)
        }
        fn stop_stale(&self, _: &ImexSpec) {}
        fn running(&self, _: &Path) -> Vec<String> {
            Vec::new()
        }
    }

    fn settings(root: &Path) -> DomainSettings {
        DomainSettings {
            state_dir: root.join("state"),
            cdi_dir: root.join("cdi"),
            nodes: NodeMaker {
                how: ChannelNodes::Simulated,
                dev_root: root.to_path_buf(),
                driver_root: root.to_path_buf(),
            },
            imex_dir: root.join("run/imex"),
            program: PathBuf::from("/nonexistent/nvidia-imex"),
            ctl_program: PathBuf::from("/nonexistent/nvidia-imex-ctl"),
            bind_address: None,
            rack: gpuslice_imex::network::RackNetwork::default(),
            ready_bound: Duration::from_secs(1),
            clique: None,
            fabric_summary: String::new(),
        }
    }

    /// The crash-point test found it: a crash between a channel spec's
    /// temp file and its rename left the temp in the CDI folder for good.
    #[test]
    fn a_spec_write_cut_short_leaves_no_temp_after_the_next_start() {
        let dir = tempfile::tempdir().expect("temp dir");
        let settings = settings(dir.path());
        std::fs::create_dir_all(&settings.cdi_dir).expect("cdi dir");
        let temp = format!(".{}.tmp-4242-7", spec_file_name(UID));
        let gpu_temp = format!(".{}.tmp-4242-8", crate::cdi_build::spec_file_name(UID));
        for name in [&temp, &gpu_temp] {
            gpuslice_cdi::atomic::write_atomic(&settings.cdi_dir, name, b"{", 0o644)
                .expect("a temp file");
        }
        let cdi_dir = settings.cdi_dir.clone();
        let domains = Domains::new(settings, Arc::new(NoDaemons)).expect("engine");
        let problems = domains.start_up().expect("start-up");
        assert!(problems.is_empty(), "{problems:?}");
        assert!(
            !cdi_dir.join(&temp).exists(),
            "the channel spec's temp is removed"
        );
        assert!(
            cdi_dir.join(&gpu_temp).exists(),
            "a GPU claim's temp is the GPU claims' reconcile's to remove"
        );
    }
}
