//! Every metric family gpusliced exports: names, HELP texts, label sets and
//! histogram buckets, registered in one registry. Names follow the
//! Prometheus conventions: the `gpuslice_` prefix, base units (seconds),
//! `_total` on counters (appended by the encoder: the family is registered
//! as `gpuslice_errors`), `_info` on the build-info gauge.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use std::sync::atomic::AtomicU64;

use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use super::advice::AdviceFamilies;

/// Upper bounds of the latency buckets, in seconds: from a prepare bound by
/// two fsyncs (about 1 ms on a local SSD) through MIG instance creation
/// (tens to hundreds of ms) to an MPS daemon start or a MIG mode switch
/// (seconds; `[mps] ready_timeout_s` defaults to 30).
pub const LATENCY_BUCKETS: [f64; 16] = [
    0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// `{kind}` of `gpuslice_claims`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct KindLabels {
    /// exclusive, mig, mps, timeslicing.
    pub kind: &'static str,
}

/// `{gpu, profile, state}` of `gpuslice_mig_slices`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct SliceLabels {
    /// The parent GPU's inventory name.
    pub gpu: String,
    /// The MIG profile.
    pub profile: String,
    /// held, free, made_ahead, foreign.
    pub state: &'static str,
}

/// `{state}` of `gpuslice_mps_daemons`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct StateLabels {
    /// running, restarting, failed, stopped.
    pub state: &'static str,
}

/// `{version, backend}` of `gpuslice_build_info`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct BuildLabels {
    /// The package version.
    pub version: &'static str,
    /// nvml or sim.
    pub backend: &'static str,
}

/// `{outcome}` of the latency histograms.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct OutcomeLabels {
    /// What the call did (see [`super::Outcome`]), or "error".
    pub outcome: &'static str,
}

/// `{rpc, code}` of `gpuslice_errors_total`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct ErrorLabels {
    /// The RPC's method name, e.g. "Prepare".
    pub rpc: &'static str,
    /// The gRPC status code's canonical name, e.g. "FAILED_PRECONDITION".
    pub code: &'static str,
}

pub use crate::config::DEFAULT_DRIVER_NAME;

/// Whose ResourceSlice pool the node's devices are published in: the values
/// of the `dra_pool_name` and `dra_driver_name` labels (`[metrics]`
/// `pool_name` and `driver_name`, as the DRA plugin publishes them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DraNames {
    /// The pool's name: the Node's name.
    pub pool: String,
    /// The DRA driver name.
    pub driver: String,
}

impl Default for DraNames {
    fn default() -> Self {
        Self {
            pool: String::new(),
            driver: DEFAULT_DRIVER_NAME.to_owned(),
        }
    }
}

/// The labels dcgm-exporter gives a DRA-allocated device (its #664), so a
/// query joins gpuslice's series with dcgm-exporter's and, through
/// `dra_claim_namespace`/`dra_claim_name`, with kube-state-metrics'
/// `kube_pod_resourceclaim_info`. Flattened into the per-claim label sets,
/// after the older names they repeat.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct DraClaimLabels {
    /// The claim's namespace (as `namespace`).
    pub dra_claim_namespace: String,
    /// The claim's name (as `name`).
    pub dra_claim_name: String,
    /// The device.
    #[prometheus(flatten)]
    pub device: DraDeviceLabels,
}

impl DraClaimLabels {
    /// The labels of `device` of the claim `namespace`/`name` in `dra`'s pool.
    pub fn new(dra: &DraNames, namespace: &str, name: &str, device: &str) -> Self {
        Self {
            dra_claim_namespace: namespace.to_owned(),
            dra_claim_name: name.to_owned(),
            device: DraDeviceLabels::new(dra, device),
        }
    }
}

/// The DRA labels of a device: its name, pool and driver. Flattened after
/// the claim's ([`DraClaimLabels`]) or after the device's older name
/// ([`UnhealthyLabels`], [`GpuLabels`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct DraDeviceLabels {
    /// The device's name in the pool (as `device` or `gpu`).
    pub dra_device_name: String,
    /// The pool's name: the Node's name.
    pub dra_pool_name: String,
    /// The DRA driver name.
    pub dra_driver_name: String,
}

impl DraDeviceLabels {
    /// The labels of `device` in `dra`'s pool.
    pub fn new(dra: &DraNames, device: &str) -> Self {
        Self {
            dra_device_name: device.to_owned(),
            dra_pool_name: dra.pool.clone(),
            dra_driver_name: dra.driver.clone(),
        }
    }
}

/// `{namespace, name, uid, device, sharing}` of the per-claim activity
/// gauges, and the same values under dcgm-exporter's DRA label names
/// ([`DraClaimLabels`]; the older names stay for one release): one series
/// per (claim, device), bounded by `max_claim_series`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct ClaimDeviceLabels {
    /// The claim's namespace.
    pub namespace: String,
    /// The claim's name.
    pub name: String,
    /// The claim uid.
    pub uid: String,
    /// The device's inventory name.
    pub device: String,
    /// exclusive, mig, mps, timeslicing.
    pub sharing: &'static str,
    /// The same claim and device under the DRA label names.
    #[prometheus(flatten)]
    pub dra: DraClaimLabels,
}

/// `{device, cause}` and the DRA labels of `gpuslice_device_unhealthy`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct UnhealthyLabels {
    /// The device's inventory name.
    pub device: String,
    /// xid, ecc, gpu_lost.
    pub cause: &'static str,
    /// The device under the DRA label names.
    #[prometheus(flatten)]
    pub dra: DraDeviceLabels,
}

/// `{gpu, dra_device_name, dra_pool_name, dra_driver_name}` of the
/// unclaimed-process gauges.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct GpuLabels {
    /// The GPU's inventory name.
    pub gpu: String,
    /// The GPU under the DRA label names.
    #[prometheus(flatten)]
    pub dra: DraDeviceLabels,
}

impl GpuLabels {
    /// The labels of `gpu` in `dra`'s pool.
    pub fn new(dra: &DraNames, gpu: &str) -> Self {
        Self {
            gpu: gpu.to_owned(),
            dra: DraDeviceLabels::new(dra, gpu),
        }
    }
}

/// `{kind, sharing}` of `gpuslice_activity_episodes_total`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct EpisodeLabels {
    /// overshare, unclaimed.
    pub kind: &'static str,
    /// mps, timeslicing (overshare); none (unclaimed).
    pub sharing: &'static str,
}

/// `{kind, mode, outcome}` of `gpuslice_limit_actions_total`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct LimitActionLabels {
    /// overshare, unclaimed.
    pub kind: &'static str,
    /// dry-run, end.
    pub mode: &'static str,
    /// terminated, killed, would-end, gone, pid-reused, not-permitted, failed.
    pub outcome: &'static str,
}

/// A gauge holding a float (ratios, seconds).
pub type FloatGauge = Gauge<f64, AtomicU64>;

type LatencyFamily = Family<OutcomeLabels, Histogram, fn() -> Histogram>;

fn latency_histogram() -> Histogram {
    Histogram::new(LATENCY_BUCKETS)
}

/// The families, and the registry that encodes them.
#[derive(Debug)]
pub struct Families {
    /// Everything below, for encoding.
    pub registry: Registry,
    /// Prepared claims by kind.
    pub claims: Family<KindLabels, Gauge>,
    /// MIG slices by GPU, profile and state.
    pub mig_slices: Family<SliceLabels, Gauge>,
    /// MPS control daemons by state.
    pub mps_daemons: Family<StateLabels, Gauge>,
    /// Whole GPUs in the inventory.
    pub gpus: Gauge,
    /// Problems an operator should act on.
    pub problems: Gauge,
    /// Unhealthy devices, 1 each.
    pub unhealthy: Family<UnhealthyLabels, Gauge>,
    /// Always 1, labelled with the version and backend.
    pub build_info: Family<BuildLabels, Gauge>,
    /// Prepare latency.
    pub prepare_seconds: LatencyFamily,
    /// Unprepare latency.
    pub unprepare_seconds: LatencyFamily,
    /// Failed RPCs.
    pub errors: Family<ErrorLabels, Counter>,
    /// Per-claim GPU use, from the sampler's latest snapshot.
    pub activity: ActivityFamilies,
    /// The right-sizing families (see `super::advice`).
    pub advice: AdviceFamilies,
}

/// The per-claim GPU use families (see `super::activity`).
#[derive(Debug, Default)]
pub struct ActivityFamilies {
    /// Memory used by a claim's processes on a device.
    pub memory_used: Family<ClaimDeviceLabels, Gauge>,
    /// A claim's memory share of a shared device.
    pub memory_share: Family<ClaimDeviceLabels, Gauge>,
    /// SM utilization of a claim's processes, 0..1.
    pub sm_ratio: Family<ClaimDeviceLabels, FloatGauge>,
    /// A claim's processes on a device.
    pub processes: Family<ClaimDeviceLabels, Gauge>,
    /// When a claim was last active.
    pub last_active: Family<ClaimDeviceLabels, Gauge>,
    /// Unclaimed processes per GPU.
    pub unclaimed: Family<GpuLabels, Gauge>,
    /// Memory used by unclaimed processes per GPU.
    pub unclaimed_memory: Family<GpuLabels, Gauge>,
    /// Over-share and unclaimed episodes begun.
    pub episodes: Family<EpisodeLabels, Counter>,
    /// Processes ended or named under `[limits]`.
    pub limit_actions: Family<LimitActionLabels, Counter>,
    /// (claim, device) series left out by the cap.
    pub series_dropped: Gauge,
    /// CPU time of the last sample.
    pub sample_cpu: FloatGauge,
}

impl ActivityFamilies {
    /// Registers every activity family in `registry`.
    fn register(&self, registry: &mut Registry) {
        let claim_gauges = [
            (
                "gpuslice_claim_memory_used_bytes",
                "Memory used by the claim's processes on the device, in bytes",
                &self.memory_used,
            ),
            (
                "gpuslice_claim_memory_share_bytes",
                "The claim's memory share of a shared device (MPS memory share or pinned limit, \
                 the scheduler's consumed capacity, or an equal split), in bytes; absent for a \
                 device the claim holds whole",
                &self.memory_share,
            ),
            (
                "gpuslice_claim_processes",
                "GPU processes of the claim on the device",
                &self.processes,
            ),
            (
                "gpuslice_claim_last_active_timestamp_seconds",
                "Unix time of the last sample that found the claim active; absent while the \
                 claim was never active since it was prepared",
                &self.last_active,
            ),
        ];
        for (name, help, family) in claim_gauges {
            registry.register(name, help, Family::clone(family));
        }
        registry.register(
            "gpuslice_claim_sm_utilization_ratio",
            "SM utilization of the claim's processes on the device, 0 to 1 of the GPU, where \
             the driver samples it per process (not on MIG slices)",
            Family::clone(&self.sm_ratio),
        );
        registry.register(
            "gpuslice_unclaimed_processes",
            "Processes on a GPU gpuslice owns that map to no claim holding their device; \
             absent for a GPU without any",
            Family::clone(&self.unclaimed),
        );
        registry.register(
            "gpuslice_unclaimed_memory_used_bytes",
            "Memory used by the unclaimed processes of a GPU, in bytes",
            Family::clone(&self.unclaimed_memory),
        );
        registry.register(
            "gpuslice_activity_episodes",
            "Over-share episodes (an MPS or time-sliced claim using more memory than its \
             share) and unclaimed-process episodes begun since gpusliced started",
            Family::clone(&self.episodes),
        );
        registry.register(
            "gpuslice_limit_actions",
            "Processes ended (end) or named (dry-run) under [limits] since gpusliced started, \
             by condition (overshare, unclaimed), mode and outcome (terminated, killed, \
             would-end, gone, pid-reused, not-permitted, failed)",
            Family::clone(&self.limit_actions),
        );
        registry.register(
            "gpuslice_activity_series_dropped",
            "Per-claim (claim, device) series left out of this exposition because there are \
             more than [activity] max_claim_series",
            self.series_dropped.clone(),
        );
        registry.register(
            "gpuslice_activity_sample_cpu_seconds",
            "CPU time the last activity sample took, in seconds",
            self.sample_cpu.clone(),
        );
    }
}

impl Default for Families {
    fn default() -> Self {
        let mut registry = Registry::default();
        let claims = Family::default();
        registry.register(
            "gpuslice_claims",
            "Prepared claims by how they share their devices (exclusive, mig, mps, timeslicing)",
            Family::clone(&claims),
        );
        let mig_slices = Family::default();
        registry.register(
            "gpuslice_mig_slices",
            "MIG slices of GPUs in MIG mode by parent GPU, profile and state: held by a claim, \
             free (offered and not made yet; placements overlap in partitionable mode), \
             made_ahead (made from the layout, idle) or foreign (not made by gpusliced)",
            Family::clone(&mig_slices),
        );
        let mps_daemons = Family::default();
        registry.register(
            "gpuslice_mps_daemons",
            "MPS control daemons by state",
            Family::clone(&mps_daemons),
        );
        let gpus = Gauge::default();
        registry.register("gpuslice_gpus", "Whole GPUs in the inventory", gpus.clone());
        let problems = Gauge::default();
        registry.register(
            "gpuslice_problems",
            "Problems an operator should act on, as gpuslicectl status lists them",
            problems.clone(),
        );
        let unhealthy = Family::default();
        registry.register(
            "gpuslice_device_unhealthy",
            "1 for each unhealthy device (a whole GPU, a MIG slice or a GPU the scan could \
             not read), by cause (xid, ecc, gpu_lost); absent for a healthy device",
            Family::clone(&unhealthy),
        );
        let build_info = Family::default();
        registry.register(
            "gpuslice_build_info",
            "Always 1, labelled with the gpusliced version and the GPU backend",
            Family::clone(&build_info),
        );
        let prepare_seconds: LatencyFamily = Family::new_with_constructor(latency_histogram);
        registry.register(
            "gpuslice_prepare_duration_seconds",
            "Time from a Prepare request to its response, by outcome \
             (prepared, already_prepared, error)",
            prepare_seconds.clone(),
        );
        let unprepare_seconds: LatencyFamily = Family::new_with_constructor(latency_histogram);
        registry.register(
            "gpuslice_unprepare_duration_seconds",
            "Time from an Unprepare request to its response, by outcome \
             (unprepared, not_prepared, error)",
            unprepare_seconds.clone(),
        );
        let errors = Family::default();
        registry.register(
            "gpuslice_errors",
            "RPCs answered with an error, by method and gRPC status code",
            Family::clone(&errors),
        );
        let activity = ActivityFamilies::default();
        activity.register(&mut registry);
        let advice = AdviceFamilies::default();
        advice.register(&mut registry);
        Self {
            registry,
            activity,
            advice,
            claims,
            mig_slices,
            mps_daemons,
            gpus,
            problems,
            unhealthy,
            build_info,
            prepare_seconds,
            unprepare_seconds,
            errors,
        }
    }
}
