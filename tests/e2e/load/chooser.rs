//! One client's seeded generator of operations. Pure: the generator, what
//! the client holds and what it last saw of the node go in, one operation
//! comes out.
//!
//! A client believes the node is as the last snapshot showed it (devices
//! free or shared, each GPU's sharing mode), so most requests have a chance;
//! the snapshot is stale by design and the daemon is the arbiter. Each
//! shareable GPU has a usual MPS thread percentage and time-slice interval
//! that most claims ask for (so they can share), and some claims ask for
//! another (which must be refused while the GPU is shared the usual way).

use std::sync::Arc;

use fastrand::Rng;
use tonic::Code;

use super::node::{Catalogue, Device, Gpu};
use super::workload::{
    Beliefs, Expect, Held, INTERVALS, Op, OpKind, Plan, Sharing, usual_atp, usual_interval,
};

/// One client's generator of uids and operations.
#[derive(Debug)]
pub struct Chooser {
    pub rng: Rng,
    client: u32,
    made: u32,
}

impl Chooser {
    pub fn new(seed: u64, client: u32) -> Self {
        Self {
            rng: Rng::with_seed(seed ^ (u64::from(client) << 32 | u64::from(client))),
            client,
            made: 0,
        }
    }

    /// A fresh claim uid, unique to this client and this run.
    pub fn uid(&mut self) -> String {
        self.made += 1;
        format!(
            "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
            self.client,
            self.made,
            self.rng.u16(..0x1000),
            self.rng.u16(..0x1000),
            self.rng.u64(..1 << 48)
        )
    }

    /// The next operation for a client holding `held`.
    pub fn choose(&mut self, node: &Catalogue, seen: &Beliefs, held: &[Held]) -> Op {
        let n = held.len();
        let weights: [(u32, u8); 11] = [
            (10, 0),                        // exclusive
            (14, 1),                        // MIG
            (14, 2),                        // MPS
            (10, 3),                        // time-slicing
            (if n > 0 { 8 } else { 0 }, 4), // re-prepare
            (
                match n {
                    0 => 0,
                    1 => 18,
                    2 => 40,
                    _ => 120,
                },
                5,
            ), // unprepare
            (4, 6),                         // unprepare unknown
            (6, 7),                         // conflict
            (2, 8),                         // invalid
            (3, 9),                         // retry race
            (if n > 0 { 3 } else { 0 }, 10), // unprepare race
        ];
        let total: u32 = weights.iter().map(|w| w.0).sum();
        let mut pick = self.rng.u32(..total);
        let mut what = 0;
        for (w, which) in weights {
            if pick < w {
                what = which;
                break;
            }
            pick -= w;
        }
        match what {
            0 => self.exclusive(node, seen),
            1 => self.mig(node, seen),
            2 => self.mps(node, seen),
            3 => self.timeslicing(node, seen),
            4 => Op::Reprepare(self.rng.usize(..n)),
            5 => Op::Unprepare(self.rng.usize(..n)),
            6 => Op::UnprepareUnknown(self.uid()),
            7 => self.conflict(node, held),
            8 => self.invalid(node),
            9 => {
                let new = match self.rng.u8(..4) {
                    0 => self.exclusive(node, seen),
                    1 => self.mig(node, seen),
                    2 => self.mps(node, seen),
                    _ => self.timeslicing(node, seen),
                };
                match new {
                    Op::Prepare(plan, _) => Op::PrepareTwice(plan),
                    other => other,
                }
            }
            _ => Op::UnprepareRace(self.rng.usize(..n)),
        }
    }

    fn plan(&mut self, devices: Vec<String>, sharing: Sharing, expect: Expect) -> Arc<Plan> {
        Arc::new(Plan {
            uid: self.uid(),
            devices,
            sharing,
            on_slices: false,
            expect,
        })
    }

    /// A device from those that look usable, else any.
    fn pick<'a>(&mut self, usable: &[&'a str], any: &[&'a str]) -> String {
        let from = if usable.is_empty() { any } else { usable };
        from[self.rng.usize(..from.len())].to_owned()
    }

    /// Whole GPUs a client mostly asks for alone (`alone`) or to share:
    /// the first two shareable GPUs lean to exclusive claims, the others to
    /// sharing ones; some requests go anywhere and meet the other kind (one
    /// in seven exclusive ones; one in twenty sharing ones, since a sharing
    /// claim that lands on an exclusive GPU draws others after it).
    fn leaning<'a>(&mut self, node: &'a Catalogue, alone: bool) -> Vec<&'a Gpu> {
        let all = node.shareable();
        if self.rng.u8(..if alone { 7 } else { 20 }) == 0 {
            return all;
        }
        let split = 2.min(all.len());
        let (first, rest) = all.split_at(split);
        if alone || rest.is_empty() {
            first.to_vec()
        } else {
            rest.to_vec()
        }
    }

    fn exclusive(&mut self, node: &Catalogue, seen: &Beliefs) -> Op {
        // One in six takes a MIG-managed GPU whole (MIG is switched off).
        let pool: Vec<&Gpu> = if self.rng.u8(..6) == 0 {
            node.gpus.iter().filter(|g| g.mig_managed).collect()
        } else {
            self.leaning(node, true)
        };
        let any: Vec<&str> = pool.iter().map(|g| g.name.as_str()).collect();
        let free: Vec<&str> = any
            .iter()
            .copied()
            .filter(|n| seen.free.contains(*n))
            .collect();
        let device = self.pick(&free, &any);
        let plan = self.plan(vec![device], Sharing::Alone, Expect::MayPrepare);
        Op::Prepare(plan, OpKind::PrepareExclusive)
    }

    /// Free-looking slices, else all of them.
    fn slice(&mut self, node: &Catalogue, seen: &Beliefs) -> String {
        let any: Vec<&str> = node.slices.iter().map(|s| s.name.as_str()).collect();
        let free: Vec<&str> = any
            .iter()
            .copied()
            .filter(|n| seen.free.contains(*n))
            .collect();
        self.pick(&free, &any)
    }

    fn mig(&mut self, node: &Catalogue, seen: &Beliefs) -> Op {
        let first = self.slice(node, seen);
        let mut devices = vec![first.clone()];
        // One in five asks for a second slice of the same parent.
        if self.rng.u8(..5) == 0 {
            let parent = node.gpu_of(&first);
            let siblings: Vec<&str> = node
                .slices
                .iter()
                .filter(|s| Some(s.parent) == parent && s.name != first)
                .map(|s| s.name.as_str())
                .collect();
            if !siblings.is_empty() {
                devices.push(self.pick(&[], &siblings));
            }
        }
        let plan = self.plan(devices, Sharing::Alone, Expect::MayPrepare);
        Op::Prepare(plan, OpKind::PrepareMig)
    }

    /// A shareable GPU that looks free or shared in `mode`.
    fn shared_gpu<'a>(&mut self, node: &'a Catalogue, seen: &Beliefs, mode: &str) -> &'a Gpu {
        let all = self.leaning(node, false);
        let fits: Vec<&Gpu> = all
            .iter()
            .copied()
            .filter(|g| {
                !seen.held_whole.contains(&g.name)
                    && seen
                        .mode
                        .get(&g.name)
                        .is_none_or(|m| m == "none" || m == mode)
            })
            .collect();
        let from = if fits.is_empty() { &all } else { &fits };
        from[self.rng.usize(..from.len())]
    }

    fn mps(&mut self, node: &Catalogue, seen: &Beliefs) -> Op {
        let roll = self.rng.u8(..100);
        if roll < 12 {
            // MPS on a claim's own MIG slice: a daemon per slice.
            let device = self.slice(node, seen);
            let plan = Plan {
                uid: self.uid(),
                devices: vec![device],
                sharing: Sharing::Mps {
                    atp: 50,
                    memory_gib: None,
                },
                on_slices: true,
                expect: Expect::MayPrepare,
            };
            return Op::Prepare(Arc::new(plan), OpKind::PrepareMps);
        }
        let gpu = self.shared_gpu(node, seen, "mps");
        let mut devices = vec![gpu.name.clone()];
        let mut atp = usual_atp(gpu);
        if roll < 18 {
            // One daemon over two GPUs: overlaps any one-GPU daemon there.
            let pair = node.shareable();
            let other = pair
                [(pair.iter().position(|g| g.index == gpu.index).unwrap_or(0) + 1) % pair.len()];
            devices.push(other.name.clone());
        } else if roll < 26 {
            atp = usual_atp(gpu) + 5; // conflicts with the usual daemon
        }
        let memory_gib = (self.rng.u8(..3) == 0).then(|| 8 * (1 + self.rng.u64(..4)));
        let expect = if memory_gib.is_some() {
            Expect::MayExhaust
        } else {
            Expect::MayPrepare
        };
        let plan = self.plan(devices, Sharing::Mps { atp, memory_gib }, expect);
        Op::Prepare(plan, OpKind::PrepareMps)
    }

    fn timeslicing(&mut self, node: &Catalogue, seen: &Beliefs) -> Op {
        let gpu = self.shared_gpu(node, seen, "timeslicing");
        let interval = if self.rng.u8(..10) == 0 {
            INTERVALS[self.rng.usize(..INTERVALS.len())]
        } else {
            usual_interval(gpu)
        };
        let plan = self.plan(
            vec![gpu.name.clone()],
            Sharing::TimeSlicing(interval),
            Expect::MayPrepare,
        );
        Op::Prepare(plan, OpKind::PrepareTimeSlicing)
    }

    /// A request that must be FAILED_PRECONDITION, from what this client
    /// holds (so the answer is certain whatever the others do).
    fn conflict(&mut self, node: &Catalogue, held: &[Held]) -> Op {
        let refused = Expect::Refused(Code::FailedPrecondition);
        if held.is_empty() || self.rng.u8(..5) == 0 {
            // Sharing asked for a MIG-managed GPU taken whole: never allowed.
            let mig: Vec<&str> = node
                .gpus
                .iter()
                .filter(|g| g.mig_managed)
                .map(|g| g.name.as_str())
                .collect();
            let device = self.pick(&[], &mig);
            let plan = self.plan(vec![device], Sharing::TimeSlicing("Long"), refused);
            return Op::Prepare(plan, OpKind::Conflict);
        }
        let i = self.rng.usize(..held.len());
        let own = &held[i].plan;
        let first = own.devices[0].clone();
        if self.rng.bool() {
            // The same uid with another device of the same type (so the
            // configs still fit it: only the devices differ).
            let same_type: Vec<&str> = match node.device(&first) {
                Some(Device::Slice(_)) => node.slices.iter().map(|s| s.name.as_str()).collect(),
                _ => node.gpus.iter().map(|g| g.name.as_str()).collect(),
            };
            let others: Vec<&str> = same_type
                .into_iter()
                .filter(|n| !own.devices.iter().any(|d| d == n))
                .collect();
            let other = self.pick(&[], &others);
            let mut plan = (**own).clone();
            plan.devices = vec![other];
            plan.expect = refused;
            return Op::Reshape(i, Arc::new(plan));
        }
        let sharing = match &own.sharing {
            // Held alone or as a slice: anything on it is refused.
            Sharing::Alone => Sharing::Alone,
            Sharing::Mps { .. } if own.on_slices => Sharing::Alone,
            Sharing::Mps { .. } => Sharing::TimeSlicing(INTERVALS[1]),
            Sharing::TimeSlicing(_) => Sharing::Mps {
                atp: 50,
                memory_gib: None,
            },
        };
        let plan = self.plan(vec![first], sharing, refused);
        Op::Prepare(plan, OpKind::Conflict)
    }

    fn invalid(&mut self, node: &Catalogue) -> Op {
        let refused = Expect::Refused(Code::InvalidArgument);
        let plan = if self.rng.bool() {
            self.plan(vec!["gpu-99".to_owned()], Sharing::Alone, refused)
        } else {
            let gpu = node.shareable()[0].name.clone();
            let sharing = Sharing::Mps {
                atp: 101,
                memory_gib: None,
            };
            self.plan(vec![gpu], sharing, refused)
        };
        Op::Prepare(plan, OpKind::Invalid)
    }
}
