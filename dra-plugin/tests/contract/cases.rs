//! Generated cases: a node (GPU models, which are MIG-managed with what
//! layout, faults in force on a GPU or a gone GPU instance, advertise mode, slices made ahead or at prepare, consumable
//! capacity, the API version the scheduler reads) and rounds of pods whose
//! claims the scheduler allocates, some released after each round.
//! Claims ask through every packaged class (whole GPUs, MIG slices, their
//! extended-resource classes) and the MPS sharing class, some with a
//! matchAttribute constraint on gpuslice's productName or parentUUID or on
//! Kubernetes' pcieRoot or numaNode. Also the ResourceClaim an allocation
//! becomes.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use gpuslice::config::{MigCreate, MigOffering};
use gpuslice::gpu::GpuBackend;
use gpuslice::gpu::sim::{SimBackend, SimModel};
use gpuslice_dra_plugin::slices::quantity::quantity;
use k8s_openapi::api::resource::v1::{
    AllocationResult, CELDeviceSelector, CapacityRequirements, DeviceClaim, DeviceConstraint,
    DeviceRequest, DeviceSelector, ExactDeviceRequest, ResourceClaim, ResourceClaimSpec,
    ResourceClaimStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use proptest::prelude::*;

use crate::node::{DRIVER, FaultPlan, GpuPlan, NodePlan};
use crate::scheduler::SHARED_CLASS;

/// The packaged class of whole GPUs.
pub const GPU_CLASS: &str = "gpu.nvidia.com";
/// The packaged class of MIG slices.
pub const MIG_CLASS: &str = "mig.nvidia.com";
/// The packaged extended-resource class of whole GPUs (nvidia.com/gpu).
pub const EXTENDED_GPU_CLASS: &str = "gpu.extended.gpuslice.dev";

/// The packaged extended-resource class of MIG slices of `profile`
/// (nvidia.com/mig-<profile>, `+` written `.`).
pub fn extended_mig_class(profile: &str) -> String {
    format!("mig-{}.extended.gpuslice.dev", profile.replace('+', "."))
}

/// The attributes a claim's constraint may match across its requests:
/// gpuslice's own (under the driver's name), then Kubernetes' standard
/// topology attributes.
const MATCHED: [&str; 4] = [
    "productName",
    "parentUUID",
    "resource.kubernetes.io/pcieRoot",
    "resource.kubernetes.io/numaNode",
];

fn qualified(attribute: &str) -> String {
    if attribute.contains('/') {
        attribute.to_owned()
    } else {
        format!("{DRIVER}/{attribute}")
    }
}

const GIB: i64 = 1 << 30;

/// One request as generated; resolved against the node's profiles later.
#[derive(Debug, Clone)]
pub struct GenRequest {
    class: u8,
    profile: Option<u8>,
    count: u8,
    memory_gib: Option<u8>,
}

/// One claim as generated.
#[derive(Debug, Clone)]
pub struct GenClaim {
    requests: Vec<GenRequest>,
    constraint: Option<u8>,
}

/// One round: pods (each a list of claims allocated together), then which
/// live claims are released (indices, modulo the count).
#[derive(Debug, Clone)]
pub struct Round {
    /// Pods in scheduling order.
    pub pods: Vec<Vec<GenClaim>>,
    /// Claims released after the round.
    pub release: Vec<u8>,
}

/// One GPU as generated: model, layout picks (`None`: whole), a foreign
/// instance's profile and placement picks, and a fault's.
type GenGpu = (u8, Option<Vec<u8>>, Option<(u8, u8)>, Option<GenFault>);

/// A fault as generated: the profile and placement picks of the gone GPU
/// instance it was on, or `None` for the whole GPU.
type GenFault = Option<(u8, u8)>;

/// A whole case.
#[derive(Debug, Clone)]
pub struct Case {
    gpus: Vec<GenGpu>,
    partitionable: bool,
    ahead: bool,
    /// The DRA plugin's consumable_capacity.
    pub consumable: bool,
    /// Whether the scheduler reads resource.k8s.io/v1beta1.
    pub v1beta1: bool,
    /// Whether the scheduler walks devices in a shuffled order.
    pub random_order: bool,
    /// Seed of the shuffles and share ids.
    pub seed: u64,
    /// The rounds.
    pub rounds: Vec<Round>,
}

/// Profile names of each model, in the simulator's order.
pub fn profiles(model: SimModel) -> &'static [String] {
    static ALL: OnceLock<Vec<Vec<String>>> = OnceLock::new();
    let all = ALL.get_or_init(|| {
        let sim = SimBackend::new(SimModel::ALL.to_vec(), "profiles");
        (0u32..)
            .zip(SimModel::ALL)
            .map(|(i, _)| {
                // A GPU without MIG answers NOT_SUPPORTED: no profiles.
                let profiles = sim.mig_profiles(i).unwrap_or_default();
                profiles.into_iter().map(|p| p.name).collect()
            })
            .collect()
    });
    let at = SimModel::ALL
        .iter()
        .position(|m| *m == model)
        .expect("a known model");
    &all[at]
}

fn request() -> impl Strategy<Value = GenRequest> {
    (
        0u8..5,
        proptest::option::weighted(0.5, any::<u8>()),
        prop_oneof![1 => Just(0u8), 6 => Just(1u8), 2 => Just(2u8)],
        proptest::option::of(1u8..48),
    )
        .prop_map(|(class, profile, count, memory_gib)| GenRequest {
            class,
            profile,
            count,
            memory_gib,
        })
}

fn claim() -> impl Strategy<Value = GenClaim> {
    (
        proptest::collection::vec(request(), 1..=2),
        proptest::option::weighted(0.4, 0u8..4),
    )
        .prop_map(|(requests, constraint)| GenClaim {
            requests,
            constraint,
        })
}

fn round() -> impl Strategy<Value = Round> {
    (
        // Mostly pods of one claim, which fit more often than two.
        proptest::collection::vec(
            prop_oneof![
                3 => proptest::collection::vec(claim(), 1..=1),
                1 => proptest::collection::vec(claim(), 2..=2),
            ],
            1..=4,
        ),
        proptest::collection::vec(any::<u8>(), 0..=3),
    )
        .prop_map(|(pods, release)| Round { pods, release })
}

/// The position of `model` in [`SimModel::ALL`], as a case names it.
fn model_index(model: SimModel) -> u8 {
    let at = SimModel::ALL.iter().position(|m| *m == model);
    at.and_then(|i| u8::try_from(i).ok())
        .expect("a known model")
}

fn layout_picks() -> impl Strategy<Value = Option<Vec<u8>>> {
    proptest::option::weighted(0.7, proptest::collection::vec(any::<u8>(), 1..=4))
}

/// Every case: 1-4 GPUs of any simulated model.
pub fn case() -> impl Strategy<Value = Case> {
    let models = u8::try_from(SimModel::ALL.len()).expect("few models");
    let gpu = (
        0u8..models,
        layout_picks(),
        proptest::option::weighted(0.2, any::<(u8, u8)>()),
        proptest::option::weighted(0.15, proptest::option::weighted(0.7, any::<(u8, u8)>())),
    );
    with_gpus(proptest::collection::vec(gpu, 1..=4), None)
}

/// The mixed node of the 2026 fleet: a B200 and an RTX PRO 6000 (4 slices)
/// under `[mig]` with random layouts, a GB200 and an L4 (no MIG) whole, in
/// the advertise mode `partitionable`.
pub fn fleet_case(partitionable: bool) -> impl Strategy<Value = Case> {
    let mig = |model: SimModel| {
        layout_picks().prop_map(move |picks| {
            (
                model_index(model),
                Some(picks.unwrap_or_else(|| vec![0])),
                None,
                None,
            )
        })
    };
    let whole = |model: SimModel| Just((model_index(model), None, None, None));
    let gpus = (
        mig(SimModel::B200_180GB),
        mig(SimModel::RTX_PRO_6000_96GB),
        whole(SimModel::GB200_186GB),
        whole(SimModel::L4_24GB),
    )
        .prop_map(|(a, b, c, d): (GenGpu, GenGpu, GenGpu, GenGpu)| vec![a, b, c, d]);
    with_gpus(gpus, Some(partitionable))
}

/// Cases of these GPUs, the advertise mode `partitionable` or any.
fn with_gpus(
    gpus: impl Strategy<Value = Vec<GenGpu>>,
    partitionable: Option<bool>,
) -> impl Strategy<Value = Case> {
    (
        gpus,
        any::<[bool; 5]>(),
        any::<u64>(),
        proptest::collection::vec(round(), 1..=3),
    )
        .prop_map(move |(gpus, flags, seed, rounds)| {
            let partitionable = partitionable.unwrap_or(flags[0]);
            Case {
                gpus,
                partitionable,
                ahead: flags[1] && !partitionable,
                consumable: flags[2],
                v1beta1: flags[3],
                random_order: flags[4],
                seed,
                rounds,
            }
        })
}

impl Case {
    /// Whether the node advertises partitionable MIG devices.
    pub fn partitionable(&self) -> bool {
        self.partitionable
    }

    /// The node to start.
    pub fn node(&self) -> NodePlan {
        NodePlan {
            gpus: self
                .gpus
                .iter()
                .map(|(m, layout, foreign, fault)| {
                    let model = SimModel::ALL[usize::from(*m) % SimModel::ALL.len()];
                    let names = profiles(model);
                    // A GPU without MIG has no layout, no instances, and
                    // only a fault of its own.
                    let layout = layout.as_ref().filter(|_| !names.is_empty());
                    GpuPlan {
                        model,
                        // An instance's fault only on a GPU in [mig].
                        fault: fault.map(|on| match on.filter(|_| layout.is_some()) {
                            Some((p, at)) => FaultPlan::Instance(
                                names[usize::from(p) % names.len()].clone(),
                                usize::from(at),
                            ),
                            None => FaultPlan::Whole,
                        }),
                        // Only on GPUs in [mig]: one outside it is offered
                        // whole, whatever its MIG mode.
                        foreign: foreign.filter(|_| layout.is_some()).map(|(p, at)| {
                            (names[usize::from(p) % names.len()].clone(), usize::from(at))
                        }),
                        mig: layout.map(|picks| {
                            picks
                                .iter()
                                .map(|p| names[usize::from(*p) % names.len()].clone())
                                .collect()
                        }),
                    }
                })
                .collect(),
            advertise: if self.partitionable {
                Some(MigOffering::Partitionable)
            } else {
                Some(MigOffering::Layout)
            },
            create: if self.ahead {
                MigCreate::Ahead
            } else {
                MigCreate::OnPrepare
            },
            consumable_capacity: self.consumable,
        }
    }
}

/// A canonical UUID for claim or share number `n`.
pub fn uuid(kind: u16, n: u64) -> String {
    format!("00000000-{kind:04x}-4000-8000-{n:012x}")
}

impl GenClaim {
    /// The claim, its profiles picked from `names` (the node's profiles).
    /// The extended-resource classes
    /// are asked as the scheduler asks them for a pod's `nvidia.com/gpu` or
    /// `nvidia.com/mig-<profile>` (a class of one profile, no selector of
    /// the claim's own).
    pub fn resolve(&self, uid: String, names: &[String]) -> ResourceClaim {
        let pick = |p: u8| names[usize::from(p) % names.len()].clone();
        let requests = (0u8..)
            .zip(&self.requests)
            .map(|(i, r)| {
                let class = match r.class {
                    1 => MIG_CLASS.to_owned(),
                    2 => SHARED_CLASS.to_owned(),
                    3 => EXTENDED_GPU_CLASS.to_owned(),
                    4 if !names.is_empty() => extended_mig_class(&pick(r.profile.unwrap_or(0))),
                    _ => GPU_CLASS.to_owned(),
                };
                let class = class.as_str();
                let profile = (class == MIG_CLASS)
                    .then(|| r.profile.filter(|_| !names.is_empty()).map(pick))
                    .flatten();
                let memory = (class == SHARED_CLASS)
                    .then(|| r.memory_gib.map(|g| i64::from(g) * GIB))
                    .flatten();
                DeviceRequest {
                    name: format!("r{i}"),
                    exactly: Some(ExactDeviceRequest {
                        device_class_name: class.to_owned(),
                        allocation_mode: Some(
                            if r.count > 0 { "ExactCount" } else { "All" }.to_owned(),
                        ),
                        count: (r.count > 0).then_some(i64::from(r.count)),
                        selectors: profile.map(|p| {
                            vec![DeviceSelector {
                                cel: Some(CELDeviceSelector {
                                    expression: format!(
                                        "device.attributes['{DRIVER}'].profile == '{p}'"
                                    ),
                                }),
                            }]
                        }),
                        capacity: memory.map(|m| CapacityRequirements {
                            requests: Some(BTreeMap::from([("memory".to_owned(), quantity(m))])),
                        }),
                        ..ExactDeviceRequest::default()
                    }),
                    first_available: None,
                }
            })
            .collect();
        let constraints = self.constraint.map(|c| {
            vec![DeviceConstraint {
                match_attribute: Some(qualified(MATCHED[usize::from(c) % MATCHED.len()])),
                ..DeviceConstraint::default()
            }]
        });
        ResourceClaim {
            metadata: ObjectMeta {
                name: Some(format!("claim-{}", &uid[24..])),
                namespace: Some("contract".to_owned()),
                uid: Some(uid),
                ..ObjectMeta::default()
            },
            spec: ResourceClaimSpec {
                devices: Some(DeviceClaim {
                    requests: Some(requests),
                    constraints,
                    config: None,
                }),
            },
            status: None,
        }
    }
}

/// The allocated ResourceClaim the scheduler would write: the allocation,
/// each shared result with a fresh share id.
pub fn resource_claim(
    claim: &ResourceClaim,
    allocation: &AllocationResult,
    share: &mut impl FnMut() -> String,
) -> ResourceClaim {
    let mut allocation = allocation.clone();
    for result in allocation
        .devices
        .iter_mut()
        .flat_map(|d| d.results.iter_mut().flatten())
    {
        if result.consumed_capacity.is_some() {
            result.share_id = Some(share());
        }
    }
    ResourceClaim {
        status: Some(ResourceClaimStatus {
            allocation: Some(allocation),
            ..ResourceClaimStatus::default()
        }),
        ..claim.clone()
    }
}
