//! One pass of a node's loop over what its caches hold and what gpusliced
//! says (no API request but the writes it decides):
//!
//! 1. every domain's workload template, made only where the cache lacks it
//!    and only after the node's [`creation_delay`]; one found already there
//!    is checked to be the domain's, and refused loudly if not;
//! 2. each domain the node is in, or was in (its entry or its Lease is
//!    there): its turn (gpuslice-compute-domain's `coordinate::turn`),
//!    carried out in order: its Lease created, its daemon told the members,
//!    its entry applied, gone entries removed, its Lease deleted;
//! 3. its Leases of domains that are gone, deleted.
//!
//! A write is made once per change ([`Memory`]); what failed is paused and
//! reported, never stops the pass. Without an answer from gpusliced the
//! node's membership is left as it is (a gpusliced restarting is not a node
//! leaving).

use std::collections::BTreeSet;
use std::time::Instant;

use gpuslice_compute_domain::coordinate::{self, LeaseStep, Me, Turn, View};
use gpuslice_compute_domain::template::{check_found, creation_delay};

use super::cache::Snapshot;
use super::kube_api::{Created, DomainWrites};
use super::memory::{Memory, REFUSED_RETRY, Step};
use super::node::{DomainNode, NodeDomains};
use super::read::DomainSeen;

/// What a pass did, for the log and the tests.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Templates made.
    pub templates_made: usize,
    /// Status writes (applies and removals) that landed.
    pub statuses_written: usize,
    /// Leases created and deleted.
    pub leases_written: usize,
    /// Domains whose members were told to gpusliced.
    pub members_told: usize,
    /// What is wrong, one line each (said when it changes).
    pub problems: Vec<String>,
    /// What is refused loudly (a template that is not the domain's).
    pub refusals: Vec<String>,
    /// When the next pass is due for something this one waited for.
    pub wake: Option<Instant>,
}

impl Report {
    fn wake_at(&mut self, at: Instant) {
        self.wake = Some(self.wake.map_or(at, |w| w.min(at)));
    }
}

/// The node's pass: `node` its name, `here` gpusliced's answer.
#[derive(Debug)]
pub struct Pass<'a, W, N> {
    pub writes: &'a W,
    pub gpusliced: &'a N,
    pub node: &'a str,
    pub memory: &'a mut Memory,
    pub now: Instant,
}

impl<W: DomainWrites, N: DomainNode> Pass<'_, W, N> {
    /// One pass over `snapshot`.
    pub async fn run(&mut self, snapshot: &Snapshot, here: &Result<NodeDomains, String>) -> Report {
        let mut report = Report {
            problems: snapshot.unreadable.clone(),
            ..Report::default()
        };
        for domain in &snapshot.domains {
            self.template(domain, snapshot, &mut report).await;
        }
        match here {
            Ok(here) => {
                for domain in &snapshot.domains {
                    self.membership(domain, snapshot, here, &mut report).await;
                }
                self.stale_leases(snapshot, here, &mut report).await;
            }
            Err(err) => report.problems.push(err.clone()),
        }
        let live: BTreeSet<String> = (snapshot.domains.iter().map(|d| &d.uid))
            .chain(snapshot.leases.keys())
            .cloned()
            .collect();
        self.memory.keep_only(&live);
        report
    }

    async fn template(&mut self, domain: &DomainSeen, snapshot: &Snapshot, report: &mut Report) {
        let (Ok(made), Some(key)) = (&domain.template, domain.template_key()) else {
            if let Err(why) = &domain.template {
                report.problems.push(why.clone());
            }
            return;
        };
        if domain.deleting {
            return;
        }
        match snapshot.templates.get(&key) {
            Some(uid) if *uid == domain.uid => return self.memory.template_seen(&domain.uid),
            Some(uid) => {
                report.refusals.push(format!(
                    "ResourceClaimTemplate {}/{} exists but is labelled for ComputeDomain {uid}, \
                     not {} ({}): not made; the domain's pods cannot start until it is removed",
                    key.0,
                    key.1,
                    domain.id(),
                    domain.uid
                ));
                return;
            }
            None => {}
        }
        let delay = creation_delay(self.node, &domain.uid);
        let due = self.memory.template_due(&domain.uid, delay, self.now);
        if self.now < due {
            return report.wake_at(due);
        }
        match self.writes.create_template(made).await {
            Ok(Created::Made) => {
                report.templates_made += 1;
                self.memory
                    .hold_template(&domain.uid, self.now, super::memory::PENDING);
            }
            Ok(Created::Exists(None)) => {}
            Ok(Created::Exists(Some(found))) => match check_found(&found, made) {
                Ok(()) => self
                    .memory
                    .hold_template(&domain.uid, self.now, super::memory::PENDING),
                Err(why) => {
                    report.refusals.push(format!(
                        "ResourceClaimTemplate {}/{} exists but is not ComputeDomain {}'s ({}): {why}; \
                         not taken for made, asked again in {} s",
                        key.0,
                        key.1,
                        domain.id(),
                        domain.uid,
                        REFUSED_RETRY.as_secs()
                    ));
                    self.memory
                        .hold_template(&domain.uid, self.now, REFUSED_RETRY);
                }
            },
            Err(err) => {
                report.problems.push(format!(
                    "ComputeDomain {}: template {}/{} not made: {err}",
                    domain.id(),
                    key.0,
                    key.1
                ));
                let pause = self.memory.failed(&domain.uid, Step::Template, self.now);
                self.memory.hold_template(&domain.uid, self.now, pause);
            }
        }
    }

    async fn membership(
        &mut self,
        domain: &DomainSeen,
        snapshot: &Snapshot,
        here: &NodeDomains,
        report: &mut Report,
    ) {
        let uid = &domain.uid;
        let local = here.domains.get(uid);
        let leases = snapshot.leases.get(uid).cloned().unwrap_or_default();
        let listed = domain.entries.names().any(|(_, n)| n == self.node);
        if local.is_none() && !listed && !leases.contains_key(self.node) {
            return;
        }
        let names: Vec<&str> = domain.entries.names().map(|(_, n)| n).collect();
        let holders: BTreeSet<String> = leases.keys().cloned().collect();
        let (gone, next) = self.memory.gone(uid, self.node, names, &holders, self.now);
        if let Some(next) = next {
            report.wake_at(next);
        }
        let patience = self.memory.member(uid, local.is_some(), self.now);
        let patient = patience.is_some_and(|until| self.now < until);
        if let Some(until) = patience.filter(|_| patient) {
            report.wake_at(until);
        }
        let me = Me {
            node: self.node.to_owned(),
            address: here.address.clone(),
            clique: here.clique.clone(),
        };
        let view = View {
            num_nodes: domain.num_nodes,
            status: domain.status,
            entries: &domain.entries,
            leases: &leases,
            gone: &gone,
            patient,
        };
        let turn = coordinate::turn(&me, local, &view);
        if let Some(problem) = &turn.problem {
            report
                .problems
                .push(format!("ComputeDomain {}: {problem}", domain.id()));
        }
        if turn.lease == LeaseStep::Create && !self.lease(domain, &me.clique, report).await {
            return;
        }
        self.tell(domain, &turn, report).await;
        self.write_status(domain, &turn, report).await;
        if turn.lease == LeaseStep::Delete {
            self.unlease(domain, report).await;
        }
    }

    /// Creates the node's Lease of `domain` (in `clique`); whether it is
    /// there, or may be taken so.
    async fn lease(&mut self, domain: &DomainSeen, clique: &str, report: &mut Report) -> bool {
        let uid = &domain.uid;
        if self.memory.lease_pending(uid, true, self.now) {
            return true;
        }
        let done = match self.memory.paused(uid, Step::Lease, self.now) {
            Some(until) => {
                report.wake_at(until);
                return false;
            }
            None => self.writes.create_lease(uid, clique).await,
        };
        self.lease_done(domain, true, done, report)
    }

    /// Deletes the node's Lease of `domain`.
    async fn unlease(&mut self, domain: &DomainSeen, report: &mut Report) {
        let uid = &domain.uid;
        if self.memory.lease_pending(uid, false, self.now) {
            return;
        }
        if let Some(until) = self.memory.paused(uid, Step::Lease, self.now) {
            return report.wake_at(until);
        }
        let done = self.writes.delete_lease(uid).await;
        self.lease_done(domain, false, done, report);
    }

    fn lease_done(
        &mut self,
        domain: &DomainSeen,
        create: bool,
        done: Result<(), super::kube_api::WriteError>,
        report: &mut Report,
    ) -> bool {
        let uid = &domain.uid;
        match done {
            Ok(()) => {
                report.leases_written += 1;
                self.memory.lease_done(uid, create, self.now);
                self.memory.succeeded(uid, Step::Lease);
                true
            }
            Err(err) => {
                let what = if create { "created" } else { "deleted" };
                report.problems.push(format!(
                    "ComputeDomain {}: membership Lease not {what}: {err}",
                    domain.id()
                ));
                self.memory.failed(uid, Step::Lease, self.now);
                false
            }
        }
    }

    async fn tell(&mut self, domain: &DomainSeen, turn: &Turn, report: &mut Report) {
        let Some(members) = &turn.members else {
            return;
        };
        if let Some(until) = self.memory.paused(&domain.uid, Step::Members, self.now) {
            return report.wake_at(until);
        }
        match self.gpusliced.set_members(&domain.uid, members).await {
            Ok(skipped) => {
                report.members_told += 1;
                self.memory.succeeded(&domain.uid, Step::Members);
                for why in skipped {
                    report.problems.push(format!(
                        "ComputeDomain {}: gpusliced skipped a member: {why}",
                        domain.id()
                    ));
                }
            }
            Err(err) => {
                report.problems.push(err);
                self.memory.failed(&domain.uid, Step::Members, self.now);
            }
        }
    }

    async fn write_status(&mut self, domain: &DomainSeen, turn: &Turn, report: &mut Report) {
        let due = self.memory.deferred(&domain.uid, turn.defer, self.now);
        let apply = match (&turn.apply, due) {
            (Some(_), Some(at)) if self.now < at => {
                report.wake_at(at);
                None
            }
            (apply, _) => apply.as_ref(),
        };
        if let Some(apply) = apply {
            let text = format!("{apply:?}");
            if self.ready_to_write(domain, Step::Apply, &text, report) {
                let done = self.writes.apply(domain, apply).await;
                self.landed(domain, Step::Apply, text, done, report);
            }
        }
        if !turn.remove.is_empty() {
            let text = format!("{:?} {:?}", turn.remove, turn.remove_status);
            if self.ready_to_write(domain, Step::Remove, &text, report) {
                let status = turn.remove_status;
                let done = self
                    .writes
                    .remove_entries(domain, &turn.remove, status)
                    .await;
                self.landed(domain, Step::Remove, text, done, report);
            }
        }
    }

    /// Whether the status write `text` is to be made now: not made already
    /// (the cache behind), not paused after a failure.
    fn ready_to_write(
        &mut self,
        domain: &DomainSeen,
        step: Step,
        text: &str,
        report: &mut Report,
    ) -> bool {
        if (self.memory).written(&domain.uid, step, text, domain.version, self.now) {
            return false;
        }
        if let Some(until) = self.memory.paused(&domain.uid, step, self.now) {
            report.wake_at(until);
            return false;
        }
        true
    }

    fn landed(
        &mut self,
        domain: &DomainSeen,
        step: Step,
        text: String,
        done: Result<Option<u64>, super::kube_api::WriteError>,
        report: &mut Report,
    ) {
        match done {
            Ok(version) => {
                report.statuses_written += 1;
                self.memory
                    .wrote(&domain.uid, step, text, version, self.now);
                self.memory.succeeded(&domain.uid, step);
            }
            Err(err) => {
                let what = if step == Step::Apply {
                    "the node's entry not written"
                } else {
                    "gone entries not removed"
                };
                report
                    .problems
                    .push(format!("ComputeDomain {}: {what}: {err}", domain.id()));
                self.memory.failed(&domain.uid, step, self.now);
            }
        }
    }

    /// Deletes the node's Leases of domains that are gone (from the cache,
    /// and with no channel here); none while a ComputeDomain does not read
    /// (it may be one of them, and its members would take the node for
    /// gone).
    async fn stale_leases(&mut self, snapshot: &Snapshot, here: &NodeDomains, report: &mut Report) {
        if !snapshot.unreadable.is_empty() {
            return;
        }
        let known: BTreeSet<&String> = snapshot.domains.iter().map(|d| &d.uid).collect();
        let stale: Vec<String> = (snapshot.leases.iter())
            .filter(|(uid, holders)| {
                holders.contains_key(self.node)
                    && !known.contains(uid)
                    && !here.domains.contains_key(*uid)
            })
            .map(|(uid, _)| uid.clone())
            .collect();
        for uid in stale {
            if self.memory.lease_pending(&uid, false, self.now) {
                continue;
            }
            if let Err(err) = self.writes.delete_lease(&uid).await {
                report.problems.push(format!(
                    "membership Lease of gone ComputeDomain {uid}: {err}"
                ));
            } else {
                report.leases_written += 1;
                self.memory.lease_done(&uid, false, self.now);
            }
        }
    }
}
