//! One load client: its own connection to gpusliced, its own claims, a
//! seeded generator. Each operation is timed from the call to the answer
//! and judged: an answer the operation may not get is a violation, named
//! with the operation and the daemon's message.

use std::sync::Arc;
use std::time::{Duration, Instant};

use gpuslice_proto::gpuslice::v1 as pb;
use gpuslice_proto::gpuslice::v1::gpu_slice_client::GpuSliceClient;
use tonic::Code;
use tonic::transport::Channel;

use super::ledger::{Ledger, Life};
use super::workload::{Expect, Held, Op, OpKind, Plan};
use crate::harness::unprepare_request;

/// What an operation got.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    Prepared,
    AlreadyPrepared,
    Unprepared,
    NotPrepared,
    Refused(Code),
}

impl Outcome {
    pub fn words(self) -> String {
        match self {
            Self::Prepared => "prepared".to_owned(),
            Self::AlreadyPrepared => "already prepared".to_owned(),
            Self::Unprepared => "unprepared".to_owned(),
            Self::NotPrepared => "not prepared".to_owned(),
            Self::Refused(code) => format!("{code:?}"),
        }
    }

    /// Whether the daemon did what was asked (a refusal may be right too).
    pub fn succeeded(self) -> bool {
        !matches!(self, Self::Refused(_))
    }
}

/// One timed operation.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    pub kind: OpKind,
    pub outcome: Outcome,
    pub latency: Duration,
}

/// A client: a connection, its claims, the ledger it reports to.
pub struct Client<'a> {
    pub api: GpuSliceClient<Channel>,
    pub held: Vec<Held>,
    pub ledger: &'a Ledger,
    /// Violations found by this client.
    pub violations: Vec<String>,
}

fn describe(plan: &Plan) -> String {
    format!(
        "claim {} on {} ({:?}{})",
        plan.uid,
        plan.devices.join("+"),
        plan.sharing,
        if plan.on_slices { ", MIG config" } else { "" }
    )
}

impl Client<'_> {
    /// Runs `op`; returns its sample.
    pub async fn run(&mut self, op: Op) -> Sample {
        match op {
            Op::Prepare(plan, kind) => self.prepare(plan, kind).await,
            Op::Reprepare(i) => self.reprepare(i).await,
            Op::Reshape(i, plan) => self.reshape(i, &plan).await,
            Op::Unprepare(i) => self.unprepare(i, OpKind::Unprepare).await,
            Op::PrepareTwice(plan) => self.prepare_twice(plan).await,
            Op::UnprepareRace(i) => self.unprepare_race(i).await,
            Op::UnprepareUnknown(uid) => {
                let start = Instant::now();
                let answer = self.api.unprepare(unprepare_request(&uid)).await;
                let latency = start.elapsed();
                let outcome = match answer {
                    Ok(r) if !r.get_ref().was_prepared => Outcome::NotPrepared,
                    Ok(_) => {
                        self.violations
                            .push(format!("unprepare of unknown claim {uid}: was_prepared"));
                        Outcome::Unprepared
                    }
                    Err(status) => {
                        self.violations
                            .push(format!("unprepare of unknown claim {uid}: {status}"));
                        Outcome::Refused(status.code())
                    }
                };
                sample(OpKind::UnprepareUnknown, outcome, latency)
            }
        }
    }

    async fn prepare(&mut self, plan: Arc<Plan>, kind: OpKind) -> Sample {
        self.ledger.preparing(&plan);
        let start = Instant::now();
        let answer = self.api.prepare(plan.request()).await;
        let latency = start.elapsed();
        let outcome = match answer {
            Ok(reply) => {
                let reply = reply.into_inner();
                let ids = ids_of(&reply.devices);
                if reply.already_prepared || ids != plan.cdi_ids() {
                    self.violations.push(format!(
                        "{}: new claim answered already_prepared={} with CDI ids {ids:?}",
                        describe(&plan),
                        reply.already_prepared
                    ));
                }
                if let Expect::Refused(code) = plan.expect {
                    self.violations.push(format!(
                        "{} ({}): prepared, but it must be refused with {code:?}",
                        describe(&plan),
                        kind.name()
                    ));
                }
                self.ledger
                    .set(&plan.uid, Life::Prepared, Some(ids.clone()));
                self.held.push(Held { plan, ids });
                Outcome::Prepared
            }
            Err(status) => {
                let code = status.code();
                let allowed = match plan.expect {
                    Expect::MayPrepare => code == Code::FailedPrecondition,
                    Expect::MayExhaust => {
                        matches!(code, Code::FailedPrecondition | Code::ResourceExhausted)
                    }
                    Expect::Refused(wanted) => code == wanted,
                };
                if !allowed {
                    self.violations.push(format!(
                        "{} ({}): unexpected {code:?}: {}",
                        describe(&plan),
                        kind.name(),
                        status.message()
                    ));
                }
                self.ledger.set(&plan.uid, Life::Gone, None);
                Outcome::Refused(code)
            }
        };
        sample(kind, outcome, latency)
    }

    /// A new claim prepared by two calls at once: at most one creates it,
    /// and a call that finds it prepared comes after that one.
    async fn prepare_twice(&mut self, plan: Arc<Plan>) -> Sample {
        self.ledger.preparing(&plan);
        let (mut a, mut b) = (self.api.clone(), self.api.clone());
        let start = Instant::now();
        let (first, second) = tokio::join!(a.prepare(plan.request()), b.prepare(plan.request()));
        let latency = start.elapsed();
        let mut created = 0;
        let mut already = 0;
        let mut refused = None;
        for answer in [first, second] {
            match answer {
                Ok(reply) => {
                    let reply = reply.into_inner();
                    if ids_of(&reply.devices) != plan.cdi_ids() {
                        self.violations.push(format!(
                            "{} prepared twice at once: CDI ids {:?}",
                            describe(&plan),
                            ids_of(&reply.devices)
                        ));
                    }
                    if reply.already_prepared {
                        already += 1;
                    } else {
                        created += 1;
                    }
                }
                Err(status) => {
                    let allowed = match plan.expect {
                        Expect::MayPrepare => status.code() == Code::FailedPrecondition,
                        Expect::MayExhaust => matches!(
                            status.code(),
                            Code::FailedPrecondition | Code::ResourceExhausted
                        ),
                        Expect::Refused(code) => status.code() == code,
                    };
                    if !allowed {
                        self.violations.push(format!(
                            "{} prepared twice at once: unexpected {status}",
                            describe(&plan)
                        ));
                    }
                    refused = Some(status.code());
                }
            }
        }
        if created > 1 || already > created {
            self.violations.push(format!(
                "{} prepared twice at once: {created} calls created it, {already} found it prepared",
                describe(&plan)
            ));
        }
        let outcome = if created + already > 0 {
            let ids = plan.cdi_ids();
            self.ledger
                .set(&plan.uid, Life::Prepared, Some(ids.clone()));
            self.held.push(Held { plan, ids });
            Outcome::Prepared
        } else {
            self.ledger.set(&plan.uid, Life::Gone, None);
            Outcome::Refused(refused.unwrap_or(Code::Unknown))
        };
        sample(OpKind::RetryRace, outcome, latency)
    }

    /// A held claim unprepared while it is prepared again: the unprepare
    /// always finds it; the prepare either comes first (finds it prepared,
    /// the claim ends gone) or second (prepares it anew, with the same CDI
    /// ids, or is refused if another claim took a device in between).
    async fn unprepare_race(&mut self, i: usize) -> Sample {
        let held = self.held.swap_remove(i);
        let uid = held.plan.uid.as_str();
        self.ledger.set(uid, Life::Unpreparing, None);
        let (mut a, mut b) = (self.api.clone(), self.api.clone());
        let start = Instant::now();
        let (gone, again) = tokio::join!(
            a.unprepare(unprepare_request(uid)),
            b.prepare(held.plan.request())
        );
        let latency = start.elapsed();
        let what = describe(&held.plan);
        match gone {
            Ok(r) if r.get_ref().was_prepared => {}
            other => self
                .violations
                .push(format!("unprepare of {what} racing a prepare: {other:?}")),
        }
        let outcome = match again {
            Ok(reply) if reply.get_ref().already_prepared => {
                self.ledger.set(uid, Life::Gone, None);
                Outcome::Unprepared
            }
            Ok(reply) => {
                let ids = ids_of(&reply.get_ref().devices);
                if ids != held.ids {
                    self.violations.push(format!(
                        "{what} prepared again after its unprepare: CDI ids {ids:?}, first {:?}",
                        held.ids
                    ));
                }
                self.ledger.set(uid, Life::Prepared, Some(ids.clone()));
                self.held.push(Held { ids, ..held });
                Outcome::Prepared
            }
            Err(status) => {
                let fine = matches!(
                    (held.plan.expect, status.code()),
                    (_, Code::FailedPrecondition) | (Expect::MayExhaust, Code::ResourceExhausted)
                );
                if !fine {
                    self.violations
                        .push(format!("{what} prepared racing its unprepare: {status}"));
                }
                self.ledger.set(uid, Life::Gone, None);
                Outcome::Refused(status.code())
            }
        };
        sample(OpKind::UnprepareRace, outcome, latency)
    }

    async fn reprepare(&mut self, i: usize) -> Sample {
        let held = self.held[i].clone();
        let start = Instant::now();
        let answer = self.api.prepare(held.plan.request()).await;
        let latency = start.elapsed();
        let outcome = match answer {
            Ok(reply) => {
                let reply = reply.into_inner();
                let ids = ids_of(&reply.devices);
                if !reply.already_prepared || ids != held.ids {
                    self.violations.push(format!(
                        "re-prepare of {}: already_prepared={}, CDI ids {ids:?}, first {:?}",
                        describe(&held.plan),
                        reply.already_prepared,
                        held.ids
                    ));
                }
                Outcome::AlreadyPrepared
            }
            Err(status) => {
                self.violations
                    .push(format!("re-prepare of {}: {status}", describe(&held.plan)));
                Outcome::Refused(status.code())
            }
        };
        sample(OpKind::Reprepare, outcome, latency)
    }

    async fn reshape(&mut self, i: usize, plan: &Plan) -> Sample {
        let held = &self.held[i];
        let start = Instant::now();
        let answer = self.api.prepare(plan.request()).await;
        let latency = start.elapsed();
        let outcome = match answer {
            Err(status) if status.code() == Code::FailedPrecondition => {
                Outcome::Refused(status.code())
            }
            other => {
                self.violations.push(format!(
                    "prepare of {} with other devices ({}): {other:?}, must be FailedPrecondition",
                    describe(&held.plan),
                    plan.devices.join("+")
                ));
                other.map_or_else(|s| Outcome::Refused(s.code()), |_| Outcome::Prepared)
            }
        };
        sample(OpKind::Conflict, outcome, latency)
    }

    /// Unprepares the held claim at `i` (counted as `kind`).
    pub async fn unprepare(&mut self, i: usize, kind: OpKind) -> Sample {
        let held = self.held.swap_remove(i);
        let uid = held.plan.uid.as_str();
        self.ledger.set(uid, Life::Unpreparing, None);
        let start = Instant::now();
        let answer = self.api.unprepare(unprepare_request(uid)).await;
        let latency = start.elapsed();
        let outcome = match answer {
            Ok(r) if r.get_ref().was_prepared => {
                self.ledger.set(uid, Life::Gone, None);
                Outcome::Unprepared
            }
            Ok(_) => {
                self.violations.push(format!(
                    "unprepare of {}: the daemon did not know it",
                    describe(&held.plan)
                ));
                self.ledger.set(uid, Life::Gone, None);
                Outcome::NotPrepared
            }
            Err(status) => {
                // The claim stays unpreparing: the end state shows what is left.
                self.violations
                    .push(format!("unprepare of {}: {status}", describe(&held.plan)));
                Outcome::Refused(status.code())
            }
        };
        sample(kind, outcome, latency)
    }
}

fn sample(kind: OpKind, outcome: Outcome, latency: Duration) -> Sample {
    Sample {
        kind,
        outcome,
        latency,
    }
}

fn ids_of(devices: &[pb::PreparedDevice]) -> Vec<String> {
    devices
        .iter()
        .flat_map(|d| d.cdi_device_ids.iter().cloned())
        .collect()
}
