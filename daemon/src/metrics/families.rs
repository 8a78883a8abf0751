//! Every metric family gpusliced exports: names, HELP texts, label sets and
//! histogram buckets, registered in one registry. Names follow the
//! Prometheus conventions: the `gpuslice_` prefix, base units (seconds),
//! `_total` on counters (appended by the encoder: the family is registered
//! as `gpuslice_errors`), `_info` on the build-info gauge.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

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
    /// Always 1, labelled with the version and backend.
    pub build_info: Family<BuildLabels, Gauge>,
    /// Prepare latency.
    pub prepare_seconds: LatencyFamily,
    /// Unprepare latency.
    pub unprepare_seconds: LatencyFamily,
    /// Failed RPCs.
    pub errors: Family<ErrorLabels, Counter>,
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
        Self {
            registry,
            claims,
            mig_slices,
            mps_daemons,
            gpus,
            problems,
            build_info,
            prepare_seconds,
            unprepare_seconds,
            errors,
        }
    }
}
