//! SIGHUP: the config read again (its `[mig]` section takes effect), GPUs
//! and driver files rescanned, MIG layouts applied, CDI specs repaired.

use std::path::Path;
use std::sync::Arc;

use super::start::discover;
use crate::claims::Engine;
use crate::claims::mig_offering::OfferingSwitch;
use crate::config::Config;
use crate::systemd;

/// SIGHUP: read the config again (its `[mig]` section takes effect; other
/// changes need a restart and are logged), rescan GPUs and driver files,
/// apply MIG layouts, repair CDI specs. Returns the config now in force.
pub(super) async fn reload(
    config: Arc<Config>,
    path: Option<&Path>,
    engine: &Arc<Engine>,
    offerings: &Arc<OfferingSwitch>,
) -> Arc<Config> {
    systemd::reloading();
    let config = match path.map(Config::load) {
        Some(Ok(new)) => Arc::new(adopt_reloaded(&config, new)),
        Some(Err(err)) => {
            tracing::error!(error = %err, "config not reloaded; keeping the one in force");
            config
        }
        None => config,
    };
    let (in_force, engine2, offerings) = (config.clone(), engine.clone(), offerings.clone());
    let result = tokio::task::spawn_blocking(move || {
        let before = engine2.generation();
        offerings
            .apply_config(&engine2, in_force.mig.clone())
            .map_err(|e| e.to_string())?;
        let inventory = engine2.inventory();
        let driver = discover(&in_force, &inventory);
        engine2.set_driver_files(driver);
        let changed = engine2.generation() != before;
        engine2
            .refresh()
            .map(|report| (changed, report))
            .map_err(|e| e.to_string())
    })
    .await;
    match result {
        Ok(Ok((changed, report))) => {
            tracing::info!(inventory_changed = changed, ?report, "reloaded");
        }
        Ok(Err(err)) => tracing::error!(error = %err, "reload failed; keeping the previous state"),
        Err(err) => tracing::error!(error = %err, "reload task failed"),
    }
    config
}

/// The config in force after a reload: the new `[mig]`, everything else as
/// it was (sockets, folders and the backend are fixed for the process's life).
fn adopt_reloaded(current: &Config, new: Config) -> Config {
    let mut next = current.clone();
    next.mig = new.mig.clone();
    let mut fixed = new;
    fixed.mig = current.mig.clone();
    if fixed != *current {
        tracing::warn!("config changes outside [mig] take effect at the next restart");
    }
    next
}
