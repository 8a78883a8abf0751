//! Prometheus metrics: what gpusliced counts, and the two optional ways it
//! exports them (both off by default, `[metrics]` in the config).
//!
//! Reading order: [`families`] (every name, HELP text, label set and bucket),
//! [`gauges`] (a usage snapshot → gauges, pure), [`activity`] (the
//! sampler's latest activity snapshot → per-claim GPU use, pure), [`advice`]
//! (the node's right-sizing advice → its families, pure), [`exposition`] (OpenMetrics
//! vs the Prometheus 0.0.4 text format, pure), [`http`] (the loopback
//! listener), [`textfile`] (the node_exporter file), [`exporters`] (starting
//! and stopping them for `run`).
//!
//! Two sources, no second copy of the engine's state:
//! - gauges are computed at scrape or write time from [`Engine::usage`]
//!   (through [`UsageSource`]), under one lock so two scrapes never interleave
//!   their updates;
//! - the per-claim GPU use is computed at the same moment from the latest
//!   [`ActivitySnapshot`](crate::activity::ActivitySnapshot) the sampler
//!   published ([`ActivityHandle`]), never waiting for a sample;
//! - event counters and histograms are fed by the API layer
//!   (`api::observe`), which sees every RPC's status code and latency.
//!
//! Metrics are always counted (a few atomic adds per RPC); only exporting
//! is optional.

pub mod activity;
pub mod advice;
pub mod exporters;
pub mod exposition;
pub mod families;
pub mod gauges;
pub mod http;
pub mod textfile;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

pub use activity::DEFAULT_MAX_CLAIM_SERIES;
pub use exporters::Exporters;
pub use exposition::Format;
use families::{BuildLabels, ErrorLabels, Families, OutcomeLabels};
pub use families::{DEFAULT_DRIVER_NAME, DraNames};

use crate::activity::{ActivityHandle, ActivitySnapshot};
use crate::advice::keeper::SharedHistory;
use crate::advice::view::{AdviceSettings, NodeAdvice};
use crate::claims::{Engine, NodeUsage};
use crate::limits::LimitsBoard;

/// Where the gauges come from: the engine, or a fixed snapshot in tests.
pub trait UsageSource: Send + Sync + std::fmt::Debug + 'static {
    /// A snapshot taken now; may block (hardware calls, file reads).
    fn usage(&self) -> NodeUsage;

    /// The sampler's `latest` snapshot brought up to the claims held now
    /// (a claim unprepared since the sample is left out); as it is by
    /// default.
    fn activity_now(&self, latest: &ActivitySnapshot) -> ActivitySnapshot {
        latest.clone()
    }

    /// The node's advice over `history`; none by default.
    fn advice_now(
        &self,
        _history: &SharedHistory,
        _settings: AdviceSettings,
    ) -> Option<NodeAdvice> {
        None
    }
}

impl UsageSource for Engine {
    fn usage(&self) -> NodeUsage {
        Engine::usage(self)
    }

    fn activity_now(&self, latest: &ActivitySnapshot) -> ActivitySnapshot {
        crate::activity::current(latest, self)
    }

    fn advice_now(&self, history: &SharedHistory, settings: AdviceSettings) -> Option<NodeAdvice> {
        Some(crate::advice::view::advice_now(self, history, settings))
    }
}

/// A metrics export that did not happen.
#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    /// The listener's address could not be bound.
    #[error(
        "metrics.listen: cannot listen on {addr}: {error}; choose a free port, and under \
         systemd allow IP sockets with the drop-in \
         /usr/share/doc/gpuslice/examples/metrics-listen.conf"
    )]
    Bind {
        /// The configured address.
        addr: SocketAddr,
        /// The OS error.
        error: std::io::Error,
    },
    /// The textfile could not be written.
    #[error(
        "metrics.textfile: cannot write {path}: {error}; the folder must exist and, under \
         systemd, be writable: add it to ReadWritePaths= in a drop-in like \
         /usr/share/doc/gpuslice/examples/metrics-textfile.conf"
    )]
    Textfile {
        /// The configured file.
        path: PathBuf,
        /// What failed.
        error: gpuslice_cdi::atomic::AtomicError,
    },
    /// The encoder failed.
    #[error("cannot encode the metrics: {0}")]
    Encode(std::fmt::Error),
    /// The snapshot task panicked.
    #[error("metrics snapshot task: {0}")]
    Task(tokio::task::JoinError),
}

/// What a successful Prepare or Unprepare did; the API marks its responses
/// with it so the latency histograms tell fsync-bound work from retries. Its
/// text is the label value: "prepared", "already_prepared", "unprepared",
/// "not_prepared".
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::Display)]
#[derive(strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum Outcome {
    /// A new claim was prepared.
    Prepared,
    /// The claim was prepared before; nothing (or only a missing spec) was written.
    AlreadyPrepared,
    /// The claim was unprepared.
    Unprepared,
    /// The daemon did not know the claim.
    NotPrepared,
}

/// The registry, its families, and the lock that makes a render atomic.
#[derive(Debug)]
pub struct Metrics {
    families: Families,
    render: Mutex<()>,
    /// Where the sampler publishes (by default: sampling off, nothing seen).
    activity: ActivityHandle,
    /// Where `[limits]` publishes what it did (by default: nothing).
    limits: LimitsBoard,
    /// At most this many (claim, device) series per activity family.
    max_claim_series: usize,
    /// `[advice]` and the tools found; `None`: no advice families filled.
    advice: Option<AdviceSettings>,
    /// The pool and driver of the per-claim and per-GPU DRA labels.
    dra: DraNames,
}

impl Metrics {
    /// Fresh families; `backend` ("nvml", "sim") labels `gpuslice_build_info`.
    pub fn new(backend: &'static str) -> Self {
        let families = Families::default();
        families
            .build_info
            .get_or_create(&BuildLabels {
                version: env!("CARGO_PKG_VERSION"),
                backend,
            })
            .set(1);
        // Every outcome's series exists from the start (count 0), so the
        // first call of a kind is a visible increase, not a new series.
        for (family, outcomes) in [
            (
                &families.prepare_seconds,
                [
                    Outcome::Prepared.into(),
                    Outcome::AlreadyPrepared.into(),
                    "error",
                ],
            ),
            (
                &families.unprepare_seconds,
                [
                    Outcome::Unprepared.into(),
                    Outcome::NotPrepared.into(),
                    "error",
                ],
            ),
        ] {
            for outcome in outcomes {
                drop(family.get_or_create(&OutcomeLabels { outcome }));
            }
        }
        Self {
            families,
            render: Mutex::new(()),
            activity: ActivityHandle::default(),
            limits: LimitsBoard::default(),
            max_claim_series: DEFAULT_MAX_CLAIM_SERIES,
            advice: None,
            dra: DraNames::default(),
        }
    }

    /// The same metrics labelling devices as published in `dra`'s pool.
    #[must_use]
    pub fn with_dra(mut self, dra: DraNames) -> Self {
        self.dra = dra;
        self
    }

    /// The same metrics showing the advice over the history the activity
    /// handle carries.
    #[must_use]
    pub fn with_advice(mut self, settings: AdviceSettings) -> Self {
        self.advice = Some(settings);
        self
    }

    /// The same metrics showing the per-claim GPU use `activity` publishes,
    /// with at most `max_claim_series` (claim, device) series per family.
    #[must_use]
    pub fn with_activity(mut self, activity: ActivityHandle, max_claim_series: usize) -> Self {
        self.activity = activity;
        self.max_claim_series = max_claim_series;
        self
    }

    /// The same metrics counting what `[limits]` publishes on `board`.
    #[must_use]
    pub fn with_limits(mut self, board: LimitsBoard) -> Self {
        self.limits = board;
        self
    }

    /// Records one Prepare (`rpc` "Prepare") or Unprepare call's latency
    /// under `outcome` ("error" when `None`).
    pub fn observe(&self, rpc: &str, outcome: Option<Outcome>, elapsed: Duration) {
        let family = match rpc {
            "Prepare" => &self.families.prepare_seconds,
            "Unprepare" => &self.families.unprepare_seconds,
            _ => return,
        };
        let outcome = outcome.map_or("error", <&str>::from);
        family
            .get_or_create(&OutcomeLabels { outcome })
            .observe(elapsed.as_secs_f64());
    }

    /// Counts one RPC answered with `code` (not OK).
    pub fn count_error(&self, rpc: &'static str, code: tonic::Code) {
        self.families
            .errors
            .get_or_create(&ErrorLabels {
                rpc,
                code: code_name(code),
            })
            .inc();
    }

    /// Sets the gauges from `source`'s usage and the latest activity
    /// snapshot as of the claims `source` holds now (so an unprepared
    /// claim's series go at the next scrape), and encodes everything in
    /// `format`; may block.
    pub fn render(&self, source: &dyn UsageSource, format: Format) -> Result<String, MetricsError> {
        let usage = source.usage();
        let activity_now = source.activity_now(&self.activity.latest());
        let history = self.activity.history();
        let advice_now = self
            .advice
            .zip(history)
            .and_then(|(settings, history)| source.advice_now(history, settings));
        let history_bytes = history.map_or(0, SharedHistory::saved_bytes);
        let _one_at_a_time = self.render.lock().unwrap_or_else(PoisonError::into_inner);
        gauges::apply(&self.families, &usage, &self.dra);
        activity::apply(
            &self.families.activity,
            &activity_now,
            self.max_claim_series,
            &self.dra,
        );
        activity::limit_actions(&self.families.activity, &self.limits.report());
        advice::apply(
            &self.families.advice,
            advice_now.as_ref(),
            history_bytes,
            self.max_claim_series,
            &self.dra,
        );
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.families.registry)
            .map_err(MetricsError::Encode)?;
        Ok(match format {
            Format::OpenMetrics => text,
            Format::Prometheus => exposition::to_prometheus(&text),
        })
    }
}

/// A snapshot from `source` (on the blocking pool), rendered in `format`.
pub async fn scrape(
    source: &std::sync::Arc<dyn UsageSource>,
    metrics: &std::sync::Arc<Metrics>,
    format: Format,
) -> Result<String, MetricsError> {
    let (source, metrics) = (source.clone(), metrics.clone());
    tokio::task::spawn_blocking(move || metrics.render(source.as_ref(), format))
        .await
        .map_err(MetricsError::Task)?
}

/// The canonical name of a gRPC status code, as the gRPC spec writes it.
pub fn code_name(code: tonic::Code) -> &'static str {
    use tonic::Code;
    match code {
        Code::Ok => "OK",
        Code::Cancelled => "CANCELLED",
        Code::Unknown => "UNKNOWN",
        Code::InvalidArgument => "INVALID_ARGUMENT",
        Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
        Code::NotFound => "NOT_FOUND",
        Code::AlreadyExists => "ALREADY_EXISTS",
        Code::PermissionDenied => "PERMISSION_DENIED",
        Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
        Code::FailedPrecondition => "FAILED_PRECONDITION",
        Code::Aborted => "ABORTED",
        Code::OutOfRange => "OUT_OF_RANGE",
        Code::Unimplemented => "UNIMPLEMENTED",
        Code::Internal => "INTERNAL",
        Code::Unavailable => "UNAVAILABLE",
        Code::DataLoss => "DATA_LOSS",
        Code::Unauthenticated => "UNAUTHENTICATED",
    }
}

#[cfg(test)]
mod tests;
