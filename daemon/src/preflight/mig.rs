//! `[[mig.gpu]]` against the simulated GPUs: each entry selects a GPU the
//! node has, and each layout fits an empty GPU of that model, placed by the
//! same planner start-up uses (`inventory::plan_offer`). Pure: the models
//! come from the config, the simulated node lives in memory only.

use super::Problem;
use crate::config::{Config, MigOffering};
use crate::gpu::sim::SimBackend;
use crate::gpu::{GpuBackend, MigSupport};
use crate::inventory::{gpu_device_name, plan_offer};
use crate::mig::Ownership;

/// The problems of `[mig]` on the simulated node `config` describes.
pub(super) fn check_sim(config: &Config) -> Vec<Problem> {
    let sim = &config.backend.sim;
    let models = sim.models();
    let node = SimBackend::new(models.clone(), &sim.seed);
    let gpus: Vec<_> = (0u32..)
        .zip(&models)
        .filter_map(|(index, model)| Some((node.device_info(index).ok()?, *model)))
        .collect();
    let mut problems = Vec::new();
    for (i, entry) in config.mig.gpu.iter().enumerate() {
        let selects = |info: &crate::gpu::GpuInfo| {
            entry.index == Some(info.index) || entry.uuid.as_deref() == Some(info.uuid.as_str())
        };
        let named = entry.index.is_some() || entry.uuid.is_some();
        if named && !gpus.iter().any(|(info, _)| selects(info)) {
            problems.push(Problem {
                key: "mig.gpu",
                text: format!(
                    "entry {i} selects {}, which the simulated node does not have (its GPUs: \
                     indexes 0 to {}, [backend.sim] gpus); fix the index or uuid, or remove \
                     the entry",
                    entry.index.map_or_else(
                        || format!("uuid {}", entry.uuid.as_deref().unwrap_or_default()),
                        |index| format!("index {index}"),
                    ),
                    gpus.len().saturating_sub(1)
                ),
            });
        }
    }
    if config.mig.advertise == Some(MigOffering::Partitionable) {
        return problems;
    }
    for (info, model) in &gpus {
        let Some(entry) = config.mig.for_gpu(info.index, &info.uuid) else {
            continue;
        };
        if info.mig == MigSupport::NotSupported {
            problems.push(Problem {
                key: "mig.gpu",
                text: format!(
                    "{} is an {} ({model}), which has no MIG: remove it from [[mig.gpu]] and \
                     share it with MPS or time-slicing instead",
                    gpu_device_name(info.index),
                    info.product_name
                ),
            });
            continue;
        }
        let Ok(profiles) = node.mig_profiles(info.index) else {
            continue;
        };
        let (_, missing) = plan_offer(&profiles, &[], &|_| Ownership::Foreign, &entry.layout);
        problems.extend(missing.into_iter().map(|text| Problem {
            key: "mig.gpu.layout",
            text: format!("{} ({model}): {text}", gpu_device_name(info.index)),
        }));
    }
    problems
}
