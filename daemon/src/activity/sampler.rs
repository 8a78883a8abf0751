//! One sample of the node: for each GPU of the inventory its processes,
//! their utilization since the last sample, and the memory of each device a
//! claim holds (read through [`NodeReads`], never the backend itself); each
//! process's environment through `/proc`; then the attribution, the
//! episodes (logged as they open and close), the usage summaries and the
//! last active times (persisted); then the sample is handed to each
//! subscriber ([`super::publish`]: the usage history, `[limits]`) and
//! returned as the snapshot.
//!
//! [`Sampler::sample_once`] takes one sample and returns it, without a
//! timer (the loop is in `task`, benchmarks call it directly). A backend
//! error on one GPU is logged at debug and that GPU left out of the sample
//! (a sample every 5 s must not flood the journal). The sample's own CPU
//! time is measured on the calling thread (`CLOCK_THREAD_CPUTIME_ID`).
//!
//! Utilization is read for the window since the GPU's last read, and at
//! least one interval long: a fresh sample taken soon after the last one
//! (asked for through the handle) reads the last interval's utilization
//! again rather than an instant the driver may not have sampled in.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::attribute::{Attribution, GpuSample, Inputs, ProcView, attribute};
use super::episodes::{Episodes, Unread};
use super::held::{HeldClaim, held_claims};
use super::persist::{Persister, load};
use super::procfs::{ProcFs, ProcInfo};
use super::publish::{Sample, SampleSubscriber};
use super::series::series_dropped;
use super::snapshot::{ActivitySnapshot, WarningKind};
use super::summary::{Summaries, SummarySettings};
use super::warnings::conditions;
use crate::claims::NodeReads;
use crate::gpu::{GpuError, UsageReads};
use crate::inventory::GpuDevice;

/// How the sampler works.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SamplerSettings {
    /// Time between two samples (also the shortest utilization window).
    pub interval: Duration,
    /// Per-claim series the metrics show at most.
    pub max_claim_series: usize,
    /// The root `/proc` is under: `/` on a node.
    pub proc_root: PathBuf,
    /// Where `activity.json` is kept; `None`: nowhere.
    pub state_dir: Option<PathBuf>,
    /// Time without activity after which a claim's summary calls it idle.
    pub idle_after: Duration,
    /// Time the summaries' memory peak and SM mean and peak cover.
    pub summary_window: Duration,
}

/// The sampler's state between samples.
#[derive(Debug)]
pub struct Sampler {
    node: Arc<dyn NodeReads>,
    settings: SamplerSettings,
    procfs: ProcFs,
    episodes: Episodes,
    last_active: BTreeMap<String, i64>,
    persister: Option<Persister>,
    /// Per GPU index, when its utilization was last read (µs since epoch).
    read_at_us: HashMap<u32, u64>,
    /// Each claim and device's summary window, idle states and conditions.
    summaries: Summaries,
    /// Who takes each sample, in order.
    subscribers: Vec<Box<dyn SampleSubscriber>>,
}

impl Sampler {
    /// A sampler of `node`'s GPUs and claims, with the last active times
    /// found in `settings.state_dir`.
    pub fn new(node: Arc<dyn NodeReads>, settings: SamplerSettings) -> Self {
        let on_disk = settings.state_dir.as_deref().map(load).unwrap_or_default();
        Self {
            node,
            procfs: ProcFs::new(settings.proc_root.clone()),
            episodes: Episodes::restore(on_disk.episodes.clone()),
            last_active: on_disk.last_active.clone(),
            persister: settings
                .state_dir
                .as_deref()
                .map(|dir| Persister::new(dir, on_disk)),
            read_at_us: HashMap::new(),
            summaries: Summaries::new(SummarySettings {
                idle_after_s: settings.idle_after.as_secs(),
                window_s: settings.summary_window.as_secs(),
                interval_s: settings.interval.as_secs(),
            }),
            subscribers: Vec::new(),
            settings,
        }
    }

    /// The same sampler, handing each sample to `subscriber` after the
    /// ones before it.
    #[must_use]
    pub fn with_subscriber(mut self, subscriber: Box<dyn SampleSubscriber>) -> Self {
        self.subscribers.push(subscriber);
        self
    }

    /// Takes one sample now.
    pub fn sample_once(&mut self) -> ActivitySnapshot {
        let since_epoch = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        self.sample_at(since_epoch)
    }

    /// Takes one sample, dated `now` (time since the Unix epoch).
    pub fn sample_at(&mut self, now: Duration) -> ActivitySnapshot {
        let cpu_before = thread_cpu_us();
        let now_s = i64::try_from(now.as_secs()).unwrap_or(i64::MAX);
        let now_us = u64::try_from(now.as_micros()).unwrap_or(u64::MAX);
        let inventory = self.node.inventory();
        let held = held_claims(&self.node.claims(), &inventory);
        let mut unread = Unread {
            held: held.iter().map(|c| c.uid.clone()).collect(),
            ..Unread::default()
        };
        let gpus: Vec<GpuSample> = inventory
            .gpus
            .iter()
            .filter_map(|gpu| {
                let since = self.since_us(gpu.info.index, now_us);
                let Some(sample) = read_gpu(self.node.usage_reads(), gpu, &held, since) else {
                    unread.gpus.insert(gpu.name.clone());
                    return None;
                };
                self.read_at_us.insert(gpu.info.index, now_us);
                Some(sample)
            })
            .collect();
        let own: HashSet<u32> = self.node.own_daemon_pids().into_iter().collect();
        let procs = self.inspect(&gpus, &own);
        let mut attribution = attribute(&Inputs {
            now: now_s,
            claims: &held,
            gpus: &gpus,
            procs: &procs,
            last_active: &self.last_active,
        });
        self.last_active = attribution
            .claims
            .iter()
            .filter_map(|c| Some((c.uid.clone(), c.last_active?)))
            .collect();
        self.episodes(now_s, &attribution, &unread);
        let conditions_generation = self.summaries.observe(
            now_s,
            &mut attribution.claims,
            &self.episodes.open(),
            &unread.gpus,
        );
        self.persist(now_s, false);
        let episodes = self.episodes.saved();
        let sample = Sample {
            now: now_s,
            attribution: &attribution,
            procs: &procs,
            episodes: &episodes,
            claims: &held,
            unread: &unread.gpus,
        };
        for subscriber in &mut self.subscribers {
            subscriber.on_sample(&sample);
        }
        let cpu_after = thread_cpu_us();
        ActivitySnapshot {
            enabled: true,
            interval_ms: u64::try_from(self.settings.interval.as_millis()).unwrap_or(u64::MAX),
            sampled_at_ms: i64::try_from(now.as_millis()).unwrap_or(i64::MAX),
            sample_cpu_us: cpu_after.saturating_sub(cpu_before),
            series_dropped: series_dropped(&attribution.claims, self.settings.max_claim_series),
            claims: attribution.claims,
            unclaimed: attribution.unclaimed,
            warnings: self.episodes.open(),
            episodes: self.episodes.counts(),
            conditions_generation,
        }
    }

    /// Writes the last active times if they changed, and lets each
    /// subscriber write what it keeps (at shutdown).
    pub fn flush(&mut self) {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        self.persist(now, true);
        for subscriber in &mut self.subscribers {
            subscriber.flush(now);
        }
    }

    /// Where GPU `index`'s utilization window starts: its last read, or
    /// one interval back if that is earlier (module doc).
    fn since_us(&self, index: u32, now_us: u64) -> u64 {
        let window = u64::try_from(self.settings.interval.as_micros()).unwrap_or(u64::MAX);
        let one_interval = now_us.saturating_sub(window);
        self.read_at_us
            .get(&index)
            .map_or(one_interval, |&read| read.min(one_interval))
    }

    /// Each listed pid's `/proc` view, marked gpuslice's own when it is one
    /// of `own` (the daemons gpusliced keeps) or their child; forgets pids
    /// no longer listed.
    fn inspect(&mut self, gpus: &[GpuSample], own: &HashSet<u32>) -> HashMap<u32, ProcView> {
        let pids: HashSet<u32> = gpus
            .iter()
            .flat_map(|g| g.processes.iter().map(|p| p.pid))
            .collect();
        let views = pids
            .iter()
            .map(|&pid| {
                let view = (self.procfs.inspect(pid))
                    .map(|info| ProcInfo {
                        own_daemon: is_own(own, pid, &info),
                        ..info
                    })
                    .map_err(|err| {
                        tracing::debug!(error = %err, "GPU process not inspected");
                        err.unclaimed_reason()
                    });
                (pid, view)
            })
            .collect();
        self.procfs.retain(&pids);
        views
    }

    fn episodes(&mut self, now: i64, attribution: &Attribution, unread: &Unread) {
        let changes = self
            .episodes
            .observe_partial(now, conditions(attribution), unread);
        for w in &changes.opened {
            match w.kind {
                WarningKind::OverShare => {
                    tracing::warn!(claim_uid = %w.claim_uid, device = %w.device, kind = <&str>::from(w.kind), "{}", w.message);
                }
                WarningKind::Unclaimed => {
                    tracing::warn!(pid = w.pid, device = %w.device, kind = <&str>::from(w.kind), "{}", w.message);
                }
            }
        }
        for w in &changes.closed {
            match w.kind {
                WarningKind::OverShare => {
                    tracing::info!(claim_uid = %w.claim_uid, device = %w.device, since = w.since, "claim {} is back within its memory share on {}", w.claim_uid, w.device);
                }
                WarningKind::Unclaimed => {
                    tracing::info!(pid = w.pid, device = %w.device, since = w.since, "process {} no longer runs outside a claim on {}", w.pid, w.device);
                }
            }
        }
    }

    fn persist(&mut self, now: i64, force: bool) {
        if let Some(persister) = &mut self.persister
            && let Err(err) = persister.save(now, &self.last_active, &self.episodes.saved(), force)
        {
            tracing::warn!(error = %err, "claim activity times not saved; `claims --idle` may count from the prepare after a restart");
        }
    }
}

/// What the backend says about `gpu`; `None` when its processes cannot be listed.
fn read_gpu(
    backend: UsageReads<'_>,
    gpu: &GpuDevice,
    held: &[HeldClaim],
    since_us: u64,
) -> Option<GpuSample> {
    let index = gpu.info.index;
    let processes = backend
        .processes(index)
        .map_err(|err| tracing::debug!(gpu = %gpu.name, error = %err, "GPU processes not read; GPU left out of this sample"))
        .ok()?;
    let utilization = match backend.process_utilization(index, since_us) {
        Ok(samples) => Some(samples),
        Err(GpuError::NotSupported { .. }) => None,
        Err(err) => {
            tracing::debug!(gpu = %gpu.name, error = %err, "per-process utilization not read");
            None
        }
    };
    let instances: BTreeSet<Option<u32>> = held
        .iter()
        .flat_map(|c| &c.devices)
        .filter(|d| d.gpu_index == Some(index))
        .map(|d| d.gpu_instance)
        .collect();
    let memory = instances
        .into_iter()
        .filter_map(|gi| match backend.memory_use(index, gi) {
            Ok(memory) => Some((gi, memory)),
            Err(err) => {
                tracing::debug!(gpu = %gpu.name, gpu_instance = ?gi, error = %err, "memory use not read");
                None
            }
        })
        .collect();
    Some(GpuSample {
        index,
        name: gpu.name.clone(),
        processes,
        utilization,
        memory,
    })
}

/// CPU time of the calling thread so far, in microseconds, from
/// `CLOCK_THREAD_CPUTIME_ID` (the scheduler's exact runtime; the kernel's
/// `getrusage` figures advance in whole ticks, 4 ms here, too coarse for a
/// sample of a few milliseconds).
pub fn thread_cpu_us() -> u64 {
    use nix::time::{ClockId, clock_gettime};
    clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID)
        .ok()
        .and_then(|t| {
            let secs = u64::try_from(t.tv_sec()).ok()?;
            let nanos = u64::try_from(t.tv_nsec()).ok()?;
            Some(secs * 1_000_000 + nanos / 1_000)
        })
        .unwrap_or(0)
}

/// Whether `pid` is one of `own` (the daemons gpusliced keeps) or a child
/// of one (a server such a daemon starts).
fn is_own(own: &HashSet<u32>, pid: u32, info: &ProcInfo) -> bool {
    own.contains(&pid) || own.contains(&info.parent)
}

#[cfg(test)]
mod tests;
