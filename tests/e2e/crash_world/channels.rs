//! The ComputeDomain side of a crash-point node, read from the outside: its
//! channel claims' records (`state/compute-domains`), their CDI specs, its
//! domains' folders (`run/imex/<domain uid>`) and their IMEX daemons (the
//! process a folder's `daemon.pid` names, checked against /proc by its start
//! time, and every process started on a domain's config), and the
//! invariants they meet after every start: nothing half-prepared, a spec
//! for each prepared claim and no other, and one daemon and one folder for
//! each domain with a prepared claim, none for any other.

use std::collections::{BTreeMap, BTreeSet};

use gpuslice::compute_domains::cdi::{claim_uid_of_spec_file, spec_file_name};
use gpuslice::compute_domains::record::ChannelRecord;
use gpuslice::state::Phase;
use gpuslice::supervise::process::ProcessId;

use crate::crash_node::{Node, imex_processes, kept_daemon};
use crate::harness::list;

/// What a node holds of its channel claims and their domains.
pub struct Channels {
    pub records: Vec<ChannelRecord>,
    /// Files in the records folder that are not a record.
    pub stray_record_files: Vec<String>,
    /// Channel claims' spec files in the CDI folder.
    pub specs: BTreeSet<String>,
    /// The domains' folders.
    pub folders: BTreeSet<String>,
    /// Per domain folder, the daemon its `daemon.pid` names, while it runs.
    pub kept: BTreeMap<String, ProcessId>,
    /// Every running process started on a domain's config: (pid, domain).
    pub processes: Vec<(u32, String)>,
}

impl Channels {
    /// The node's channel claims and domains now.
    pub fn read(node: &Node) -> Self {
        let dir = node.path().join("state/compute-domains");
        let mut records = Vec::new();
        let mut stray_record_files = Vec::new();
        for name in list(&dir) {
            if name.starts_with('.') || !name.ends_with(".json") {
                stray_record_files.push(name);
                continue;
            }
            let bytes = std::fs::read(dir.join(&name)).expect("read a channel record");
            match serde_json::from_slice(&bytes) {
                Ok(record) => records.push(record),
                Err(e) => stray_record_files.push(format!("{name} (unreadable: {e})")),
            }
        }
        let specs = list(&node.path().join("cdi"))
            .into_iter()
            .filter(|name| claim_uid_of_spec_file(name).is_some())
            .collect();
        let imex = node.imex_dir();
        let folders: BTreeSet<String> = list(&imex).into_iter().collect();
        let kept = folders
            .iter()
            .filter_map(|domain| Some((domain.clone(), kept_daemon(&imex.join(domain))?)))
            .collect();
        Self {
            records,
            stray_record_files,
            specs,
            folders,
            kept,
            processes: imex_processes(&imex),
        }
    }

    /// Every broken invariant, in words.
    pub fn problems(&self, say: &mut impl FnMut(String)) {
        if !self.stray_record_files.is_empty() {
            say(format!(
                "channel records folder holds {:?}",
                self.stray_record_files
            ));
        }
        for r in self.records.iter().filter(|r| r.phase != Phase::Prepared) {
            say(format!(
                "record of channel claim {} survived start-up in phase {:?}",
                r.uid, r.phase
            ));
        }
        let prepared: Vec<&ChannelRecord> = self
            .records
            .iter()
            .filter(|r| r.phase == Phase::Prepared)
            .collect();
        let wanted: BTreeSet<String> = prepared.iter().map(|r| spec_file_name(&r.uid)).collect();
        if self.specs != wanted {
            say(format!(
                "channel specs {:?} are not the prepared channel claims' {wanted:?}",
                self.specs
            ));
        }
        let domains: BTreeSet<String> = prepared.iter().map(|r| r.domain.clone()).collect();
        self.check_daemons(&domains, say);
        if self.folders != domains {
            say(format!(
                "IMEX domain folders {:?}; the domains with a prepared channel claim are \
                 {domains:?}",
                self.folders
            ));
        }
    }

    /// One daemon per domain with a prepared claim, the one its pid file
    /// names; none for another domain.
    fn check_daemons(&self, domains: &BTreeSet<String>, say: &mut impl FnMut(String)) {
        let kept: BTreeSet<String> = self.kept.keys().cloned().collect();
        if kept != *domains {
            say(format!(
                "IMEX daemons named by their pid files run for {kept:?}; the domains with a \
                 prepared channel claim are {domains:?}"
            ));
        }
        let mut running: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
        for (pid, domain) in &self.processes {
            running.entry(domain).or_default().push(*pid);
        }
        for (domain, pids) in &running {
            let named = self.kept.get(*domain).map(|p| p.pid);
            if pids.len() != 1 || named != Some(pids[0]) {
                say(format!(
                    "processes {pids:?} run on ComputeDomain {domain}'s config; its pid file \
                     names {named:?}"
                ));
            }
        }
    }
}
