//! The workloads the crash-point test runs: claims of every kind on a node
//! ([`super::claims`]), and the steps that prepare, restart, reboot, reload
//! and unprepare them. Together they pass every crash point; a point no
//! step passes fails the test, and is added here.

use super::claims::{Claim, Dev, Names, channel_claim, claim};
use crate::crash_node::{Death, Gpusliced, Node, NodeKind, kill_imex_daemons};
use crate::stand_ins::{kill_daemons_under, mps, timeslicing};

/// One step of a workload.
#[derive(Debug, Clone)]
pub enum Step {
    /// The first start of gpusliced.
    Start,
    /// Prepare the claim at this index.
    Prepare(usize),
    /// Unprepare the claim at this index.
    Unprepare(usize),
    /// SIGTERM and start again.
    Restart,
    /// SIGTERM, then what a reboot does (every MPS and IMEX daemon gone,
    /// run, CDI and device folders wiped, a new boot for the records and the
    /// simulated GPUs), and start again.
    Reboot,
    /// Rewrite the config's `[mig]` to this and send SIGHUP.
    Reload(String),
}

/// Claims on a node and the steps over them.
#[derive(Debug)]
pub struct Workload {
    pub name: &'static str,
    pub node: NodeKind,
    /// The `[mig]` config at the first start.
    pub config: String,
    /// GPUs the `[mig]` config selects.
    pub mig_gpus: Vec<usize>,
    pub claims: Vec<Claim>,
    pub steps: Vec<Step>,
}

/// `[mig]` selecting GPU `index` with a four-slice layout, slices made at
/// prepare (or ahead).
fn mig_config(index: usize, ahead: bool) -> String {
    let create = if ahead { "create = \"ahead\"\n" } else { "" };
    format!(
        "[mig]\n{create}[[mig.gpu]]\nindex = {index}\n\
         layout = [\"3g.40gb\", \"2g.20gb\", \"1g.10gb\", \"1g.10gb\"]\n"
    )
}

/// [`mig_config`] in partitionable mode: the only mode that offers a
/// MIG-managed GPU whole (beside its slices' counters), so the workloads
/// that give one to a whole-GPU claim (MIG switched off) use it.
fn mig_partitionable(index: usize) -> String {
    mig_config(index, false).replacen("[mig]\n", "[mig]\nadvertise = \"partitionable\"\n", 1)
}

/// A MigDeviceConfig for MPS.
fn mig_mps(atp: u8) -> String {
    format!(
        r#"{{"apiVersion":"resource.nvidia.com/v1beta1","kind":"MigDeviceConfig","sharing":{{"strategy":"MPS","mpsConfig":{{"defaultActiveThreadPercentage":{atp}}}}}}}"#
    )
}

fn slice(gpu: usize, nth: usize) -> Dev {
    Dev::Slice {
        gpu,
        profile: "1g.10gb",
        nth,
    }
}

/// The ComputeDomain of the channel claims.
const DOMAIN: &str = "d0000000-0000-4000-8000-0000000000d0";

fn uid(n: u32) -> &'static str {
    Box::leak(format!("c0000000-0000-4000-8000-{n:012x}").into_boxed_str())
}

/// The workloads; between them (and the recoveries from their crashes)
/// every crash point is passed. Each is small, so that a case replays
/// little before its crash; `all` also runs `combined`, every kind of claim
/// on one node.
#[allow(
    clippy::too_many_lines,
    reason = "the list of workloads, one entry per case"
)]
pub fn workloads(all: bool) -> Vec<Workload> {
    use Step::{Prepare, Reboot, Reload, Restart, Start, Unprepare};
    let mut out = vec![
        Workload {
            name: "exclusive",
            node: NodeKind::H100s(1),
            config: String::new(),
            mig_gpus: vec![],
            claims: vec![claim(uid(1), vec![Dev::Gpu(0)], vec![])],
            steps: vec![Start, Prepare(0), Restart, Reboot, Unprepare(0)],
        },
        Workload {
            name: "mig",
            node: NodeKind::H100s(1),
            config: mig_partitionable(0),
            mig_gpus: vec![0],
            claims: vec![
                claim(uid(2), vec![slice(0, 0)], vec![]),
                claim(uid(3), vec![Dev::Gpu(0)], vec![]),
            ],
            steps: vec![
                Start,
                Prepare(0),
                Reboot,
                Unprepare(0),
                Prepare(1),
                Reboot,
                Unprepare(1),
            ],
        },
        Workload {
            name: "mps",
            node: NodeKind::H100s(1),
            config: String::new(),
            mig_gpus: vec![],
            claims: vec![
                claim(uid(4), vec![Dev::Gpu(0)], vec![mps(50)]),
                claim(uid(5), vec![Dev::Gpu(0)], vec![mps(50)]),
            ],
            steps: vec![
                Start,
                Prepare(0),
                Prepare(1),
                Restart,
                Reboot,
                Unprepare(1),
                Unprepare(0),
            ],
        },
        Workload {
            name: "mig-mps",
            node: NodeKind::H100s(1),
            config: mig_config(0, false),
            mig_gpus: vec![0],
            claims: vec![claim(uid(6), vec![slice(0, 0)], vec![mig_mps(50)])],
            steps: vec![Start, Prepare(0), Reboot, Unprepare(0)],
        },
        Workload {
            name: "timeslice",
            node: NodeKind::H100s(1),
            config: String::new(),
            mig_gpus: vec![],
            claims: vec![claim(uid(7), vec![Dev::Gpu(0)], vec![timeslicing("Long")])],
            steps: vec![Start, Prepare(0), Reboot, Unprepare(0)],
        },
        Workload {
            name: "ahead",
            node: NodeKind::H100s(1),
            config: mig_config(0, true),
            mig_gpus: vec![0],
            claims: vec![claim(uid(8), vec![slice(0, 0)], vec![])],
            steps: vec![
                Start,
                Prepare(0),
                Unprepare(0),
                Reload(mig_config(0, false)),
            ],
        },
        // Two channel claims of one ComputeDomain: the first starts the
        // domain's IMEX daemon, a restart finds it again, a reboot (which
        // kills it) starts it anew, the last unprepare stops it.
        Workload {
            name: "channels",
            node: NodeKind::Gb200,
            config: String::new(),
            mig_gpus: vec![],
            claims: vec![
                channel_claim(uid(20), 0, DOMAIN),
                channel_claim(uid(21), 1, DOMAIN),
            ],
            steps: vec![
                Start,
                Prepare(0),
                Prepare(1),
                Restart,
                Reboot,
                Unprepare(0),
                Unprepare(1),
            ],
        },
    ];
    if all {
        out.push(Workload {
            name: "combined",
            node: NodeKind::H100s(4),
            config: mig_partitionable(1),
            mig_gpus: vec![1],
            claims: vec![
                claim(uid(10), vec![Dev::Gpu(0)], vec![]),
                claim(uid(11), vec![slice(1, 0)], vec![]),
                claim(uid(12), vec![slice(1, 1)], vec![mig_mps(50)]),
                claim(uid(13), vec![Dev::Gpu(2)], vec![mps(50)]),
                claim(uid(14), vec![Dev::Gpu(2)], vec![mps(50)]),
                claim(uid(15), vec![Dev::Gpu(3)], vec![timeslicing("Long")]),
                claim(uid(16), vec![Dev::Gpu(1)], vec![]),
            ],
            steps: vec![
                Start,
                Prepare(0),
                Prepare(1),
                Prepare(2),
                Prepare(3),
                Prepare(4),
                Prepare(5),
                Restart,
                Reboot,
                Unprepare(4),
                Unprepare(3),
                Unprepare(5),
                Unprepare(2),
                Unprepare(1),
                Prepare(6),
                Unprepare(6),
                Unprepare(0),
            ],
        });
    }
    out
}

impl Step {
    /// The step in words, for reports.
    pub fn describe(&self, w: &Workload) -> String {
        match self {
            Self::Prepare(c) => format!("prepare {}", w.claims[*c].uid),
            Self::Unprepare(c) => format!("unprepare {}", w.claims[*c].uid),
            Self::Reload(_) => "reload with another [mig]".to_owned(),
            other => format!("{other:?}").to_lowercase(),
        }
    }

    /// Runs the step with `env` for any daemon it starts. `Ok(Some(ids))`
    /// for a prepare (its CDI ids), `Err` when the daemon died.
    pub async fn run(
        &self,
        w: &Workload,
        node: &Node,
        daemon: &mut Option<Gpusliced>,
        env: &[(String, String)],
        names: &mut Names,
    ) -> Result<Option<Vec<String>>, Death> {
        match self {
            Self::Start => {
                let started = node.start(env)?;
                if names.uuids.is_empty() {
                    names.resolve(&started).await;
                }
                *daemon = Some(started);
                Ok(None)
            }
            Self::Prepare(c) => {
                let running = daemon.take().expect("running");
                match w.claims[*c].prepare(&running, names).await {
                    Ok(reply) => {
                        *daemon = Some(running);
                        Ok(Some(super::run::cdi_ids(&reply)))
                    }
                    Err(status) => Err(running.died(node, &status.to_string())),
                }
            }
            Self::Unprepare(c) => {
                let running = daemon.take().expect("running");
                match w.claims[*c].unprepare(&running).await {
                    Ok(()) => {
                        *daemon = Some(running);
                        Ok(None)
                    }
                    Err(status) => Err(running.died(node, &status.to_string())),
                }
            }
            Self::Restart => {
                daemon.take().expect("running").stop(node);
                *daemon = Some(node.start(env)?);
                Ok(None)
            }
            Self::Reboot => {
                daemon.take().expect("running").stop(node);
                reboot(node);
                *daemon = Some(node.start(env)?);
                Ok(None)
            }
            Self::Reload(config) => {
                let running = daemon.take().expect("running");
                node.configure(config);
                if running.reload() {
                    *daemon = Some(running);
                    Ok(None)
                } else {
                    Err(running.died(node, "SIGHUP"))
                }
            }
        }
    }
}

/// What a reboot does to the node while gpusliced is down.
fn reboot(node: &Node) {
    kill_daemons_under(&node.mps_dir());
    kill_imex_daemons(&node.imex_dir());
    for wiped in ["run", "cdi", "dev"] {
        let _ = std::fs::remove_dir_all(node.path().join(wiped));
    }
    let claims = node.path().join("state/claims");
    for name in crate::harness::list(&claims) {
        edit_json(&claims, &name, |r| r["boot_id"] = "an-earlier-boot".into());
    }
    edit_json(node.path(), "sim-hardware.json", |h| {
        h["boot_id"] = "an-earlier-boot".into();
    });
}

fn edit_json(dir: &std::path::Path, name: &str, edit: impl FnOnce(&mut serde_json::Value)) {
    let path = dir.join(name);
    let mut value: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("JSON");
    edit(&mut value);
    let bytes = serde_json::to_vec(&value).expect("encode");
    gpuslice_cdi::write_atomic(dir, name, &bytes, 0o644).expect("write");
}

impl Workload {
    /// Unprepares every claim; panics on a failure.
    pub async fn unprepare_all(&self, daemon: &Gpusliced) {
        let problems = self.unprepare_all_checked(daemon).await;
        assert!(problems.is_empty(), "{problems:#?}");
    }

    /// Unprepares every claim; returns the failures.
    pub async fn unprepare_all_checked(&self, daemon: &Gpusliced) -> Vec<String> {
        let mut problems = Vec::new();
        for claim in &self.claims {
            if let Err(status) = claim.unprepare(daemon).await {
                problems.push(format!("unprepare of {} failed: {status}", claim.uid));
            }
        }
        problems
    }
}
